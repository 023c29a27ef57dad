"""The tabular part of the arc-standard dynamic oracle (Nederhof 2019,
"Calculating the optimal step in shift-reduce dependency parsing: from cubic
to linear time", TACL, sections 3 and 4).

From a configuration with stack ``a0..ak`` and buffer ``b1..bm`` the parser
can still derive exactly the projective trees over the *units*
``a0..ak b1..bm`` rooted in ``a0`` in which every stack element ``ai``
(``0 < i < k``) that receives a left dependent, or is itself attached to a
head on its left, ends up dominating ``ak``.  (Such an ``ai`` must come back
to the top of the stack, which only happens once ``ak`` has been reduced into
it.)  Every other stack element below the top is a leaf whose head lies to its
right.  This is the language of the paper's grammar of table 4 written as a
constraint; ``tests/test_arc_standard.py`` checks it against exhaustive
search.  (The condition on left heads is needed: with stack ``0 a1 a2 a3``,
``a1 -> a2`` and ``0 -> a3`` is projective but cannot be derived.)

:func:`best_gold_arcs` finds the largest number of gold arcs in such a tree
with Eisner's split-head chart (the paper's table 2), vectorised over all
spans of one width at a time, so one call costs O(N) numpy operations on
O(N^2) data for N units, and the successors of a state share them.  Only two
rules differ from unconstrained projective parsing:

* a stack element below the top that is a right dependent must have its
  right half reach the top (``cr_by_end_as_dep`` has no trivial right half
  for it);
* a stack element below the top with a non-trivial left half that is a left
  dependent must have its right half reach the top (``il_reach_by_end``).

Charts are kept twice, indexed ``[start, width]`` and ``[end, width]``, so
that all split points of all spans of one width are one slice each.

Spans that lie wholly in the buffer (the top of a shifted successor included)
obey no constraint, and for a buffer of consecutive words they are the same
in every state of a sentence: :class:`WordChart` computes them once per
sentence and :func:`best_gold_arcs` copies them in and only computes the
spans that start in the stack.
"""
from __future__ import annotations

from bisect import bisect_left

import numpy as np

NEG = -np.inf


def gold_weights(unit_rows: list[list[int]], gold: np.ndarray) -> np.ndarray:
    """``w[c, h, d] = 1`` if unit ``d``'s gold head is unit ``h`` in unit sequence
    ``c``, else 0.  The first unit (the root) can never be a dependent, so its
    column is ``-inf``.  Shorter sequences are padded with the id
    ``len(gold) - 1``, which ``gold`` must reserve: it heads nothing and its own
    gold head matches no unit."""
    size = max(len(row) for row in unit_rows)
    pad = len(gold) - 1
    units = np.array([row + [pad] * (size - len(row)) for row in unit_rows], dtype=np.int64)
    weights = (gold[units][:, None, :] == units[:, :, None]).astype(np.float64)
    weights[:, :, 0] = NEG
    return weights


