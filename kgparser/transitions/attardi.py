"""Attardi's non-projective parser restricted to degree 2, with the static
oracle of Cohen, Gómez-Rodríguez & Satta (2012) and the polynomial-time
dynamic oracle of Gómez-Rodríguez, Sartorio & Satta (2014), "A
polynomial-time dynamic oracle for non-projective dependency parsing"
(ACL 2014).

Transitions (section 3, figure 1), all arcs between stack words:

* ``shift``:  push ``b0``;
* ``left``   (la):  ``s0 -> s1``, pop ``s1``;
* ``right``  (ra):  ``s1 -> s0``, pop ``s0``;
* ``left2``  (la2): ``s0 -> s2``, pop ``s2``;
* ``right2`` (ra2): ``s2 -> s0``, pop ``s0``.

Root handling: the root ``0`` is a stack node.  The paper starts from
``([], [0..n], ∅)``; its first step can only shift ``0``, so we start right
after it, from ``([0], [1..n], ∅)``.  The root stays at the bottom of the
stack and is never a dependent (``left`` and ``left2`` are illegal when they
would pop it), so arcs from the root are built by ``right``/``right2`` like
any other arc.  Final states are the paper's ``([0], [], A)``: every word has
a head, so the rule of docs/transition-contract.md that headless words attach to the root
never applies here.  Every non-final state has a legal action and every
computation ends in a final state.

Option ``tie_break`` (default ``"none"``): which of several zero-cost actions
training takes as correct, as a list of actions, most preferred first (see
the tie-break notes in :mod:`kgparser.transitions.base`).  Every computation
shifts each word once and reduces it once, ``2n`` transitions, so
``"shortest"`` would change nothing and is refused.  Zero-cost actions do
tie, mostly reductions with each other (a word whose gold head is lost may
hang from any neighbour; also ``left`` with ``left2``) and ``right`` with
``shift``; an order such as ``[shift]`` or ``[left, right]`` settles them.

Option ``lost_words`` (default ``"free"``, the paper's oracle), as for
Covington (:mod:`kgparser.transitions.covington`): after the tie-break, what
training takes as correct where a zero-cost reduction builds an arc outside
the gold tree (free under the Hamming loss once its dependent's gold head is
out of reach).  ``"attach"``: those arcs, so a word whose gold head is lost
hangs from the neighbour it meets first rather than over the words in
between (issue 18: the dynamic models' non-projective arcs are many and
mostly wrong); ``"spare"``: the other zero-cost actions.  Every word gets a
head in Attardi, so ``spare`` only postpones such an arc.

Features: ``s0 s1 s2 s3 b0``.  ``left2``/``right2`` reach ``s2``, and after
them the old ``s3`` becomes ``s2``, so ``s3`` lets the model see the word that
the next degree-2 arc could reach.
"""
from __future__ import annotations

import math
from typing import Sequence

from ..errors import KgparserError
from . import register
from ._attardi_table import Budget, BufferReduction, FutureLoss, OverBudget
from .base import (
    LOST_WORDS_FREE,
    NO_HEAD,
    ROOT,
    TIE_BREAK_NONE,
    StackBufferState,
    StackBufferSystem,
    TieBreak,
    TieBreakingOracle,
    lost_words_option,
    stack_top,
    tie_break_option,
    tie_break_value,
)
from .trees import children

SHIFT, LEFT, RIGHT, LEFT2, RIGHT2 = "shift", "left", "right", "left2", "right2"
#: default work budget of one ``costs()`` call (words of ``γ`` bounded, table
#: cells plus item pairs tried; a unit is about 1 µs): a guard against a stall
#: of many seconds, not a speed trade-off.  At 200,000, up to 0.16-0.22% of an
#: exploring epoch's calls ran over it on Hungarian-Szeged and Turkish-IMST,
#: and Hungarian runs with no budget spent no more oracle time (issue 18)
WORK_LIMIT = 20_000_000


