"""Plane assignment for the 2-Planar system (:mod:`kgparser.transitions.two_planar`):
the crossing graph of a tree's word-to-word arcs, the test for 2-planarity
(the graph is bipartite; Gómez-Rodríguez & Nivre 2010, section 2), the
2-planar subset the oracles use for other trees (Fernández-González &
Gómez-Rodríguez 2018, footnote 4) and the canonical plane assignment of the
static oracle that the dynamic oracle is exact against (2018, section 3;
described in full in the system's module docstring)."""
from __future__ import annotations

from typing import Sequence

from .base import NO_HEAD, ROOT

#: the plane of a word whose gold arc has none (root arcs, arcs left out of the 2-planar subset)
NO_PLANE = -1

def _span(heads: Sequence[int], dep: int) -> tuple[int, int]:
    head = heads[dep]
    return (head, dep) if head < dep else (dep, head)


def word_arcs(heads: Sequence[int], root_arcs: bool = False) -> list[int]:
    """Dependents of the arcs between two nodes (missing heads excluded, and
    root arcs unless ``root_arcs``: with the system's root node, node 0 is a
    word of the parser); an arc is named by its dependent."""
    return [d for d in range(1, len(heads)) if heads[d] != NO_HEAD and (root_arcs or heads[d] != ROOT)]


def crossing_graph(heads: Sequence[int], deps: Sequence[int]) -> dict[int, list[int]]:
    """``graph[d]``: the arcs (named by dependent) among ``deps`` that cross
    the arc into ``d``.  Two arcs cross when
    exactly one end of one lies strictly inside the other; arcs sharing an end
    never cross."""
    spans = sorted((_span(heads, d), d) for d in deps)
    graph: dict[int, list[int]] = {d: [] for d in deps}
    for i, ((lo1, hi1), d1) in enumerate(spans):
        for (lo2, hi2), d2 in spans[i + 1:]:
            if lo2 >= hi1:
                break
            if lo1 < lo2 < hi1 < hi2:
                graph[d1].append(d2)
                graph[d2].append(d1)
    return graph


def is_two_planar(heads: Sequence[int], root_arcs: bool = False) -> bool:
    """True iff the word-to-word arcs (and the root arcs, with ``root_arcs``)
    split into two sets of non-crossing arcs, i.e. their crossing graph is
    bipartite (Gómez-Rodríguez & Nivre 2010, section 2)."""
    graph = crossing_graph(heads, word_arcs(heads, root_arcs))
    colour: dict[int, int] = {}
    for start in graph:
        if start in colour:
            continue
        colour[start] = 0
        todo = [start]
        while todo:
            arc = todo.pop()
            for other in graph[arc]:
                if other not in colour:
                    colour[other] = 1 - colour[arc]
                    todo.append(other)
                elif colour[other] == colour[arc]:
                    return False
    return True


def two_planar_subset(heads: Sequence[int], root_arcs: bool = False) -> list[int]:
    """The gold tree with the arcs that break 2-planarity removed (their
    dependents get :data:`NO_HEAD`): word-to-word arcs (with ``root_arcs``,
    the root arcs first, so that the root word keeps its arc) are kept
    shortest first (ties: leftmost first) as long as the kept arcs' crossing graph stays
    bipartite, checked with a union-find that records each arc's parity
    relative to its component's representative.  A 2-planar tree comes back
    unchanged."""
    kept = list(heads)
    parent: dict[int, int] = {}
    parity: dict[int, int] = {}

    def find(arc: int) -> tuple[int, int]:
        """Representative of ``arc``'s component and ``arc``'s parity to it."""
        par = 0
        while parent[arc] != arc:
            par ^= parity[arc]
            arc = parent[arc]
        return arc, par

    order = sorted(word_arcs(heads, root_arcs),
                   key=lambda d: (heads[d] != ROOT, _span(heads, d)[1] - _span(heads, d)[0], _span(heads, d)))
    placed: list[int] = []
    for dep in order:
        lo, hi = _span(heads, dep)
        crossing = [d for d in placed if _crosses(_span(heads, d), (lo, hi))]
        # each component touched must see the new arc opposite to all its crossing arcs
        wanted: dict[int, int] = {}
        consistent = True
        for other in crossing:
            top, par = find(other)
            if wanted.setdefault(top, par) != par:
                consistent = False
                break
        if not consistent:
            kept[dep] = NO_HEAD
            continue
        parent[dep], parity[dep] = dep, 0
        for top, par in wanted.items():
            # new arc gets parity 0 in its own component; make top's parity so
            # that every crossing arc ends up with parity 1 relative to ``dep``
            parent[top], parity[top] = dep, 1 ^ par
        placed.append(dep)
    return kept


def _crosses(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[0] < a[1] < b[1] or b[0] < a[0] < b[1] < a[1]


def canonical_planes(heads: Sequence[int], root_arcs: bool = False) -> list[int]:
    """The canonical plane (0 or 1) of each word-to-word arc of a 2-planar
    tree (and root arc, with ``root_arcs``), named by dependent;
    :data:`NO_PLANE` for missing heads and the other root arcs.

    The planes the static oracle builds the arcs in, starting with plane 0
    active (see the module docstring): for ``b = 1..n``, the arcs ``(x, b)``,
    ``x < b``, nearest ``x`` first; an arc whose crossing-graph component has
    no plane yet gives it one, the arc going to the active plane; afterwards
    the active plane flips if some arc of ``b`` is in the other plane."""
    n = len(heads) - 1
    deps = word_arcs(heads, root_arcs)
    graph = crossing_graph(heads, deps)
    ending_at: list[list[int]] = [[] for _ in range(n + 1)]
    for d in deps:
        lo, hi = _span(heads, d)
        ending_at[hi].append(d)
    plane = [NO_PLANE] * (n + 1)
    active = 0
    for b in range(1, n + 1):
        arcs_here = sorted(ending_at[b], key=lambda d: -_span(heads, d)[0])
        for d in arcs_here:
            if plane[d] == NO_PLANE:
                _colour_component(graph, plane, d, active)
        if any(plane[d] != active for d in arcs_here):
            active = 1 - active
    return plane


def _colour_component(graph: dict[int, list[int]], plane: list[int], start: int, colour: int) -> None:
    """Give ``start`` plane ``colour`` and the arcs crossing it, transitively,
    alternate planes (the component is bipartite)."""
    plane[start] = colour
    todo = [start]
    while todo:
        arc = todo.pop()
        for other in graph[arc]:
            if plane[other] == NO_PLANE:
                plane[other] = 1 - plane[arc]
                todo.append(other)
