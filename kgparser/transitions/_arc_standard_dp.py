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
    weights: np.ndarray = (gold[units][:, None, :] == units[:, :, None]).astype(np.float64)
    weights[:, :, 0] = NEG
    return weights


def chart_work(size: int, rows: int) -> int:
    """Split points the chart of one unit sequence of ``size`` units tries
    when it computes the spans that start in its first ``rows`` positions
    (``_Charts.fill``): at most ``rows`` spans of each width ``w``, with
    ``w`` split points each; about ``rows * size**2 / 2``."""
    return rows * size * size // 2


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

    def copy_word_spans(self, words: WordChart, first_word: int, starts: list[int]) -> None:
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