class AttardiOptionError(KgparserError, ValueError):
    """A bad option of the ``attardi`` system."""


@register("attardi")
class Attardi(StackBufferSystem):
    """Option ``work_limit``: the work budget of one dynamic-oracle ``costs()``
    call, beyond which it falls back to an O(n) approximation (see
    :class:`AttardiDynamicOracle`); options ``tie_break`` and ``lost_words``:
    see the module docstring."""

    actions = (SHIFT, LEFT, RIGHT, LEFT2, RIGHT2)
    arc_actions = frozenset({LEFT, RIGHT, LEFT2, RIGHT2})
    feature_names = ("s0", "s1", "s2", "s3", "b0")

    def __init__(self, work_limit: int = WORK_LIMIT, tie_break: object = TIE_BREAK_NONE,
                 lost_words: str = LOST_WORDS_FREE):
        if isinstance(work_limit, bool) or not isinstance(work_limit, int) or work_limit < 0:
            raise AttardiOptionError(
                f"attardi option 'work_limit' must be a non-negative integer, got {work_limit!r}")
        self.work_limit = work_limit
        self.tie_break = tie_break_option(self.name, self.actions, tie_break, shortest=False)
        self.lost_words = lost_words_option(self.name, lost_words)

    def options(self) -> dict[str, object]:
        return {"work_limit": self.work_limit, "tie_break": tie_break_value(self.tie_break),
                "lost_words": self.lost_words}

    def legal_actions(self, state: StackBufferState) -> list[str]:
        return _legal(state.stack, state.b <= len(state.heads) - 1)

    def apply(self, state: StackBufferState, action: str, label: str | None = None) -> None:
        stack = state.stack
        if action == SHIFT:
            stack.append(state.b)
            state.b += 1
        elif action == LEFT:
            state.add_arc(stack[-1], stack.pop(-2), label)
        elif action == RIGHT:
            dep = stack.pop()
            state.add_arc(stack[-1], dep, label)
        elif action == LEFT2:
            state.add_arc(stack[-1], stack.pop(-3), label)
        elif action == RIGHT2:
            dep = stack.pop()
            state.add_arc(stack[-2], dep, label)
        else:
            raise ValueError(f"attardi has no action {action!r}")

    def arc_of(self, state: StackBufferState, action: str) -> tuple[int, int]:
        return _arc(state.stack, action)

    def features(self, state: StackBufferState) -> list[int]:
        return [*stack_top(state.stack, 4), state.b0()]

    def can_build(self, gold_heads: Sequence[int]) -> bool:
        """Whether the parser derives this tree: the eager static oracle
        succeeds exactly on the trees the parser covers (checked against
        brute-force coverage in the tests).  O(n)."""
        return _eager_derivation_succeeds(gold_heads)

    def static_oracle(self, gold_heads: Sequence[int]) -> AttardiStaticOracle:
        return AttardiStaticOracle(gold_heads)

    def dynamic_oracle(self, gold_heads: Sequence[int]) -> AttardiDynamicOracle:
        return AttardiDynamicOracle(gold_heads, self.work_limit, system=self, tie_break=self.tie_break)


def _legal(stack: list[int], has_buffer: bool) -> list[str]:
    depth = len(stack)
    legal = [SHIFT] if has_buffer else []
    if depth > 1:
        if stack[-2] != ROOT:
            legal.append(LEFT)
        legal.append(RIGHT)
        if depth > 2:
            if stack[-3] != ROOT:
                legal.append(LEFT2)
            legal.append(RIGHT2)
    return legal


def _arc(stack: list[int], action: str) -> tuple[int, int]:
    """``(head, dependent)`` of a reduce transition (figure 1)."""
    if action == LEFT:
        return stack[-1], stack[-2]
    if action == RIGHT:
        return stack[-2], stack[-1]
    if action == LEFT2:
        return stack[-1], stack[-3]
    if action == RIGHT2:
        return stack[-3], stack[-1]
    raise ValueError(f"{action!r} builds no arc")


