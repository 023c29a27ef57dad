"""The arc-hybrid system (Kuhlmann, Gómez-Rodríguez & Satta 2011) and its
dynamic oracle (Goldberg & Nivre 2013, "Training deterministic parsers with
non-deterministic oracles", TACL, section 3 and table 1).

Configuration: a stack with the root at its bottom, and a buffer ``b..n``
(words are shifted in order, so the buffer is one index).

* ``shift``: push ``b0``;
* ``left``:  ``b0 -> s0``, pop ``s0`` (``s0`` is not the root, buffer non-empty);
* ``right``: ``s1 -> s0``, pop ``s0``.

Final when the buffer is empty and only the root is left.  The system builds
exactly the projective trees; the oracle is arc-decomposable, so its costs are
exact for projective gold trees.  For a non-projective gold tree the same
formulas count the gold arcs an action makes unreachable one by one; as these
arcs are no longer jointly reachable, the numbers are not the true costs and
a state may have no zero-cost action (trainers take the cheapest actions as
correct).
"""
from __future__ import annotations

from typing import Sequence

from . import register
from .base import NO_HEAD, ROOT, StackBufferState, StackBufferSystem, stack_top
from .trees import children, is_projective

SHIFT, LEFT, RIGHT = "shift", "left", "right"


@register("arc-hybrid")
class ArcHybrid(StackBufferSystem):
    actions = (SHIFT, LEFT, RIGHT)
    arc_actions = frozenset({LEFT, RIGHT})
    feature_names = ("s0", "s1", "s2", "b0")

    def legal_actions(self, state: StackBufferState) -> list[str]:
        stack = state.stack
        has_buffer = state.b <= len(state.heads) - 1
        legal = []
        if has_buffer:
            legal.append(SHIFT)
            if stack[-1] != ROOT:
                legal.append(LEFT)
        if len(stack) > 1:
            legal.append(RIGHT)
        return legal

    def apply(self, state: StackBufferState, action: str, label: str | None = None) -> None:
        if action == SHIFT:
            state.stack.append(state.b)
            state.b += 1
        elif action == LEFT:
            state.add_arc(state.b, state.stack.pop(), label)
        elif action == RIGHT:
            dep = state.stack.pop()
            state.add_arc(state.stack[-1], dep, label)
        else:
            raise ValueError(f"arc-hybrid has no action {action!r}")

    def arc_of(self, state: StackBufferState, action: str) -> tuple[int, int]:
        if action == LEFT:
            return state.b, state.stack[-1]
        if action == RIGHT:
            return state.stack[-2], state.stack[-1]
        raise ValueError(f"{action!r} builds no arc")

    def features(self, state: StackBufferState) -> list[int]:
        return [*stack_top(state.stack, 3), state.b0()]

    def can_build(self, gold_heads: Sequence[int]) -> bool:
        return is_projective(gold_heads)

    def static_oracle(self, gold_heads: Sequence[int]) -> "ArcHybridStaticOracle":
        return ArcHybridStaticOracle(gold_heads)

    def dynamic_oracle(self, gold_heads: Sequence[int]) -> "ArcHybridDynamicOracle":
        return ArcHybridDynamicOracle(gold_heads)


class ArcHybridStaticOracle:
    """Reduce a word as soon as it has all its dependents (left before right)."""

    def __init__(self, gold_heads: Sequence[int]):
        self.gold = list(gold_heads)
        self.kids = children(gold_heads)

    def _complete(self, state: StackBufferState, word: int) -> bool:
        heads = state.heads
        return all(heads[k] == word for k in self.kids[word])

    def next_action(self, state: StackBufferState) -> str:
        stack = state.stack
        s0 = stack[-1]
        if s0 != ROOT and self._complete(state, s0):
            head = self.gold[s0]
            if state.b < len(self.gold) and head == state.b:
                return LEFT
            if len(stack) > 1 and head == stack[-2]:
                return RIGHT
        return SHIFT


class ArcHybridDynamicOracle:
    """Costs of Goldberg & Nivre (2013), table 1: the number of gold arcs each
    action makes unreachable.  A gold head of ``-1`` means "don't care": such
    words are left out of the count (used for arc constraints).  A word left of ``b`` is on the stack exactly when
    it has no head yet, which makes every test O(1) plus the word's degree."""

    def __init__(self, gold_heads: Sequence[int]):
        self.gold = list(gold_heads)
        self.kids = children(gold_heads)

    def _deps_in_buffer(self, word: int, b: int) -> int:
        return sum(1 for k in self.kids[word] if k >= b)

    def costs(self, state: StackBufferState) -> dict[str, int]:
        gold, stack, b, heads = self.gold, state.stack, state.b, state.heads
        n = len(gold) - 1
        s0 = stack[-1]
        costs = {}
        if b <= n:
            # shift: b0 loses a head on the stack below s0 and dependents on the stack
            h = gold[b]
            lost = 1 if h != NO_HEAD and h != s0 and h < b and heads[h] == NO_HEAD else 0
            lost += sum(1 for k in self.kids[b] if k < b and heads[k] == NO_HEAD)
            costs[SHIFT] = lost
            if s0 != ROOT:
                # left: s0 loses a head in s1 or in the buffer after b0, and its buffer dependents
                h = gold[s0]
                lost = 1 if h > b or (len(stack) > 1 and h == stack[-2]) else 0
                costs[LEFT] = lost + self._deps_in_buffer(s0, b)
        if len(stack) > 1:
            # right: s0 loses a head in the buffer, and its buffer dependents
            lost = 1 if gold[s0] >= b else 0
            costs[RIGHT] = lost + self._deps_in_buffer(s0, b)
        return costs
