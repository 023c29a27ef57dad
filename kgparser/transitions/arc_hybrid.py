"""The arc-hybrid system (Kuhlmann, Gómez-Rodríguez & Satta 2011) and its
dynamic oracle (Goldberg & Nivre 2013, "Training deterministic parsers with
non-deterministic oracles", TACL, section 3 and table 1).

Configuration: a stack and a buffer ``b..n`` (words are shifted in order, so
the buffer is one index).

* ``shift``: push ``b0`` (a word);
* ``left``:  ``b0 -> s0``, pop ``s0`` (``s0`` is not the root);
* ``right``: ``s1 -> s0``, pop ``s0``.

Where the root goes (option ``root``):

* ``"first"`` (default; Goldberg & Nivre 2013): the stack starts as ``[0]``;
  ``left`` needs a word in the buffer; final when the buffer is empty and only
  the root is left.
* ``"end"`` (as in the BIST parser of Kiperwasser & Goldberg 2016 and in
  UUParser, after Ballesteros & Nivre 2013, "Going to the roots of dependency
  parsing"): the stack starts empty and the root is the last buffer item,
  after word ``n`` (still numbered 0 in ``heads``); it is never shifted, and
  ``left`` with the root as ``b0`` attaches ``s0`` to the root.  Final when the
  stack is empty and only the root is left, so every word gets its head
  explicitly and the root's dependents are decided last.  Several words may
  take the root as head, as in the paper's system; UUParser's extra rule that
  allows this only for the last stack word would make some gold arcs
  unreachable in ways the arc-decomposed costs do not count, so it is left to
  the decoder's single-root repair.

Both variants build exactly the projective trees (with the root moved to the
end, an arc from the root crosses another arc exactly when it did with the
root first).  The oracle is arc-decomposable, so its costs are exact for
projective gold trees; :class:`ArcHybridDynamicOracle` reads the root's place
as position ``n + 1`` when it is at the end.  For a non-projective gold tree
the same formulas count the gold arcs an action makes unreachable one by one;
as these arcs are no longer jointly reachable, the numbers are not the true
costs and a state may have no zero-cost action (trainers take the cheapest
actions as correct).
"""
from __future__ import annotations

from typing import Sequence

from . import register
from .base import NO_HEAD, ROOT, RootPositionOption, StackBufferState, StackBufferSystem, stack_top
from .trees import children, has_all_dependents, is_projective

SHIFT, LEFT, RIGHT = "shift", "left", "right"


@register("arc-hybrid")
class ArcHybrid(RootPositionOption, StackBufferSystem):
    actions = (SHIFT, LEFT, RIGHT)
    arc_actions = frozenset({LEFT, RIGHT})
    feature_names = ("s0", "s1", "s2", "b0")

    def initial_state(self, n: int) -> StackBufferState:
        state = StackBufferState(n)
        if not self.root_first:
            state.stack = []
        return state

    def legal_actions(self, state: StackBufferState) -> list[str]:
        stack = state.stack
        word_in_buffer = state.b < len(state.heads)
        legal = [SHIFT] if word_in_buffer else []
        if stack and stack[-1] != ROOT and (word_in_buffer or not self.root_first):
            legal.append(LEFT)
        if len(stack) > 1:
            legal.append(RIGHT)
        return legal

    def apply(self, state: StackBufferState, action: str, label: str | None = None) -> None:
        if action == SHIFT:
            state.stack.append(state.b)
            state.b += 1
        elif action == LEFT:
            state.add_arc(self.buffer_front(state), state.stack.pop(), label)
        elif action == RIGHT:
            dep = state.stack.pop()
            state.add_arc(state.stack[-1], dep, label)
        else:
            raise ValueError(f"arc-hybrid has no action {action!r}")

    def is_final(self, state: StackBufferState) -> bool:
        return state.b >= len(state.heads) and len(state.stack) == (1 if self.root_first else 0)

    def arc_of(self, state: StackBufferState, action: str) -> tuple[int, int]:
        if action == LEFT:
            return self.buffer_front(state), state.stack[-1]
        if action == RIGHT:
            return state.stack[-2], state.stack[-1]
        raise ValueError(f"{action!r} builds no arc")

    def features(self, state: StackBufferState) -> list[int]:
        return [*stack_top(state.stack, 3), self.buffer_front(state)]

    def can_build(self, gold_heads: Sequence[int]) -> bool:
        return is_projective(gold_heads)

    def static_oracle(self, gold_heads: Sequence[int]) -> ArcHybridStaticOracle:
        return ArcHybridStaticOracle(self, gold_heads)

    def dynamic_oracle(self, gold_heads: Sequence[int]) -> ArcHybridDynamicOracle:
        return ArcHybridDynamicOracle(gold_heads, root_first=self.root_first)


class ArcHybridStaticOracle:
    """Reduce a word as soon as it has all its dependents (left before right)."""

    def __init__(self, system: ArcHybrid, gold_heads: Sequence[int]):
        self.system = system
        self.gold = list(gold_heads)
        self.kids = children(gold_heads)

    def next_action(self, state: StackBufferState) -> str:
        stack = state.stack
        if stack and stack[-1] != ROOT and has_all_dependents(state.heads, self.kids, stack[-1]):
            head = self.gold[stack[-1]]
            if head == self.system.buffer_front(state):
                return LEFT
            if len(stack) > 1 and head == stack[-2]:
                return RIGHT
        return SHIFT


class ArcHybridDynamicOracle:
    """Costs of Goldberg & Nivre (2013), table 1: the number of gold arcs each
    action makes unreachable.  A gold head of ``-1`` means "don't care": such
    words are left out of the count (used for arc constraints).  A word left of
    ``b`` is on the stack exactly when it has no head yet, which makes every
    test O(1) plus the word's degree.  ``at[d]`` is the place of ``d``'s gold
    head in the sentence: the head itself, or ``n + 1`` for the root at the end."""

    def __init__(self, gold_heads: Sequence[int], root_first: bool = True):
        self.gold = list(gold_heads)
        self.kids = children(gold_heads)
        self.root_first = root_first
        end = len(self.gold)
        self.at = self.gold if root_first else [end if h == ROOT else h for h in self.gold]

    def _deps_in_buffer(self, word: int, b: int) -> int:
        return sum(1 for k in self.kids[word] if k >= b)

    def costs(self, state: StackBufferState) -> dict[str, int]:
        at, stack, b, heads = self.at, state.stack, state.b, state.heads
        s0 = stack[-1] if stack else NO_HEAD
        costs = {}
        if b < len(heads):
            # shift: b0 loses a head on the stack below s0 and dependents on the stack
            h = at[b]
            lost = 1 if h != NO_HEAD and h != s0 and h < b and heads[h] == NO_HEAD else 0
            lost += sum(1 for k in self.kids[b] if k < b and heads[k] == NO_HEAD)
            costs[SHIFT] = lost
        if stack and s0 != ROOT and (b < len(heads) or not self.root_first):
            # left: s0 loses a head in s1 or in the buffer after b0 (the root at the end
            # included), and its buffer dependents
            h = at[s0]
            lost = 1 if h > b or (len(stack) > 1 and h == stack[-2]) else 0
            costs[LEFT] = lost + self._deps_in_buffer(s0, b)
        if len(stack) > 1:
            # right: s0 loses a head in the buffer (the root at the end included), and its
            # buffer dependents
            lost = 1 if at[s0] >= b else 0
            costs[RIGHT] = lost + self._deps_in_buffer(s0, b)
        return costs
