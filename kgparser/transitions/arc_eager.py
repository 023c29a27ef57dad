"""The arc-eager system (Nivre 2003; Nivre 2008, section 3.2) with a static
oracle and the dynamic oracle of Goldberg & Nivre (2012, "A dynamic oracle for
arc-eager dependency parsing", section 3; 2013 TACL, section 3 and table 1).

Configuration: a stack, a buffer ``b..n`` (words are shifted in order, so
the buffer is one index) and the arcs.  The words left of ``b`` are either on
the stack or reduced; a word without a head can only leave the stack through
``left``, so every headless word left of ``b`` is on the stack.

* ``shift``:  push ``b0``;
* ``left``:   ``b0 -> s0``, pop ``s0`` (``s0`` has no head and is not the root);
* ``right``:  ``s0 -> b0``, push ``b0``;
* ``reduce``: pop ``s0`` (``s0`` has a head).

Where the root goes (option ``root``):

* ``"first"`` (default; Nivre 2008): the stack starts as ``[0]``, the buffer
  is ``1..n``, and the state is final as soon as the buffer is empty; the words
  left headless on the stack are dependents of the root (the contract of
  ``docs/transition-contract.md``).  ``shift`` is legal in every non-final state, so ``reduce``
  never needs to pop a headless word (the common "unshift"/headless-reduce
  refinement exists for systems that must empty the stack; this one need not).
* ``"end"`` (Ballesteros & Nivre 2013; Nivre, Goldberg & McDonald 2014,
  "Constrained arc-eager dependency parsing", section 2): the stack starts
  empty and the root is the last buffer item, after word ``n`` (it is still
  numbered 0 in ``heads``).  ``shift`` and ``right`` need ``b0`` to be a word,
  ``left`` may attach ``s0`` to the root; the state is final when the stack is
  empty and only the root is left.  In a non-final state either ``b0`` is a
  word (``shift`` is legal) or ``s0`` can be attached to the root (``left``)
  or reduced, so no refinement is needed here either.  Every word gets its
  head explicitly.

Both variants build exactly the projective trees.  The dynamic oracle is
arc-decomposable (Goldberg & Nivre 2012, section 3.3), so for a projective gold
tree the cost of an action is the number of gold arcs it makes unreachable,
which is what :class:`ArcEagerDynamicOracle` counts, in O(1) plus the degree of
``s0``/``b0`` in the gold tree.  For a non-projective gold tree the same
formulas count the arcs each action makes unreachable one at a time; as these
arcs are not jointly reachable, the numbers are not the true costs and a state
may have no zero-cost action (the trainer takes the cheapest actions as
correct).

Option ``tie_break`` (default ``"none"``, the papers' oracle; see the
tie-break notes in :mod:`kgparser.transitions.base`): with the root first a
computation may leave words on the stack, so zero-cost actions can differ in
how long a least-loss computation stays (``reduce``, or ``left`` onto a word
whose gold head is lost, when nothing later needs the word gone).
``"shortest"`` keeps the zero-cost actions after which a least-loss
computation is shortest (:meth:`ArcEagerDynamicOracle.remaining_length`); a
list of actions prefers the zero-cost ones that come first in it.  With the
root at the end every computation has ``2n`` transitions, and only lists are
taken.

Features: ``s0, s1, s2, b0, b1`` (the usual arc-eager window; ``b1`` matters
because ``right`` and ``shift`` decide about ``b0`` before it is on the stack).
With ``root="end"`` the root appears as ``0`` at the buffer position after
word ``n``.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Sequence

from . import register
from .base import (
    NO_HEAD,
    ROOT,
    TIE_BREAK_NONE,
    RootPositionOption,
    State,
    StateKey,
    TieBreak,
    TieBreakingOracle,
    TransitionSystem,
    tie_break_option,
    tie_break_value,
)
from .trees import children, is_projective

SHIFT, LEFT, RIGHT, REDUCE = "shift", "left", "right", "reduce"


class ArcEagerState(State):
    """``stack`` (bottom first), ``b`` (first buffer word; ``n + 1`` means
    only the root is left when the root is at the end, or an empty buffer when
    it is first) and ``popped[w]`` (word ``w`` was reduced or left-attached)."""

    __slots__ = ("stack", "b", "popped")

    def __init__(self, n: int, stack: list[int]):
        super().__init__(n)
        self.stack = stack
        self.b = 1
        self.popped = bytearray(n + 1)

    def copy(self) -> ArcEagerState:
        new = self._copy_arcs_to(object.__new__(ArcEagerState))
        new.stack = self.stack[:]
        new.b = self.b
        new.popped = self.popped[:]
        return new

    def key(self) -> StateKey:
        return (tuple(self.stack), self.b, tuple(self.heads), tuple(self.labels))


@register("arc-eager")
class ArcEager(RootPositionOption, TransitionSystem[ArcEagerState]):
    actions = (SHIFT, LEFT, RIGHT, REDUCE)
    arc_actions = frozenset({LEFT, RIGHT})
    feature_names = ("s0", "s1", "s2", "b0", "b1")

    def __init__(self, root: str = "first", tie_break: object = TIE_BREAK_NONE):
        super().__init__(root)
        self.tie_break = tie_break_option(self.name, self.actions, tie_break, shortest=self.root_first)

    def options(self) -> dict[str, object]:
        return {"root": self.root, "tie_break": tie_break_value(self.tie_break)}

    def initial_state(self, n: int) -> ArcEagerState:
        return ArcEagerState(n, [ROOT] if self.root_first else [])

    def legal_actions(self, state: ArcEagerState) -> list[str]:
        stack, heads = state.stack, state.heads
        word_in_buffer = state.b < len(heads)
        legal = []
        if word_in_buffer:
            legal.append(SHIFT)
        if stack:
            s0 = stack[-1]
            if heads[s0] == NO_HEAD:
                # root first: s0 may be the root itself, which never takes a head
                if s0 != ROOT and (word_in_buffer or not self.root_first):
                    legal.append(LEFT)
            else:
                legal.append(REDUCE)
            if word_in_buffer:
                legal.append(RIGHT)
        return legal

    def apply(self, state: ArcEagerState, action: str, label: str | None = None) -> None:
        if action == SHIFT:
            state.stack.append(state.b)
            state.b += 1
        elif action == LEFT:
            dep = state.stack.pop()
            state.popped[dep] = 1
            state.add_arc(self.buffer_front(state), dep, label)
        elif action == RIGHT:
            state.add_arc(state.stack[-1], state.b, label)
            state.stack.append(state.b)
            state.b += 1
        elif action == REDUCE:
            state.popped[state.stack.pop()] = 1
        else:
            raise ValueError(f"arc-eager has no action {action!r}")

    def is_final(self, state: ArcEagerState) -> bool:
        return state.b >= len(state.heads) and (self.root_first or not state.stack)

    def arc_of(self, state: ArcEagerState, action: str) -> tuple[int, int]:
        if action == LEFT:
            return self.buffer_front(state), state.stack[-1]
        if action == RIGHT:
            return state.stack[-1], state.b
        raise ValueError(f"{action!r} builds no arc")

    def features(self, state: ArcEagerState) -> list[int]:
        stack = state.stack
        depth = len(stack)
        b0 = self.buffer_front(state)
        b1 = state.b + 1
        if b1 > state.n:
            b1 = ROOT if b1 == state.n + 1 and not self.root_first else NO_HEAD
        return [
            stack[-1] if depth > 0 else NO_HEAD,
            stack[-2] if depth > 1 else NO_HEAD,
            stack[-3] if depth > 2 else NO_HEAD,
            b0,
            b1 if b0 > 0 else NO_HEAD,
        ]

    @property
    def has_arc_probes(self) -> bool:
        """Only with the root first: with the root at the end no word ends loose."""
        return self.root_first

    def arc_probe(self, state: ArcEagerState, head: int, dep: int) -> tuple[list[int], str] | None:
        """With the root first (where words can end headless on the stack): the features
        of a state with ``s0 = min(head, dep)`` over the final stack's words left of it and
        ``b0 = max(head, dep)``, where ``right`` (``s0 -> b0``; from the root too) or
        ``left`` (``b0 -> s0``) adds the arc.  With the root at the end every word gets a
        head explicitly, and there is nothing to probe."""
        if not self.root_first:
            return None
        left, right = min(head, dep), max(head, dep)
        probe = ArcEagerState(len(state.heads) - 1, [w for w in state.stack if w < left][-2:] + [left])
        probe.b = right
        return self.features(probe), RIGHT if head == left else LEFT

    def can_build(self, gold_heads: Sequence[int]) -> bool:
        return is_projective(gold_heads)

    def static_oracle(self, gold_heads: Sequence[int]) -> ArcEagerStaticOracle:
        return ArcEagerStaticOracle(self, gold_heads)

    def dynamic_oracle(self, gold_heads: Sequence[int]) -> ArcEagerDynamicOracle:
        return ArcEagerDynamicOracle(self, gold_heads, tie_break=self.tie_break)


class _GoldTree:
    """Gold heads and sorted gold dependents, with the counts the oracles need."""

    def __init__(self, system: ArcEager, gold_heads: Sequence[int]):
        self.system = system
        self.gold = list(gold_heads)
        self.kids = children(gold_heads)

    def deps_from(self, word: int, b: int) -> int:
        """How many gold dependents of ``word`` are at ``b`` or later."""
        kids = self.kids[word]
        return len(kids) - bisect_left(kids, b)


class ArcEagerStaticOracle(_GoldTree):
    """Nivre (2008), section 3.2: attach as soon as a gold arc links ``s0`` and
    ``b0``; reduce ``s0`` once it has its head and no gold dependent is left in
    the buffer; shift otherwise."""

    def next_action(self, state: ArcEagerState) -> str:
        gold, stack, heads = self.gold, state.stack, state.heads
        b0 = self.system.buffer_front(state)
        if stack:
            s0 = stack[-1]
            if heads[s0] == NO_HEAD:
                if s0 != ROOT and b0 != NO_HEAD and gold[s0] == b0:
                    return LEFT
            elif self.deps_from(s0, state.b) == 0:
                return REDUCE
            if b0 > 0 and gold[b0] == s0:
                return RIGHT
        return SHIFT


class ArcEagerDynamicOracle(TieBreakingOracle[ArcEagerState], _GoldTree):
    """Goldberg & Nivre (2012), section 3.3 / (2013), table 1: the cost of an
    action is the number of gold arcs it makes unreachable.

    A gold arc ``h -> d`` is reachable when ``d`` already has head ``h``, or
    ``d`` is headless and either ``h`` can still come later in the buffer or
    (``d`` in the buffer) ``h`` is on the stack.  The root is always reachable
    as a head of a headless word: at the end of the buffer (``root="end"``),
    or, at the bottom of the stack, by leaving the word headless (``"first"``).

    ``gold_heads`` may be *partial*: a word whose gold head is ``-1`` is
    "don't care" and never counted, so the costs are the losses over the given
    arcs only (``kgparser.constraints`` uses this to keep constrained arcs
    reachable, from :meth:`exact_costs`).

    :meth:`exact_costs` are these costs; :meth:`costs` adds the tie-break of
    the system's ``tie_break`` option (:class:`~.base.TieBreakingOracle`).
    """

    system: ArcEager

    def __init__(self, system: ArcEager, gold_heads: Sequence[int], tie_break: TieBreak = TIE_BREAK_NONE):
        super().__init__(system, gold_heads)
        self.tie_break = tie_break

    def _headless_deps_on_stack(self, state: ArcEagerState, word: int) -> int:
        """Gold dependents of ``word`` left of the buffer and still headless
        (hence on the stack): they can only get ``word`` through ``left``."""
        heads = state.heads
        return sum(1 for k in self.kids[word] if k < state.b and heads[k] == NO_HEAD)

    def _on_stack(self, state: ArcEagerState, word: int) -> bool:
        """Whether ``word`` (not the root, not ``-1``) is on the stack."""
        return ROOT < word < state.b and not state.popped[word]

    def _reachable(self, state: ArcEagerState, d: int) -> bool:
        """Whether the gold arc into the headless word ``d`` can still be built."""
        g = self.gold[d]
        if d < state.b and state.popped[d]:
            return False
        return g == ROOT or g >= state.b or (d >= state.b and self._on_stack(state, g))

    def remaining_length(self, state: ArcEagerState) -> int:
        """Transitions of the shortest least-loss computation from ``state``
        (``tie_break="shortest"``, root first, projective gold), in O(n).

        Each buffer word takes one ``shift`` or ``right``; a word leaves the
        stack (``left`` or ``reduce``) only if it must: its gold arc to a
        later head is still to be built (``left``), or it lies strictly
        inside a gold arc still to be built, whose ends must meet as ``s0``
        and ``b0``.  Root arcs are built by leaving the word headless, and a
        least-loss computation builds every reachable gold arc (the loss is
        arc-decomposable), so those are exactly the pops it needs."""
        gold, heads, n = self.gold, state.heads, len(self.gold) - 1
        cover = [0] * (n + 2)
        by_left = bytearray(n + 1)  # words that leave by their own gold left arc
        for d in range(1, n + 1):
            g = gold[d]
            if g <= ROOT or heads[d] != NO_HEAD or not self._reachable(state, d):
                continue
            by_left[d] = g > d
            low, high = min(g, d), max(g, d)
            cover[low + 1] += 1
            cover[high] -= 1
        pops = sum(by_left)
        inside = 0
        for w in range(1, n + 1):
            inside += cover[w]
            if inside and not (w < state.b and state.popped[w]) and not by_left[w]:
                pops += 1
        return n - state.b + 1 + pops

    def exact_costs(self, state: ArcEagerState) -> dict[str, int]:
        gold, stack, b = self.gold, state.stack, state.b
        costs = {}
        for action in self.system.legal_actions(state):
            if action == SHIFT:
                # b0 loses a (non-root) head on the stack and its headless dependents there
                lost = 1 if self._on_stack(state, gold[b]) else 0
                costs[SHIFT] = lost + self._headless_deps_on_stack(state, b)
            elif action == LEFT:
                # s0 loses any other head still to come (buffer or root), and its buffer dependents
                s0 = stack[-1]
                g = gold[s0]
                lost = 1 if g != self.system.buffer_front(state) and (g == ROOT or g >= b) else 0
                costs[LEFT] = lost + self.deps_from(s0, b)
            elif action == RIGHT:
                # b0 loses a head later in the buffer, the root or a stack word, and its stack dependents
                g = gold[b]
                lost = 1 if g != stack[-1] and (g == ROOT or g > b or self._on_stack(state, g)) else 0
                costs[RIGHT] = lost + self._headless_deps_on_stack(state, b)
            else:
                costs[REDUCE] = self.deps_from(stack[-1], b)
        return costs
