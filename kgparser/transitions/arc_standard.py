"""The arc-standard system (Nivre 2004, 2008; shift-reduce dependency parsing)
with an exact dynamic oracle for any gold tree, projective or not (Nederhof
2019, "Calculating the optimal step in shift-reduce dependency parsing: from
cubic to linear time", TACL).

Configuration: a stack with the root at its bottom, and a buffer ``b..n``.

* ``shift``: push ``b0``;
* ``left``:  ``s1 <- s0`` (``s0`` becomes the head of ``s1``), pop ``s1``;
  ``s1`` must not be the root;
* ``right``: ``s1 -> s0``, pop ``s0``.

Final when the buffer is empty and only the root is left.  The system builds
exactly the projective trees (several dependents of the root allowed).
Features: ``s0, s1, s2, b0`` (``s0`` is the root when the stack holds only it).

The dynamic oracle prices each action by the best tree still derivable after
it (section 4 of the paper; see :mod:`._arc_standard_dp` for the chart and the
characterisation of derivable trees it relies on).  For a projective gold
tree the buffer first shrinks to its *critical* words (section 5, properties
1-3): a buffer word whose gold head and gold descendants all lie in the buffer
is taken to get its gold head, and only the stack and the critical words
remain.  On them the linear-time recursion of section 6
(:class:`._arc_standard_linear.ProjectiveReduction`; the section's tables did
not survive in our copy of the paper, so its moves are rebuilt from the prose)
finds the best count in time linear in stack plus critical words.  The cubic
chart on the same units (the paper's "section 4 (proj)" set-up of section 8.2)
stays available for comparison, and serves non-projective gold trees.

Work bound (option ``work_limit``, as Attardi's): each ``costs()`` call first
estimates its work, in units of about 1 µs, from the sizes of its
configurations (:meth:`ArcStandardDynamicOracle.work`); over the limit it
answers with :meth:`ArcStandardDynamicOracle.approximate_costs`, O(degree),
and counts the call in ``fallbacks``.  The recursion is linear per call, so a
computation over an n-word sentence costs O(n) calls times O(n) (section 6);
the paper's reuse of values between consecutive configurations (end of
section 6) would make it near-linear overall but is not done here, so the
limit is what keeps a long sentence's total linear in n: at most
``2 n * work_limit`` units.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import KgparserError
from . import register
from ._arc_standard_dp import WordChart, best_gold_arcs, chart_work, gold_weights
from ._arc_standard_linear import ProjectiveReduction
from .base import NO_HEAD, ROOT, StackBufferState, StackBufferSystem, stack_top
from .trees import children, descendant_spans, has_all_dependents, is_projective

SHIFT, LEFT, RIGHT = "shift", "left", "right"
#: default work budget of one ``costs()`` call (units of about 1 µs on the
#: benchmark VM, see :meth:`ArcStandardDynamicOracle.work`): projective
#: configurations of up to about 1,000 stack plus critical words stay exact,
#: and so do chart calls of up to about 2 ms (non-projective gold); a walk
#: over a 2,000-word sentence takes seconds instead of minutes (docs/history/oracles-and-projectivization.md)
WORK_LIMIT = 2_000
#: work units per unit (stack or critical word) of one linear recursion: its
#: tables and its memo states (at most 8 per unit, tests/test_arc_standard_linear.py)
#: took 0.7-0.9 µs per unit on chains and random projective trees
RECURSION_UNITS = 1
#: chart split points per unit of work (numpy, about 15-40 ns each)
CHART_SPLITS_PER_UNIT = 64


class ArcStandardOptionError(KgparserError, ValueError):
    """A bad option of the ``arc-standard`` system."""


@register("arc-standard")
class ArcStandard(StackBufferSystem):
    """Option ``work_limit``: the work budget of one dynamic-oracle ``costs()``
    call, beyond which it falls back to local costs (see the module)."""

    actions = (SHIFT, LEFT, RIGHT)
    arc_actions = frozenset({LEFT, RIGHT})
    feature_names = ("s0", "s1", "s2", "b0")

    def __init__(self, work_limit: int = WORK_LIMIT):
        if isinstance(work_limit, bool) or not isinstance(work_limit, int) or work_limit < 0:
            raise ArcStandardOptionError(
                f"arc-standard option 'work_limit' must be a non-negative integer, got {work_limit!r}")
        self.work_limit = work_limit

    def options(self) -> dict[str, object]:
        return {"work_limit": self.work_limit}

    def legal_actions(self, state: StackBufferState) -> list[str]:
        depth = len(state.stack)
        legal = [SHIFT] if state.b < len(state.heads) else []
        if depth > 2:
            legal.append(LEFT)
        if depth > 1:
            legal.append(RIGHT)
        return legal

    def apply(self, state: StackBufferState, action: str, label: str | None = None) -> None:
        stack = state.stack
        if action == SHIFT:
            stack.append(state.b)
            state.b += 1
        elif action == LEFT:
            dep = stack.pop(-2)
            state.add_arc(stack[-1], dep, label)
        elif action == RIGHT:
            dep = stack.pop()
            state.add_arc(stack[-1], dep, label)
        else:
            raise ValueError(f"arc-standard has no action {action!r}")

    def arc_of(self, state: StackBufferState, action: str) -> tuple[int, int]:
        if action == LEFT:
            return state.stack[-1], state.stack[-2]
        if action == RIGHT:
            return state.stack[-2], state.stack[-1]
        raise ValueError(f"{action!r} builds no arc")

    def features(self, state: StackBufferState) -> list[int]:
        return [*stack_top(state.stack, 3), state.b0()]

    def can_build(self, gold_heads: Sequence[int]) -> bool:
        return is_projective(gold_heads)

    def static_oracle(self, gold_heads: Sequence[int]) -> ArcStandardStaticOracle:
        return ArcStandardStaticOracle(gold_heads)

    def dynamic_oracle(self, gold_heads: Sequence[int]) -> ArcStandardDynamicOracle:
        return ArcStandardDynamicOracle(gold_heads, work_limit=self.work_limit)


class ArcStandardStaticOracle:
    """Reduce the top two words as soon as the dependent has all its
    dependents (left before right); shift otherwise."""

    def __init__(self, gold_heads: Sequence[int]):
        self.gold = list(gold_heads)
        self.kids = children(gold_heads)

    def next_action(self, state: StackBufferState) -> str:
        stack = state.stack
        if len(stack) > 1:
            s0, s1 = stack[-1], stack[-2]
            if s1 != ROOT and self.gold[s1] == s0 and has_all_dependents(state.heads, self.kids, s1):
                return LEFT
            if self.gold[s0] == s1 and has_all_dependents(state.heads, self.kids, s0):
                return RIGHT
        return SHIFT


class ArcStandardDynamicOracle:
    """Exact costs for any gold tree (Nederhof 2019, section 4: the best tree
    derivable from each successor, found by a cubic chart over stack and
    buffer).  With a projective gold tree the buffer is first cut down to its
    critical words (section 5, properties 1-3), and the best tree over stack
    and critical words comes from the linear-time recursion of section 6
    (:class:`._arc_standard_linear.ProjectiveReduction`), or from the cubic
    chart with ``linear=False``.

    ``cost(a) = best - score(a)`` where ``score(a)`` is the number of gold arcs
    the successor of ``a`` can still add (its own arc included): the loss of
    a state is the best loss of its successors, and arcs already built are
    common to all of them.  No state is copied: successors are only described
    by their unit sequences, and their charts run as one batch.  For a
    non-projective gold tree the spans inside the buffer come from one chart
    over the whole sentence, built on first use.

    A call whose estimated :meth:`work` exceeds ``work_limit`` returns
    :meth:`approximate_costs` instead and is counted in ``fallbacks``;
    ``work_limit=0`` always falls back.
    """

    def __init__(self, gold_heads: Sequence[int], *, use_projective_shortcut: bool = True, linear: bool = True,
                 work_limit: int = WORK_LIMIT):
        self.gold = list(gold_heads)
        self.linear = linear
        self.work_limit = work_limit
        self.fallbacks = 0
        self._kids = children(gold_heads)
        self._plain_gold = self.gold[:]
        self._plain_gold[0] = -1  # the root has no head
        n = len(self.gold) - 1
        # one extra id, n + 1, pads short unit sequences in the shared chart
        gold = np.array(self.gold + [-2], dtype=np.int64)
        gold[0] = -2  # the root has no head
        self._gold = gold
        self.projective = use_projective_shortcut and is_projective(gold_heads)
        if self.projective:
            self._span_start = descendant_spans(gold_heads)[0]
            self._critical: dict[int, tuple[list[int], int]] = {}
            self._memos: dict[int, tuple[tuple[int, ...], list[dict[tuple[int, int], int]]]] = {}
        self._words: WordChart | None = None  # built on first use, for non-projective gold
        self._n = n

    def costs(self, state: StackBufferState) -> dict[str, int]:
        stack, b = state.stack, state.b
        if self.work(stack, b) > self.work_limit:
            self.fallbacks += 1
            return self.approximate_costs(state)
        gold = self.gold
        actions, gains, stacks, buffer_starts = [], [], [], []
        if b <= self._n:
            actions.append(SHIFT)
            gains.append(0)
            stacks.append(stack + [b])
            buffer_starts.append(b + 1)
        if len(stack) > 1:
            rest = stack[:-2]
            s1, s0 = stack[-2], stack[-1]
            if len(stack) > 2:
                actions.append(LEFT)
                gains.append(int(gold[s1] == s0))
                stacks.append(rest + [s0])
                buffer_starts.append(b)
            actions.append(RIGHT)
            gains.append(int(gold[s0] == s1))
            stacks.append(rest + [s1])
            buffer_starts.append(b)
        if self.projective and self.linear:
            bests = self._best_by_recursion(stack, b, actions)
        else:
            bests = self._best(stacks, buffer_starts, b)
        scores = [gain + best for gain, best in zip(gains, bests)]
        top = max(scores)
        return {action: top - score for action, score in zip(actions, scores)}

    def work(self, stack: list[int], b: int) -> int:
        """Estimated work of an exact call, known from the sizes of its
        configurations (units of about 1 µs): for the linear recursion, ``RECURSION_UNITS``
        per unit of its two configurations (before and after a shift); for
        the chart, its split points (:func:`._arc_standard_dp.chart_work`),
        with the sentence's word chart, built once, spread over its ``2 n``
        calls."""
        units = len(stack) + 1
        if self.projective and self.linear:
            critical = sum(len(self._critical_words(start)[0]) for start in (b, b + 1))
            return RECURSION_UNITS * (2 * units + critical)
        if self.projective:
            splits = chart_work(units + len(self._critical_words(b)[0]), units)
        else:
            splits = chart_work(units + self._n + 1 - b, units)
            if self._words is None:
                splits += chart_work(self._n + 1, self._n + 1) // (2 * self._n)
        return 1 + 3 * splits // CHART_SPLITS_PER_UNIT

    def approximate_costs(self, state: StackBufferState) -> dict[str, int]:
        """O(degree) costs for calls over the work budget: the gold arcs each
        action makes unreachable one by one, as Goldberg & Nivre (2013) count
        them for the arc-decomposable systems.  A reduction loses the popped
        word's gold head unless it is the new head or already attached, and
        the popped word's unattached gold dependents; ``shift`` loses one arc
        when it passes up a reduction that loses nothing (``b0`` must then go
        under ``s0`` or take it) while ``b0``'s own gold head is still
        attachable.  Arc-standard is not arc-decomposable, so these are not
        the true costs; the least is subtracted, so some action costs 0."""
        stack, b, heads = state.stack, state.b, state.heads
        prices = {}
        if len(stack) > 2:
            prices[LEFT] = self._arcs_lost(stack[-2], stack[-1], b, heads)
        if len(stack) > 1:
            prices[RIGHT] = self._arcs_lost(stack[-1], stack[-2], b, heads)
        if b <= self._n:
            free = 0 in prices.values()
            prices[SHIFT] = int(free and self._attachable(self.gold[b], b, heads))
        best = min(prices.values())
        return {action: price - best for action, price in prices.items()}

    def _arcs_lost(self, dep: int, head: int, b: int, heads: Sequence[int]) -> int:
        """Gold arcs of ``dep`` that become unbuildable when it is attached to
        ``head`` and popped."""
        gold_head = self.gold[dep]
        lost = int(gold_head != head and self._attachable(gold_head, b, heads))
        return lost + sum(1 for kid in self._kids[dep] if self._attachable(kid, b, heads))

    @staticmethod
    def _attachable(word: int, b: int, heads: Sequence[int]) -> bool:
        """``word`` is in the buffer or on the stack (a word left of ``b`` is
        on the stack exactly when it has no head yet; the root always is)."""
        return word >= b or heads[word] == NO_HEAD

    def _best_by_recursion(self, stack: list[int], b: int, actions: list[str]) -> list[int]:
        """Most gold arcs still derivable after each action, with the linear
        recursion of section 6 on stack and critical words.  ``left`` and
        ``right`` start inside one recursion over the current configuration
        (they are its first moves, so they share its memo); ``shift`` needs
        the configuration after it.  Memo levels carry over between calls
        (see :meth:`_reduction`)."""
        found = []
        k = len(stack) - 1
        if SHIFT in actions:
            after_shift = self._reduction(stack + [b], b + 1)
            found.append(after_shift.settled + after_shift.best_from(k, b))
        if k > 0:
            here = self._reduction(stack, b)
            if LEFT in actions:
                found.append(here.settled + here.best_from(k - 2, stack[-1]))
            found.append(here.settled + here.best_from(k - 2, stack[-2]))
        return found

    def _reduction(self, stack: list[int], b: int) -> ProjectiveReduction:
        """The recursion for a configuration, sharing the memo levels of the
        last configuration with the same buffer up to where the stacks differ
        (consecutive configurations differ only near the top)."""
        critical, settled = self._critical_words(b)
        old_stack, memo = self._memos.get(b, ((), []))
        same = 0
        for old, new in zip(old_stack, stack):
            if old != new:
                break
            same += 1
        del memo[same:]
        if b not in self._memos and len(self._memos) >= 4:
            self._memos.clear()
        self._memos[b] = (tuple(stack), memo)
        return ProjectiveReduction(self._plain_gold, stack, critical, settled, memo)

    def _best(self, stacks: list[list[int]], buffer_starts: list[int], b: int) -> list[int]:
        """Most gold arcs still derivable from each successor, given by its
        stack and the start of its buffer; ``b`` starts the current buffer,
        so without the projective shortcut every unit sequence ends with the
        words ``b..n``."""
        if self.projective:
            rows, settled = [], []
            for stack, start in zip(stacks, buffer_starts):
                buffer, other = self._critical_words(start)
                rows.append(stack + buffer)
                settled.append(other)
            words = None
        else:
            rows = [stack + list(range(start, self._n + 1)) for stack, start in zip(stacks, buffer_starts)]
            settled = [0] * len(rows)
            if self._words is None:
                self._words = WordChart(self._gold)
            words = (self._words, b, [len(row) - (self._n + 1 - b) for row in rows])
        tops = [len(stack) - 1 for stack in stacks]
        lasts = [len(row) - 1 for row in rows]
        found = best_gold_arcs(gold_weights(rows, self._gold), tops, lasts, words)
        return [other + best for other, best in zip(settled, found)]

    def _critical_words(self, b: int) -> tuple[list[int], int]:
        """Buffer words whose gold head or some gold descendant lies outside the
        buffer (the paper's critical nodes), and how many other words there are.
        The gold tree is projective, so a word's descendants are the span
        starting at ``_span_start``.  Kept per ``b``: consecutive states often
        share their buffer."""
        if b not in self._critical:
            gold, start, n = self.gold, self._span_start, self._n
            critical = [w for w in range(b, n + 1) if gold[w] < b or start[w] < b]
            self._critical[b] = (critical, n + 1 - b - len(critical))
        return self._critical[b]