def _eager_action(stack: list[int], gold: Sequence[int], missing: Sequence[int] | _MissingDependents) -> str | None:
    """The arc the eager static oracle builds now, or ``None`` (then shift).

    Cohen et al. (2012), as used by Gómez-Rodríguez et al. (2014, section
    7.1): build a gold arc as soon as its dependent has all its dependents
    (``missing[d] == 0``), ``left`` before ``left2``.  The other ready arcs
    exclude each other, so their order does not matter.
    """
    depth = len(stack)
    if depth < 2:
        return None
    s0, s1 = stack[-1], stack[-2]
    if s1 != ROOT and gold[s1] == s0 and not missing[s1]:
        return LEFT
    s2 = stack[-3] if depth > 2 else NO_HEAD
    if depth > 2 and s2 != ROOT and gold[s2] == s0 and not missing[s2]:
        return LEFT2
    if not missing[s0]:
        if gold[s0] == s1:
            return RIGHT
        if gold[s0] == s2:
            return RIGHT2
    return None


def _eager_derivation_succeeds(gold: Sequence[int]) -> bool:
    """Whether the eager static oracle, run from the initial state, reaches
    the final state (it gets stuck exactly when the tree is not derivable)."""
    n = len(gold) - 1
    missing = [0] * (n + 1)
    for d in range(1, n + 1):
        missing[gold[d]] += 1
    stack, b = [ROOT], 1
    while b <= n or len(stack) > 1:
        action = _eager_action(stack, gold, missing)
        if action is not None:
            head, dep = _arc(stack, action)
            stack.remove(dep)
            missing[head] -= 1
        elif b <= n:
            stack.append(b)
            b += 1
        else:
            return False
    return True


class AttardiStaticOracle:
    """The eager static oracle (see :func:`_eager_action`); follows the gold
    computation from any state on it.  Off it, or for a tree the parser cannot
    build, it still returns a legal action (``right`` when stuck)."""

    def __init__(self, gold_heads: Sequence[int]):
        self.gold = list(gold_heads)
        self.kids = children(gold_heads)

    def next_action(self, state: StackBufferState) -> str:
        heads = state.heads
        missing = _MissingDependents(self.kids, heads)
        action = _eager_action(state.stack, self.gold, missing)
        if action is not None:
            return action
        return SHIFT if state.b < len(heads) else RIGHT


def _future_loss_from(previous: tuple[list[int], int, dict[str, int]] | None, stack: list[int],
                      b: int) -> int | None:
    """The future loss of the configuration with this stack and first buffer
    word ``b`` if it is a successor of the previous call's (see
    :attr:`AttardiDynamicOracle._previous`), else ``None``."""
    if previous is None:
        return None
    before, before_b, futures = previous
    for action, future in futures.items():
        if action == SHIFT:
            if b == before_b + 1 and stack[:-1] == before and stack[-1] == before_b:
                return future
        elif b == before_b and len(stack) == len(before) - 1:
            after = before[:]
            after.remove(_arc(before, action)[1])
            if after == stack:
                return future
    return None


class _MissingDependents:
    """``missing[w]``: how many gold dependents of ``w`` lack their gold arc,
    computed on demand (only the few words the oracle asks about)."""

    __slots__ = ("kids", "heads")

    def __init__(self, kids: Sequence[Sequence[int]], heads: Sequence[int]):
        self.kids, self.heads = kids, heads

    def __getitem__(self, word: int) -> int:
        heads = self.heads
        return sum(1 for k in self.kids[word] if heads[k] != word)


