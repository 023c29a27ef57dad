"""Arc-hybrid with Swap (de Lhoneux, Stymne & Nivre 2017, "Arc-hybrid
non-projective dependency parsing with a static-dynamic oracle", IWPT,
section 3), its static oracle (Nivre 2009, "Non-projective dependency parsing
in expected linear time", section 4: eager swap; Nivre, Kuhlmann & Hall 2009,
"An improved oracle for dependency parsing with online reordering", section 3:
lazy swap) and the static-dynamic oracle of de Lhoneux et al. (2017, section 4).

Configuration: a stack with the root at its bottom and a buffer that is a real
sequence (words can go back into it):

* ``shift``: push ``b0``;
* ``left``:  ``b0 -> s0``, pop ``s0`` (``s0`` is not the root, buffer non-empty);
* ``right``: ``s1 -> s0``, pop ``s0``;
* ``swap``:  put ``s0`` back into the buffer right behind ``b0`` (the buffer
  becomes ``b0, s0, b1, ...``); legal when the buffer is non-empty, ``s0`` is
  not the root and ``s0`` precedes ``b0`` in the sentence.

Final when the buffer is empty and only the root is left.  A swap turns the
pair ``s0 < b0`` round in the stack-plus-buffer sequence and no transition can
turn it back, so a computation makes at most ``n(n-1)/2`` swaps.  The option
``max_swaps_per_word`` bounds them further for inference (UUParser allows 2
per word): once the bound is spent swap is illegal, and shift/left/right
always finish the parse in a well-formed tree.  The system derives every tree:
the static oracle sorts the words into the projective order of the gold tree
(:func:`~kgparser.transitions.trees.projective_order`), where the tree is
projective, and builds it there as plain arc-hybrid does.

Lazy swap adapted to arc-hybrid: Nivre et al. postpone the swap of (their)
``s1`` and ``s0`` while ``s0`` and ``b0`` share a maximal projective
component.  Here swap exchanges ``s0`` and ``b0``, so the swap waits while
``b0`` can first be reduced inside its component: its gold head lies to its
right in that component and ``b1`` belongs to it too.

How good the static-dynamic oracle is (checked by brute force in
``tests/test_arc_hybrid_swap.py``): with eager swap (the default, as in the
paper), on every state a trainer reaches (swapping where the static oracle
swaps, any other action elsewhere) the shift/left/right costs equal the true
costs of the system whose swaps follow the static oracle, so a zero-cost
action always exists, and zero-cost computations build exactly the gold tree.
With lazy swap zero-cost computations also build exactly the gold tree, but
after a wrong shift or arc while a swap is postponed the postponed word can be
buried under words the gold tree wants reduced first; the loss is then no
longer a sum over arcs, and a few such states have no zero-cost action
(trainers take the cheapest).  States reached by not swapping where the
static oracle swaps (swap is a static action, never explored) are outside
what the oracle prices.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..errors import KgparserError
from . import register
from .base import (
    NO_HEAD,
    ROOT,
    TIE_BREAK_NONE,
    State,
    StateKey,
    TieBreak,
    TieBreakingOracle,
    TransitionSystem,
    stack_top,
    tie_break_option,
    tie_break_value,
)
from .trees import children, has_all_dependents, projective_order

SHIFT, LEFT, RIGHT, SWAP = "shift", "left", "right", "swap"


class ArcHybridSwapState(State):
    """``buffer`` holds the buffer *reversed*: ``buffer[-1]`` is ``b0``, so
    shift pops and swap inserts at the end of the list in O(1)."""

    __slots__ = ("stack", "buffer", "swaps")

    def __init__(self, n: int):
        super().__init__(n)
        self.stack = [ROOT]
        self.buffer = list(range(n, 0, -1))
        self.swaps = 0

    def copy(self) -> ArcHybridSwapState:
        new = self._copy_arcs_to(object.__new__(ArcHybridSwapState))
        new.stack = self.stack[:]
        new.buffer = self.buffer[:]
        new.swaps = self.swaps
        return new

    def key(self) -> StateKey:
        return (tuple(self.stack), tuple(self.buffer), self.swaps, tuple(self.heads), tuple(self.labels))


class ArcHybridSwapOptionError(KgparserError, ValueError):
    """A bad option value for ``arc-hybrid-swap``."""


@register("arc-hybrid-swap")
class ArcHybridSwap(TransitionSystem[ArcHybridSwapState]):
    """Options: ``lazy_swap`` (default ``False``: the eager swap of Nivre
    (2009), which is what de Lhoneux et al. (2017) and their UUParser use:
    swap whenever ``s0`` follows ``b0`` in the projective order; ``True``:
    delay swaps with the maximal projective components of Nivre, Kuhlmann &
    Hall (2009), which needs fewer swaps), and ``max_swaps_per_word``
    (``None``: no bound beyond the ``n(n-1)/2`` the precondition implies),
    and ``tie_break`` (default ``"none"``): a list of actions, most preferred
    first, decides which of several zero-cost actions training takes as
    correct (the tie-break notes of :mod:`kgparser.transitions.base`); a
    zero-cost ``shift`` can cost swaps later, but the static-dynamic oracle
    has no remaining-length computation, so ``"shortest"`` is not offered."""

    actions = (SHIFT, LEFT, RIGHT, SWAP)
    arc_actions = frozenset({LEFT, RIGHT})
    feature_names = ("s0", "s1", "s2", "b0")
    static_actions = frozenset({SWAP})

    def __init__(self, lazy_swap: bool = False, max_swaps_per_word: float | None = None,
                 tie_break: object = TIE_BREAK_NONE):
        if not isinstance(lazy_swap, bool):
            raise ArcHybridSwapOptionError(
                f"arc-hybrid-swap: option lazy_swap must be true or false, got {lazy_swap!r}")
        if max_swaps_per_word is not None and (
            isinstance(max_swaps_per_word, bool)
            or not isinstance(max_swaps_per_word, (int, float))
            or not max_swaps_per_word >= 0
        ):
            raise ArcHybridSwapOptionError(
                "arc-hybrid-swap: option max_swaps_per_word must be a non-negative number or null, "
                f"got {max_swaps_per_word!r}"
            )
        self.lazy_swap = lazy_swap
        self.max_swaps_per_word = max_swaps_per_word
        self.tie_break = tie_break_option(
            self.name, self.actions, tie_break, shortest=False,
            why_not_shortest="its static-dynamic oracle has no remaining-length computation")

    def options(self) -> dict[str, object]:
        return {"lazy_swap": self.lazy_swap, "max_swaps_per_word": self.max_swaps_per_word,
                "tie_break": tie_break_value(self.tie_break)}

    def swap_budget(self, n: int) -> int:
        """Most swaps allowed in an ``n``-word sentence."""
        unbounded = n * (n - 1) // 2
        if self.max_swaps_per_word is None:
            return unbounded
        return min(unbounded, math.floor(self.max_swaps_per_word * n))

    def initial_state(self, n: int) -> ArcHybridSwapState:
        return ArcHybridSwapState(n)

    def can_swap(self, state: ArcHybridSwapState) -> bool:
        buffer, s0 = state.buffer, state.stack[-1]
        return (
            bool(buffer)
            and s0 != ROOT
            and s0 < buffer[-1]
            and state.swaps < self.swap_budget(len(state.heads) - 1)
        )

    def legal_actions(self, state: ArcHybridSwapState) -> list[str]:
        legal = []
        if state.buffer:
            legal.append(SHIFT)
            if state.stack[-1] != ROOT:
                legal.append(LEFT)
        if len(state.stack) > 1:
            legal.append(RIGHT)
        if self.can_swap(state):
            legal.append(SWAP)
        return legal

    def apply(self, state: ArcHybridSwapState, action: str, label: str | None = None) -> None:
        stack, buffer = state.stack, state.buffer
        if action == SHIFT:
            stack.append(buffer.pop())
        elif action == LEFT:
            state.add_arc(buffer[-1], stack.pop(), label)
        elif action == RIGHT:
            dep = stack.pop()
            state.add_arc(stack[-1], dep, label)
        elif action == SWAP:
            buffer.insert(len(buffer) - 1, stack.pop())
            state.swaps += 1
        else:
            raise ValueError(f"arc-hybrid-swap has no action {action!r}")

    def is_final(self, state: ArcHybridSwapState) -> bool:
        return not state.buffer and len(state.stack) == 1

    def arc_of(self, state: ArcHybridSwapState, action: str) -> tuple[int, int]:
        if action == LEFT:
            return state.buffer[-1], state.stack[-1]
        if action == RIGHT:
            return state.stack[-2], state.stack[-1]
        raise ValueError(f"{action!r} builds no arc")

    def features(self, state: ArcHybridSwapState) -> list[int]:
        return [*stack_top(state.stack, 3), state.buffer[-1] if state.buffer else NO_HEAD]

    def can_build(self, gold_heads: Sequence[int]) -> bool:
        """Every tree; with a swap bound, the trees whose static-oracle
        derivation stays within it."""
        if self.max_swaps_per_word is None:
            return True
        n = len(gold_heads) - 1
        return self._static_swap_count(gold_heads) <= self.swap_budget(n)

    def _static_swap_count(self, gold_heads: Sequence[int]) -> int:
        unbounded = ArcHybridSwap(lazy_swap=self.lazy_swap)
        oracle = unbounded.static_oracle(gold_heads)
        state = unbounded.initial_state(len(gold_heads) - 1)
        while not unbounded.is_final(state):
            unbounded.apply(state, oracle.next_action(state))
        return state.swaps

    def static_oracle(self, gold_heads: Sequence[int]) -> ArcHybridSwapStaticOracle:
        return ArcHybridSwapStaticOracle(self, gold_heads)

    def dynamic_oracle(self, gold_heads: Sequence[int]) -> ArcHybridSwapStaticDynamicOracle:
        return ArcHybridSwapStaticDynamicOracle(self, gold_heads, tie_break=self.tie_break)


def projective_positions(gold_heads: Sequence[int]) -> list[int]:
    """``position[w]``: the place of ``w`` in the projective order (root: -1)."""
    position = [-1] * len(gold_heads)
    for i, word in enumerate(projective_order(gold_heads)):
        position[word] = i
    return position


def maximal_projective_components(gold_heads: Sequence[int]) -> list[int]:
    """``component[w]``: a name (the top word) of the maximal projective
    component of ``w`` (Nivre, Kuhlmann & Hall 2009, section 3): the subtrees
    that arc-hybrid builds from the gold tree in the original word order,
    without swaps, reducing every word as soon as it is complete."""
    n = len(gold_heads) - 1
    missing = [len(k) for k in children(gold_heads)]
    built = [NO_HEAD] * (n + 1)
    stack, b = [ROOT], 1

    def attach(head: int, dep: int) -> None:
        built[dep] = head
        missing[head] -= 1

    while True:
        s0 = stack[-1]
        ready = s0 != ROOT and missing[s0] == 0
        if ready and b <= n and gold_heads[s0] == b:
            attach(b, stack.pop())
        elif ready and len(stack) > 1 and gold_heads[s0] == stack[-2]:
            attach(stack[-2], stack.pop())
        elif b <= n:
            stack.append(b)
            b += 1
        else:
            break
    component = [NO_HEAD] * (n + 1)
    for word in range(1, n + 1):
        path, top = [], word
        while component[top] == NO_HEAD and built[top] not in (NO_HEAD, ROOT):
            path.append(top)
            top = built[top]
        if component[top] != NO_HEAD:
            top = component[top]
        for w in path + [top]:
            component[w] = top
    return component


class ArcHybridSwapStaticOracle:
    """Nivre (2009), section 4, for arc-hybrid: swap while ``s0`` follows
    ``b0`` in the projective order; otherwise reduce ``s0`` as soon as it has
    all its dependents (to ``b0``, else to ``s1``), otherwise shift.  With
    ``lazy_swap`` a swap waits while ``b0`` can first be reduced inside its
    maximal projective component (Nivre, Kuhlmann & Hall 2009, section 3;
    see the module docstring)."""

    def __init__(self, system: ArcHybridSwap, gold_heads: Sequence[int]):
        self.system = system
        self.gold = list(gold_heads)
        self.kids = children(gold_heads)
        self.position = projective_positions(gold_heads)
        self.component = maximal_projective_components(gold_heads) if system.lazy_swap else None

    def wants_swap(self, state: ArcHybridSwapState) -> bool:
        """Whether the static oracle swaps here (when the swap is legal)."""
        buffer = state.buffer
        if not buffer:
            return False
        s0, b0 = state.stack[-1], buffer[-1]
        if s0 == ROOT or self.position[s0] < self.position[b0]:
            return False
        if self.component is not None and len(buffer) > 1:
            component, head = self.component, self.gold[b0]
            reducible_first = head > b0 and component[b0] == component[head] == component[buffer[-2]]
            return not reducible_first
        return True

    def next_action(self, state: ArcHybridSwapState) -> str:
        if self.wants_swap(state) and self.system.can_swap(state):
            return SWAP
        stack, buffer = state.stack, state.buffer
        s0 = stack[-1]
        if s0 != ROOT and has_all_dependents(state.heads, self.kids, s0):
            head = self.gold[s0]
            if buffer and head == buffer[-1]:
                return LEFT
            if len(stack) > 1 and head == stack[-2]:
                return RIGHT
        return SHIFT if buffer else RIGHT


class ArcHybridSwapStaticDynamicOracle(TieBreakingOracle[ArcHybridSwapState]):
    """The static-dynamic oracle of de Lhoneux, Stymne & Nivre (2017), section 4.

    Swap is decided by the static oracle: where it swaps, swap costs 0 and the
    other actions at least 1; elsewhere swap costs 1 (trainers never explore
    it).  Shift, left and right get the arc-hybrid costs of Goldberg & Nivre
    (2013, table 1) read in the projective order, in which the words are
    processed.  Let ``m`` be the least projective position in the buffer: a
    stack word before ``m`` is *settled* (it stays until it gets its head),
    a later one will be swapped back behind that buffer word and still counts
    as unprocessed.  A gold arc whose words are both unattached is reachable
    unless both are settled and the head is not right below the dependent.

    * shift is free when a word behind ``b0`` precedes it in the projective
      order (``b0`` will be swapped back: the paper's case); otherwise it
      loses the arcs between ``b0`` and the settled stack except ``s0 -> b0``;
    * left and right lose the reachable gold arcs of ``s0`` other than the one
      they build.

    O(n) per call: one pass over the buffer plus the degree of ``s0``/``b0``.
    :meth:`exact_costs` are these costs; :meth:`costs` adds the tie-break of
    the system's ``tie_break`` option (:class:`~.base.TieBreakingOracle`).
    """

    system: ArcHybridSwap

    def __init__(self, system: ArcHybridSwap, gold_heads: Sequence[int], tie_break: TieBreak = TIE_BREAK_NONE):
        self.system = system
        self.tie_break = tie_break
        self.static = ArcHybridSwapStaticOracle(system, gold_heads)
        self.gold = self.static.gold
        self.kids = self.static.kids
        self.position = self.static.position

    def exact_costs(self, state: ArcHybridSwapState) -> dict[str, int]:
        legal = self.system.legal_actions(state)
        costs = self._arc_hybrid_costs(state, legal)
        if SWAP in legal:
            if self.static.wants_swap(state):
                costs = {a: max(1, c) for a, c in costs.items()}
                costs[SWAP] = 0
            else:
                costs[SWAP] = 1
        return costs

    def _arc_hybrid_costs(self, state: ArcHybridSwapState, legal: list[str]) -> dict[str, int]:
        position, stack, buffer = self.position, state.stack, state.buffer
        beyond = len(position)  # after every projective position
        behind_b0 = min(map(position.__getitem__, buffer[:-1]), default=beyond)
        first = min(behind_b0, position[buffer[-1]]) if buffer else beyond
        costs = {}
        if SHIFT in legal:
            costs[SHIFT] = self._shift_cost(state, behind_b0)
        if LEFT in legal:
            costs[LEFT] = self._pop_cost(state, buffer[-1], first)
        if RIGHT in legal:
            costs[RIGHT] = self._pop_cost(state, stack[-2], first)
        return costs

    def _shift_cost(self, state: ArcHybridSwapState, behind_b0: int) -> int:
        """Gold arcs lost by pushing ``b0``; after the push, the settled words
        are those before ``behind_b0``, ``b0`` among them unless it comes back."""
        heads, position = state.heads, self.position
        b0 = state.buffer[-1]
        if behind_b0 < position[b0]:
            return 0
        lost = 0
        head = self.gold[b0]
        if head != state.stack[-1] and heads[head] == NO_HEAD and position[head] < behind_b0:
            lost += 1
        for d in self.kids[b0]:
            if heads[d] == NO_HEAD and position[d] < behind_b0:
                lost += 1
        return lost

    def _pop_cost(self, state: ArcHybridSwapState, new_head: int, first: int) -> int:
        """Reachable gold arcs of ``s0`` lost when it is attached to ``new_head``
        and popped (``first``: the least projective position in the buffer)."""
        heads, position, stack = state.heads, self.position, state.stack
        s0 = stack[-1]
        s0_settled = position[s0] < first
        lost = 0
        head = self.gold[s0]
        if head != new_head and heads[head] == NO_HEAD:
            head_right_below = len(stack) > 1 and stack[-2] == head
            if not (s0_settled and position[head] < first and not head_right_below):
                lost += 1
        for d in self.kids[s0]:
            if heads[d] == NO_HEAD and not (s0_settled and position[d] < first):
                lost += 1
        return lost
