"""Which transition the trainer follows, given the model's scores.

Error exploration (Goldberg & Nivre 2013, "Training deterministic parsers with
non-deterministic oracles", section 4; Kiperwasser & Goldberg 2016, section 3.3
"aggressive exploration"): follow the best correct transition when it beats
the best wrong one by more than the margin; otherwise follow the wrong one
with probability ``p_agg``, and always when it scores higher.
"""
from __future__ import annotations

import random


class ExplorationPolicy:
    def __init__(self, margin: float, p_agg: float):
        self.margin = margin
        self.p_agg = p_agg

    def choose(self, correct: int, correct_score: float, wrong: int, wrong_score: float,
               rng: random.Random) -> int:
        """Column to follow; ``wrong`` is -1 when every legal transition is correct."""
        if wrong < 0:
            return correct
        if wrong_score > correct_score:
            return wrong
        if correct_score - wrong_score > self.margin:
            return correct
        return wrong if rng.random() < self.p_agg else correct