class _Charts:
    """Eisner's four span types for a batch of unit sequences (see module)."""

    def __init__(self, weights: np.ndarray, tops: list[int]):
        count, size = weights.shape[0], weights.shape[1]
        shape = (count, size, size)
        self.weights, self.size = weights, size
        self.cr_by_start = np.full(shape, NEG)
        self.cr_by_end_as_dep = np.full(shape, NEG)  # right halves usable under a left head
        self.cl_by_start = np.full(shape, NEG)
        self.cl_by_end = np.full(shape, NEG)
        self.ir_by_start = np.full(shape, NEG)
        self.il_by_end = np.full(shape, NEG)
        self.il_reach_by_end = np.full(shape, NEG)  # left-dependent arcs whose dependent reaches the top
        self.cr_by_start[:, :, 0] = 0.0
        self.cl_by_start[:, :, 0] = 0.0
        self.cl_by_end[:, :, 0] = 0.0
        position = np.arange(size)
        top = np.array(tops)[:, None, None]
        self.below_top = (position[:, None] + position[None, :])[None] < top  # [c, i, m]: i + m below the top
        self.tainted = self.below_top & (position > 0)  # non-trivial left half of a stack word below the top
        self.cr_by_end_as_dep[:, :, 0] = np.where((position[None] >= 1) & (position[None] < top[:, 0]), NEG, 0.0)

    def copy_word_spans(self, words: "WordChart", first_word: int, starts: list[int]) -> None:
        """Fill in the spans of sequence ``c`` that start at or after position
        ``starts[c]``, where the words ``first_word, first_word + 1, ...`` lie."""
        size = self.size
        for c, start in enumerate(starts):
            length = words.n + 1 - first_word
            inside = words.triangle[:length, :size]  # width at most the offset from ``start``
            for local, whole in ((self.cl_by_end, words.cl_by_end), (self.il_by_end, words.il_by_end),
                                 (self.il_reach_by_end, words.il_by_end),
                                 (self.cr_by_end_as_dep, words.cr_by_end)):
                local[c, start:start + length] = np.where(inside, whole[first_word:, :size], NEG)

    def fill(self, row_limit: int) -> None:
        """Compute every span that starts before position ``row_limit``."""
        weights, size = self.weights, self.size
        cr_by_start, cr_by_end_as_dep = self.cr_by_start, self.cr_by_end_as_dep
        cl_by_start, cl_by_end = self.cl_by_start, self.cl_by_end
        ir_by_start, il_by_end, il_reach_by_end = self.ir_by_start, self.il_by_end, self.il_reach_by_end
        below_top, tainted = self.below_top, self.tainted
        position = np.arange(size)
        # arc weights by [start, width]: right arcs start -> start + width, left arcs the reverse
        ends = np.minimum(position[:, None] + position[None, :], size - 1)
        right_arcs = weights[:, position[:, None], ends]
        left_arcs = weights[:, ends, position[:, None]]
        most = np.maximum.reduce
        for width in range(1, size):
            rows = min(size - width, row_limit)
            split = cr_by_start[:, :rows, :width] + cl_by_end[:, width:width + rows, width - 1::-1]
            right_arc = right_arcs[:, :rows, width]
            left_arc = left_arcs[:, :rows, width]
            best_split = most(split, axis=2)
            ir_by_start[:, :rows, width] = best_split + right_arc
            il_by_end[:, width:width + rows, width] = best_split + left_arc
            reach = most(np.where(below_top[:, :rows, :width], NEG, split), axis=2)
            il_reach_by_end[:, width:width + rows, width] = reach + left_arc
            left_halves = np.where(tainted[:, :rows, :width], il_reach_by_end[:, width:width + rows, width:0:-1],
                                   il_by_end[:, width:width + rows, width:0:-1])
            cl = most(cl_by_start[:, :rows, :width] + left_halves, axis=2)
            cl_by_start[:, :rows, width] = cl
            cl_by_end[:, width:width + rows, width] = cl
            cr = most(ir_by_start[:, :rows, 1:width + 1] + cr_by_end_as_dep[:, width:width + rows, width - 1::-1],
                      axis=2)
            cr_by_start[:, :rows, width] = cr
            cr_by_end_as_dep[:, width:width + rows, width] = cr


class WordChart:
    """The unconstrained spans over the words ``1..n`` of one sentence, by
    end word and width, for :func:`best_gold_arcs` to copy from."""

    def __init__(self, gold: np.ndarray):
        self.n = n = len(gold) - 2  # ``gold`` reserves a padding id
        charts = _Charts(gold_weights([list(range(n + 1))], gold), [0])
        charts.fill(n + 1)
        self.cl_by_end = charts.cl_by_end[0]
        self.il_by_end = charts.il_by_end[0]
        self.cr_by_end = charts.cr_by_end_as_dep[0]
        self.triangle = np.arange(n + 1)[None, :] <= np.arange(n + 1)[:, None]


def best_gold_arcs(weights: np.ndarray, tops: list[int], lasts: list[int],
                   words: tuple[WordChart, int, list[int]] | None = None) -> list[int]:
    """For each unit sequence ``c`` (``weights[c]``, padded to a common size),
    the largest total weight of a tree the parser can still derive over its
    units ``0..lasts[c]`` when units ``0..tops[c]`` are the stack (``tops[c]``
    its top) and the rest the buffer.  The sequences share every numpy call,
    which is what the successors of one state need.

    ``words = (chart, first_word, starts)`` says that from position
    ``starts[c]`` (after the stack, or its top) sequence ``c`` holds the
    consecutive words ``first_word..n``; their spans are then copied from
    ``chart`` instead of computed.
    """
    charts = _Charts(weights, tops)
    row_limit = charts.size
    if words is not None:
        chart, first_word, starts = words
        charts.copy_word_spans(chart, first_word, starts)
        row_limit = max(starts)
    charts.fill(row_limit)
    count = weights.shape[0]
    return [int(best) for best in charts.cr_by_start[np.arange(count), 0, lasts].tolist()]


