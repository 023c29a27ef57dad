"""Optimal projectivization (Nederhof 2019, "Calculating the optimal step in
shift-reduce dependency parsing: from cubic to linear time", TACL, end of
section 3): replace a non-projective tree by a projective tree that shares
the largest possible number of arcs with it.

The projective tree is found by Eisner's cubic chart (the paper's table 2
with the grammar of table 3) where an arc scores 1 if it is in the original
tree, and read back from the chart.  Projective trees are returned unchanged
without building a chart, so a treebank with few non-projective trees costs
little more than reading it.

Rooting: if the original tree has exactly one dependent of the root, so does
the result (any projective tree with several root dependents can be turned
into one with a single root dependent without losing an original arc, because
at most one of those arcs is original); otherwise several are allowed.  Among
optimal choices of the root dependent the original one is preferred.

Labels: every word keeps its own label, whether or not its head changed (the
label says what the word is, and the new head is the closest projective
stand-in for the old one).  The only exception keeps ``root`` meaning "hangs
from the root": a word newly attached to the root gets ``root``, and a word
labelled ``root`` that no longer hangs from the root gets the underspecified
UD label ``dep``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from .errors import KgparserError
from .transitions.trees import children, tree_problem

ROOT_LABEL = "root"
UNKNOWN_LABEL = "dep"
NEG = -np.inf


class ProjectivizeError(KgparserError):
    """The input is not a dependency tree."""


@dataclass
class ProjectivizeSummary:
    """What :func:`projectivize_sentences` changed."""

    trees: int = 0
    changed_trees: int = 0
    words: int = 0
    changed_arcs: int = 0

    def __str__(self) -> str:
        return (f"{self.changed_trees} of {self.trees} trees changed, "
                f"{self.changed_arcs} of {self.words} arcs moved")


def is_projective_tree(heads: Sequence[int]) -> bool:
    """True iff the descendants of every node form an interval of positions
    (root 0 included), in time linear in the sentence length."""
    kids = children(heads)
    order = [0]
    for node in order:  # breadth-first: every head comes before its dependents
        order.extend(kids[node])
    lo = list(range(len(heads)))
    hi = lo[:]
    size = [1] * len(heads)
    for node in reversed(order[1:]):
        head = heads[node]
        size[head] += size[node]
        if lo[node] < lo[head]:
            lo[head] = lo[node]
        if hi[node] > hi[head]:
            hi[head] = hi[node]
    return all(hi[v] - lo[v] + 1 == size[v] for v in range(len(heads)))


def projectivize_tree(heads: Sequence[int], deprels: Sequence[str | None] | None = None
                      ) -> tuple[list[int], list[str | None], int]:
    """A projective tree with the most arcs in common with ``heads``.

    ``heads`` has length n+1 (entry 0 ignored, 0 = root); ``deprels`` likewise
    (or ``None``).  Returns the new heads, the new labels (see the module
    docstring for the label rule) and the number of words whose head changed.
    Raises :class:`ProjectivizeError` if ``heads`` is not a tree.
    """
    n = len(heads) - 1
    heads = [-1] + [int(h) for h in heads[1:]]
    labels: list[str | None] = list(deprels) if deprels is not None else [None] * (n + 1)
    if len(labels) != n + 1:
        raise ProjectivizeError(f"{len(labels)} labels for {n} words (expected n+1 entries)")
    problem = tree_problem(heads)
    if problem:
        raise ProjectivizeError(f"not a dependency tree: {problem}")
    if is_projective_tree(heads):
        return heads, labels, 0
    new_heads = _best_projective_heads(heads)
    changed = sum(1 for d in range(1, n + 1) if new_heads[d] != heads[d])
    return new_heads, _carry_labels(heads, new_heads, labels), changed


def _carry_labels(old: list[int], new: list[int], labels: list[str | None]) -> list[str | None]:
    result = labels[:]
    for d in range(1, len(new)):
        if new[d] == 0 and old[d] != 0:
            result[d] = ROOT_LABEL
        elif new[d] != 0 and old[d] == 0 and labels[d] == ROOT_LABEL:
            result[d] = UNKNOWN_LABEL
    return result


def projectivize_sentences(sentences: Iterable) -> ProjectivizeSummary:
    """Projectivize every :class:`kgparser.io.conllu.Sentence` in place (only
    non-projective trees are rewritten) and say how much changed."""
    summary = ProjectivizeSummary()
    for sentence in sentences:
        summary.trees += 1
        summary.words += len(sentence.heads) - 1
        try:
            new_heads, new_labels, changed = projectivize_tree(sentence.heads, sentence.deprels)
        except ProjectivizeError as error:
            where = f"{getattr(sentence, 'source', '<sentences>')}:{getattr(sentence, 'line', '?')}"
            raise ProjectivizeError(f"{where}: {error}") from error
        if changed:
            sentence.set_tree(new_heads, new_labels)
            summary.changed_trees += 1
            summary.changed_arcs += changed
    return summary


def _best_projective_heads(heads: list[int]) -> list[int]:
    """Eisner's chart over nodes 0..n with arc weights 1 for original arcs,
    then the arcs of a best tree read back from the split points."""
    chart = _EisnerChart(heads)
    result = [-1] * len(heads)
    root_kids = [d for d in range(1, len(heads)) if heads[d] == 0]
    if len(root_kids) == 1:
        chart.read_single_root(root_kids[0], result)
    else:
        chart.read([("cr", 0, len(heads) - 1)], result)
    return result


class _EisnerChart:
    """Best scores of Eisner's four span types, with their split points.

    Arrays are indexed ``[start, width]`` (``*_by_start``) or ``[end, width]``
    (``*_by_end``) so that all split points of every span of one width are
    one slice; ``*_split`` hold the offset of the best split from the start.
    """

    def __init__(self, heads: list[int]):
        size = len(heads)
        self.size = size
        weights = np.zeros((size, size))
        deps = np.arange(1, size)
        weights[np.array(heads[1:]), deps] = 1.0
        weights[:, 0] = NEG  # the root is nobody's dependent
        self.weights = weights
        shape = (size, size)
        cr_by_start, cr_by_end = np.full(shape, NEG), np.full(shape, NEG)
        cl_by_start, cl_by_end = np.full(shape, NEG), np.full(shape, NEG)
        ir_by_start, il_by_end = np.full(shape, NEG), np.full(shape, NEG)
        arc_split = np.zeros(shape, dtype=np.int64)
        cl_split = np.zeros(shape, dtype=np.int64)
        cr_split = np.zeros(shape, dtype=np.int64)
        for chart in (cr_by_start, cr_by_end, cl_by_start, cl_by_end):
            chart[:, 0] = 0.0
        for width in range(1, size):
            rows = size - width
            split = cr_by_start[:rows, :width] + cl_by_end[width:, width - 1::-1]
            best = split.argmax(axis=1)
            arc_split[:rows, width] = best
            best_split = split[np.arange(rows), best]
            ir_by_start[:rows, width] = best_split + np.diagonal(weights, width)
            il_by_end[width:, width] = best_split + np.diagonal(weights, -width)
            cl_terms = cl_by_start[:rows, :width] + il_by_end[width:, width:0:-1]
            best = cl_terms.argmax(axis=1)
            cl_split[:rows, width] = best
            cl_by_start[:rows, width] = cl_by_end[width:, width] = cl_terms[np.arange(rows), best]
            cr_terms = ir_by_start[:rows, 1:width + 1] + cr_by_end[width:, width - 1::-1]
            best = cr_terms.argmax(axis=1)
            cr_split[:rows, width] = best + 1
            cr_by_start[:rows, width] = cr_by_end[width:, width] = cr_terms[np.arange(rows), best]
        self.cr_by_start, self.cl_by_start = cr_by_start, cl_by_start
        # plain lists: read back as Python ints, and faster to index one by one
        self.arc_split, self.cl_split, self.cr_split = arc_split.tolist(), cl_split.tolist(), cr_split.tolist()

    def read_single_root(self, original: int, heads: list[int]) -> None:
        """Best tree whose root has one dependent (the original one on ties)."""
        last = self.size - 1
        words = np.arange(1, self.size)
        scores = self.cl_by_start[1, words - 1] + self.cr_by_start[words, last - words] + self.weights[0, words]
        top = original if scores[original - 1] == scores.max() else int(words[scores.argmax()])
        heads[top] = 0
        self.read([("cl", 1, top), ("cr", top, last)], heads)

    def read(self, spans: list[tuple[str, int, int]], heads: list[int]) -> None:
        """Set ``heads`` to the arcs of the best derivation of each span:
        ``("cr", i, j)`` headed by ``i``, ``("cl", i, j)`` headed by ``j``."""
        todo = spans[:]
        while todo:
            kind, i, j = todo.pop()
            width = j - i
            if width == 0:
                continue
            if kind == "cr":
                k = i + self.cr_split[i][width]
                heads[k] = i
                todo.append(("arc", i, k))
                todo.append(("cr", k, j))
            elif kind == "cl":
                k = i + self.cl_split[i][width]
                heads[k] = j
                todo.append(("cl", i, k))
                todo.append(("arc", k, j))
            else:  # the two halves under an arc between i and j
                k = i + self.arc_split[i][width]
                todo.append(("cr", i, k))
                todo.append(("cl", k + 1, j))
