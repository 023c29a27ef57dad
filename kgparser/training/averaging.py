"""An exponential moving average of the trainable weights (Polyak & Juditsky
1992, "Acceleration of stochastic approximation by averaging"), the weights a
run evaluates and saves when ``training.ema_decay`` is above 0.

The decay of update ``t`` is ``min(decay, (1 + t) / (10 + t))``, so that the
average follows the weights closely during the first updates instead of
remembering their random initialisation.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

import torch


class WeightAverage:
    """The running average of ``params``; :meth:`swapped_in` puts it in their place."""

    def __init__(self, params: Sequence[torch.nn.Parameter], decay: float):
        self.params = list(params)
        self.decay = decay
        self.updates = 0
        self.averages = [p.detach().clone() for p in self.params]

    def update(self) -> None:
        """Fold the current weights into the average (after each optimizer step)."""
        decay = min(self.decay, (1 + self.updates) / (10 + self.updates))
        with torch.no_grad():
            for average, p in zip(self.averages, self.params):
                average.lerp_(p, 1 - decay)
        self.updates += 1

    @contextmanager
    def swapped_in(self) -> Iterator[list[torch.Tensor]]:
        """Within the block the parameters hold the averages; yields the current
        (trained) weights, which are put back afterwards."""
        current = [p.detach().clone() for p in self.params]
        with torch.no_grad():
            for p, average in zip(self.params, self.averages):
                p.copy_(average)
        try:
            yield current
        finally:
            with torch.no_grad():
                for p, weights in zip(self.params, current):
                    p.copy_(weights)

    def state(self, current: list[torch.Tensor]) -> dict:
        """What ``--resume`` needs besides the averages (saved as the model's weights)."""
        return {"current_weights": current, "updates": self.updates}

    def restore(self, state: dict) -> None:
        """Resume: the parameters hold the saved averages; put the trained weights back."""
        self.averages = [p.detach().clone() for p in self.params]
        with torch.no_grad():
            for p, weights in zip(self.params, state["current_weights"]):
                p.copy_(weights)
        self.updates = state["updates"]