class ProjectiveReduction:
    """Most gold arcs still derivable from a configuration when the gold tree
    is projective, for Nederhof 2019, section 6 (linear time).  The section's
    tables are missing from our copy, so the recursion is our own; its pruning
    rules are the ones the section's prose gives (lambda and kappa) plus a few
    exchange arguments of the same kind, and its exactness is checked against
    exhaustive search and against the cubic chart in
    ``tests/test_arc_standard.py``.

    Units are the stack ``a0..ak`` and the critical buffer words ``c0..cm-1``
    (section 5): every other buffer word already counts as getting its gold
    head.  Gold arcs between critical words only link neighbours ``c(t) <-
    c(t+1)`` (the buffer words that dominate word ``b - 1`` form chains,
    section 5's components), so the gold arcs inside any run ``c(p)..c(t)``
    are a prefix-sum difference (``chained``).

    ``_step(i, x, p)``: best count once the stack is ``a0..ai`` below one
    subtree headed by ``x`` (a stack word above ``ai`` or a critical word) that
    holds every unit between ``ai`` and ``c(p)``.  The moves are: ``x`` takes
    ``ai`` as left dependent, ``ai`` takes ``x`` (``ai`` becomes the head), or
    the buffer run ``c(p)..c(t)`` is built into one subtree headed by ``c(t)``
    (with all its gold arcs) that becomes a right dependent of ``x`` or the
    head of ``x``; once only the root is left (``i = -1``) it takes the rest
    of the buffer.  Without pruning this is the chart of section 4 restricted
    to spans that start in the stack; pruned, it keeps a few states per unit:

    * a non-gold ``x <- ai`` is only worth it while ``x`` has a gold arc to
      some ``al``, ``l < i`` (section 6's lambda); then, as projectivity leaves
      ``x`` no gold arc with the stack words between ``ai`` and the lowest one
      ``ai`` has a gold arc to, those all go under ``x`` at once (kappa);
    * ``x`` takes only its first remaining gold buffer dependent (skipping it
      would lose its arc, and it has no other gold arc outside the run);
    * a buffer word becomes the head of ``x`` only if it is ``x``'s gold head,
      or it is the first buffer word with a gold arc to ``a0..ai`` and it has
      one to ``ai`` itself (were it related only lower down, making ``ai``
      the head of ``x``, and so on down, would lose nothing);
    * buffer words before the first one related to ``a0..ai`` or ``x`` can
      only end in that word's run, so they are skipped with their chain arcs
      and states are keyed by that first related word.

    Each state costs a few look-ups.  On EWT training walks the recursion
    visits about 1.6 states per unit (at most 5); on random shift-heavy walks
    the mean grows from about 2 to 5 between 25 and 400 words.  So the time
    is linear in practice, but these rules are not proven linear in the worst
    case: the paper's bound rests on its exact tables (states kept for only
    O(1) tops per stack level), which we could not reconstruct.
    """

    def __init__(self, gold: list[int], stack: list[int], critical: list[int], settled: int = 0,
                 memo: list[dict[tuple[int, int], int]] | None = None):
        self.gold, self.stack, self.critical = gold, stack, critical
        self.settled = settled  # buffer words outside ``critical``, all given their gold heads
        k, m = len(stack) - 1, len(critical)
        self.m = m
        self.level = {word: l for l, word in enumerate(stack)}
        self.place = {word: t for t, word in enumerate(critical)}
        chained = [0] * max(m, 1)  # chained[t]: gold arcs inside c0..c(t)
        for t in range(1, m):
            chained[t] = chained[t - 1] + (gold[critical[t - 1]] == critical[t])
        self.chained = chained
        self._relate_buffer(k)
        self._relate_stack(k)
        root_kids = [0] * (m + 1)
        for t in range(m - 1, -1, -1):
            root_kids[t] = root_kids[t + 1] + (gold[critical[t]] == stack[0])
        self.root_kids = root_kids
        # memo[i][x, p]: a state's value depends only on a0..ai, x and the
        # buffer, so configurations with the same buffer and the same stack up
        # to ``ai`` may share the levels up to ``i``
        self.memo = [] if memo is None else memo
        self.memo.extend({} for _ in range(len(stack) - len(self.memo)))

    def _relate_buffer(self, k: int) -> None:
        """Per critical word: the stack levels it has a gold arc with, the
        lowest of them, and per stack word its gold dependents' places."""
        gold, level = self.gold, self.level
        self.related: list[set[int]] = []
        self.kids: dict[int, list[int]] = {}
        for t, word in enumerate(self.critical):
            levels = {level[gold[word]]} if gold[word] in level else set()
            self.related.append(levels)
            if gold[word] in level:
                self.kids.setdefault(gold[word], []).append(t)
        for l, word in enumerate(self.stack):
            if gold[word] in self.place:
                self.related[self.place[gold[word]]].add(l)
        self.lowest = [min(levels) if levels else k + 1 for levels in self.related]
        self.tied = [t for t in range(self.m) if self.related[t]]

    def _relate_stack(self, k: int) -> None:
        """``below[l]``: the lowest stack level under ``al`` with a gold arc to
        ``al`` (``None`` if there is none)."""
        gold, level = self.gold, self.level
        below: list[int | None] = [None] * (k + 1)
        for l, word in enumerate(self.stack):
            head_level = level.get(gold[word])
            if head_level is None:
                continue
            low, high = min(l, head_level), max(l, head_level)
            if below[high] is None or low < below[high]:
                below[high] = low
        self.below = below

    def lowest_relation(self, x: int) -> int | None:
        if x in self.place:
            low = self.lowest[self.place[x]]
            return low if low < len(self.stack) else None
        return self.below[self.level[x]]

    def first_kid(self, x: int, p: int) -> int:
        kids = self.kids.get(x)
        if not kids:
            return self.m
        at = bisect_left(kids, p)
        return kids[at] if at < len(kids) else self.m

    def head_place(self, x: int, p: int) -> int:
        t = self.place.get(self.gold[x], self.m)
        return t if t >= p else self.m

    def first_tied(self, i: int, p: int, skip: int) -> int:
        """First critical word from ``p`` on, other than ``c(skip)``, with a
        gold arc to ``a0..ai``."""
        tied, lowest = self.tied, self.lowest
        for at in range(bisect_left(tied, p), len(tied)):
            t = tied[at]
            if lowest[t] <= i and t != skip:
                return t
        return self.m

    def best_from(self, i: int, x: int) -> int:
        """Best count (critical part only) once ``a(i+1)..ak`` all lie in one
        subtree headed by ``x``, before any buffer word is touched; results
        stay valid across calls, so one instance serves several successors."""
        return self._step(i, x, 0)

    def _step(self, i: int, x: int, p: int) -> int:
        """Best count from stack ``a0..ai``, top head ``x``, buffer ``c(p)..``:
        the words before the first one related to ``a0..ai`` or ``x`` can only
        be built into that word's subtree, which keeps their chain arcs."""
        m, chained = self.m, self.chained
        if i == -1:
            return chained[m - 1] - chained[p] + self.root_kids[p] if p < m else 0
        if p >= m:
            first = kid = head = m
            skipped = 0
        else:
            kid, head = self.first_kid(x, p), self.head_place(x, p)
            first = min(kid, head, self.first_tied(i, p, m))
            skipped = chained[min(first, m - 1)] - chained[p]
        level = self.memo[i]
        known = level.get((x, first))
        if known is None:
            known = level[x, first] = self._moves(i, x, first, kid, head)
        return skipped + known

    def _moves(self, i: int, x: int, p: int, kid: int, head: int) -> int:
        """The best of the moves listed in the class docstring; ``kid`` and
        ``head`` are the places of ``x``'s first gold dependent and its gold
        head in the buffer from ``p`` on (``m`` if none)."""
        gold, stack, m, chained = self.gold, self.stack, self.m, self.chained
        below = stack[i]
        best = (gold[x] == below) + self._step(i - 1, below, p)
        x_low = self.lowest_relation(x)
        if i >= 1:
            if gold[below] == x:
                best = max(best, 1 + self._step(i - 1, x, p))
            elif x_low is not None and x_low < i:
                jump = self.below[i]
                best = max(best, self._step(i - 1 if jump is None else jump, x, p))
        if kid < m:
            best = max(best, chained[kid] - chained[p] + 1 + self._step(i, x, kid + 1))
        if x != stack[0]:
            if head < m:
                best = max(best, chained[head] - chained[p] + 1 + self._step(i, self.critical[head], head + 1))
            tied = self.first_tied(i, p, head)
            if tied < m and i in self.related[tied]:
                best = max(best, chained[tied] - chained[p] + self._step(i, self.critical[tied], tied + 1))
        return best
