"""Per-word tables over the constraint forest (the constrained arcs, which
are acyclic and do not cross once checked), for
:class:`~kgparser.constraints.arc_eager.ConstrainedArcEager`."""
from __future__ import annotations

from typing import Iterable, Sequence


def rightmost_reached(heads: Sequence[int], own: Sequence[int], deps: Iterable[int]) -> list[int]:
    """For each word, the rightmost of ``own[w]`` over the words ``w`` of its
    subtree in the (acyclic) constraint forest ``heads``, whose words with a
    head among words are ``deps``."""
    reach = list(own)
    if not deps:
        return reach
    depth = _depths(heads, deps)
    for d in sorted(deps, key=depth.__getitem__, reverse=True):  # dependents before their heads
        if reach[d] > reach[heads[d]]:
            reach[heads[d]] = reach[d]
    return reach


def _depths(heads: Sequence[int], deps: Iterable[int]) -> list[int]:
    """Depth of each word in the (acyclic) constraint forest ``heads`` (``0``
    for a word without a constrained head among words), found for ``deps``
    and their ancestors, each word climbed once."""
    depth = [-1] * len(heads)
    for d in deps:
        path, word = [], d
        while depth[word] < 0 and heads[word] > 0:
            path.append(word)
            word = heads[word]
        level = max(depth[word], 0)
        depth[word] = level
        for w in reversed(path):
            level += 1
            depth[w] = level
    return depth


def covering_arc_ends(heads: Sequence[int], deps: Iterable[int]) -> list[int]:
    """For each word, the right end of the innermost constrained arc strictly
    over it (the root counts as position ``n + 1``; ``n + 1`` if none): a word
    under an arc is dominated by the arc's head, so a head it takes from the
    right lies at or before that end.  The arcs do not cross (checked), so
    writing the arcs' ends over their inner words, longest arc first, leaves
    each word the end of the innermost one (arcs from the root change
    nothing: their end is ``n + 1``); ``deps``: the words with a head among
    words."""
    n = len(heads) - 1
    ends = [n + 1] * (n + 1)
    arcs = sorted(((min(heads[d], d), max(heads[d], d)) for d in deps), key=lambda arc: arc[0] - arc[1])
    for left, right in arcs:
        ends[left + 1:right] = [right] * (right - left - 1)
    return ends