class AttardiDynamicOracle(TieBreakingOracle[StackBufferState]):
    """Costs by the two stages of Gómez-Rodríguez et al. (2014), section 5.

    For each legal action ``τ`` the loss of ``τ(c)`` is the wrong arcs already
    built plus the future loss (:class:`FutureLoss`) of the stack and reduced
    buffer (section 5.2) of ``τ(c)``; the cost of ``τ`` is that loss minus
    the least one over the legal actions.  As ``loss(c)`` is the least loss
    of a successor, these are the exact costs whenever the losses are exact:
    the paper proves the algorithm for gold trees the parser can build, and
    the tests check exactness by brute force on every state of small such
    trees.  Most losses are settled in O(n) by a lower and a greedy upper
    bound that meet; the tables of Algorithm 1 run only for the others (see
    :meth:`_successor_losses`).

    For a gold tree the parser cannot build, the same computation is done
    and terminates under the same work bound, but the paper's guarantees do
    not hold: buffer reduction may assume a fragment the parser cannot build,
    so the numbers are approximate losses.  ``costs()`` still returns one
    non-negative cost per legal action with at least one zero (trainers take
    the zero-cost actions as correct), and the tests check that.

    Work bound: section 6 bounds the table work by ``O(|σ|^3|γ|^2|β_R| +
    |γ|^4|β_R|^4)``; in practice it is small, because the bounds settle most
    losses, the buffer reduction keeps ``β_R`` short and the tables keep
    only the items within an excess bound.  Following the oracle with 30%
    forced shifts and 10% random actions, errors that leave deep stacks
    (``experiments/bench_attardi_oracle.py``: 60 sentences from each of the
    UD Hungarian-Szeged, Greek-GDT, English-EWT, Turkish-IMST and
    Gothic-PROIEL training sets, 9,939 calls), one call took 1.35 ms of CPU
    time on average (median 0.15 ms, 99th percentile 19 ms, max 87 ms;
    Gothic 0.44 ms on average, max 8 ms); in a 3-epoch training run on UD
    Hungarian-Szeged with no budget, the oracle took 5 s in the first epoch
    (no exploration) and 73 s and 56 s in the two exploring ones.
    Each call has a budget of ``work_limit`` units (words of ``γ`` bounded,
    table cells visited and item pairs tried; a unit is about 1 µs); when it
    runs out, the call returns :meth:`approximate_costs` instead and counts
    it in ``self.fallbacks``.  ``work_limit=0`` always falls back.

    :meth:`exact_costs` are these costs (exact or the fallback's);
    :meth:`costs` adds the tie-break of the ``tie_break`` option and the ``lost_words`` rule.
    """

    def __init__(self, gold_heads: Sequence[int], work_limit: int = WORK_LIMIT, *,
                 system: Attardi | None = None, tie_break: TieBreak = TIE_BREAK_NONE):
        self.system = system or Attardi(work_limit)
        self.tie_break = tie_break
        self.gold = list(gold_heads)
        self.kids = children(gold_heads)
        self.buffer_reduction = BufferReduction(self.gold, self.kids)
        self.work_limit = work_limit
        self.fallbacks = 0
        #: the last call's stack, first buffer word and future loss of the
        #: successor by each legal action (the next call, in a computation, is
        #: on one of those successors)
        self._previous: tuple[list[int], int, dict[str, int]] | None = None

    def exact_costs(self, state: StackBufferState) -> dict[str, int]:
        stack, b = state.stack, state.b
        legal = _legal(stack, b < len(self.gold))
        if len(legal) == 1:
            return {legal[0]: 0}
        budget = Budget(self.work_limit)
        previous, self._previous = self._previous, None
        try:
            losses = self._successor_losses(stack, b, legal, budget, previous)
        except OverBudget:
            self.fallbacks += 1
            return self.approximate_costs(state)
        best = min(losses.values())
        return {action: loss - best for action, loss in losses.items()}

    def _successor_losses(self, stack: list[int], b: int, legal: list[str], budget: Budget,
                          previous: tuple[list[int], int, dict[str, int]] | None) -> dict[str, int]:
        """Loss of the successor by each legal action, less the wrong arcs of
        ``c``.

        Each successor's loss is first bounded in O(n) (its wrong arc plus
        :class:`FutureLoss` ``lower``/``upper``); only the successors whose
        bounds differ need tables.  For those, the loss of ``c`` itself, the
        least successor loss, is a better lower bound: it is known without a
        table when the least lower bound of a successor equals the least
        upper bound, else it comes from the tables of ``c`` (within those
        two).  A successor whose upper bound is above the least one most
        likely costs more than 0, so its first table skips the bound of a
        zero cost (:meth:`FutureLoss.exact_expecting_more`).  A reduction changes β_R
        only if its dependent has its gold head in the buffer (condition (i)
        of section 5.2), so the reductions mostly share the reduced buffer
        of ``c``.  The future loss of ``c``
        is usually known from ``previous`` (the previous call computed it for
        one of its successors), and this call leaves its successors' in
        ``self._previous``.
        """
        gold, reduction = self.gold, self.buffer_reduction
        successors, reduced = self._successors(stack, b, legal, budget)
        if all(future.lower == future.upper for _, future in successors.values()):
            losses = {action: arc + future.lower for action, (arc, future) in successors.items()}
        else:
            lowest = min(arc + future.lower for arc, future in successors.values())
            least_upper = min(arc + future.upper for arc, future in successors.values())
            loss = _future_loss_from(previous, stack, b)
            if loss is None and lowest == least_upper:
                loss = lowest
            elif loss is None:
                if reduced is None:
                    reduced = reduction.reduced(stack, b)
                loss = FutureLoss(gold, stack, reduced, budget).exact(budget, lowest, least_upper)
            losses = {action: arc + (future.exact_expecting_more(budget, loss - arc)
                                     if arc + future.upper > least_upper else future.exact(budget, loss - arc))
                      for action, (arc, future) in successors.items()}
        self._previous = (stack[:], b, {action: losses[action] - arc for action, (arc, _) in successors.items()})
        return losses

    def _successors(self, stack: list[int], b: int, legal: list[str], budget: Budget
                    ) -> tuple[dict[str, tuple[int, FutureLoss]], list[int] | None]:
        """For each legal action, whether its arc is wrong (0/1) and the
        :class:`FutureLoss` of the successor; also the reduced buffer of ``c``
        when it was needed (``None`` otherwise)."""
        gold, reduction = self.gold, self.buffer_reduction
        reduced = None
        successors = {}
        for action in legal:
            if action == SHIFT:
                after = stack + [b]
                successors[action] = (0, FutureLoss(gold, after, reduction.reduced(after, b + 1), budget))
                continue
            head, dep = _arc(stack, action)
            if action == RIGHT2:  # pops s0 as ``right`` does: the same successor
                successors[action] = (int(gold[dep] != head), successors[RIGHT][1])
                continue
            after = stack[:]
            after.remove(dep)
            if gold[dep] >= b:
                after_reduced = reduction.reduced(after, b)
            else:
                if reduced is None:
                    reduced = reduction.reduced(stack, b)
                after_reduced = reduced
            successors[action] = (int(gold[dep] != head), FutureLoss(gold, after, after_reduced, budget))
        return successors, reduced

    def approximate_costs(self, state: StackBufferState) -> dict[str, int]:
        """O(n) fallback for configurations over the work budget: the costs
        the greedy upper bounds of :class:`FutureLoss` give, without tables.

        Each successor is priced at its wrong arc plus the loss of the greedy
        completion from it (a loss some computation reaches, so never below
        the true one), and the least such price is subtracted, so some action
        costs 0.  Not the true costs, but close: following the oracle with
        shift-biased and random errors on UD Hungarian-Szeged sentences (4,204
        states with a choice, ``experiments/bench_attardi_budget.py``), these
        equal the exact costs on 81.4% of the states and every action they
        price at 0 truly costs 0 on 94.0%.
        """
        stack, b = state.stack, state.b
        successors, _ = self._successors(stack, b, _legal(stack, b < len(self.gold)), Budget(math.inf))
        prices = {action: arc + future.upper for action, (arc, future) in successors.items()}
        best = min(prices.values())
        return {action: price - best for action, price in prices.items()}
