"""Tree utilities shared by every system and oracle (no torch).

A tree is given by its heads: a sequence of length ``n + 1`` whose entry
``d`` is the head of word ``d`` (``0`` is the root; entry ``0`` is ignored).
"""
from __future__ import annotations

import random
from typing import Callable, Iterator, Sequence

from .base import NO_HEAD, ROOT


def arcs(heads: Sequence[int]) -> set[tuple[int, int]]:
    """The set of ``(head, dependent)`` arcs of a (partial) tree."""
    return {(h, d) for d, h in enumerate(heads) if d > 0 and h != NO_HEAD}


def children(heads: Sequence[int]) -> list[list[int]]:
    """``children[h]``: the dependents of ``h`` in increasing order."""
    kids: list[list[int]] = [[] for _ in heads]
    for d in range(1, len(heads)):
        if heads[d] != NO_HEAD:
            kids[heads[d]].append(d)
    return kids


def has_all_dependents(heads: Sequence[int], gold_children: Sequence[Sequence[int]], word: int) -> bool:
    """Whether every gold dependent of ``word`` already hangs from it in ``heads``
    (the static oracles reduce a word only then)."""
    return all(heads[k] == word for k in gold_children[word])


def find_cycle(heads: Sequence[int]) -> list[int] | None:
    """Words on a cycle of head links, or ``None`` if there is none."""
    n = len(heads) - 1
    colour = [0] * (n + 1)  # 0 unseen, 1 on the current path, 2 done
    for start in range(1, n + 1):
        path = []
        node = start
        while node > 0 and colour[node] == 0:
            colour[node] = 1
            path.append(node)
            node = heads[node]
        if node > 0 and colour[node] == 1:
            return path[path.index(node):]
        for p in path:
            colour[p] = 2
    return None


def tree_problem(heads: Sequence[int]) -> str | None:
    """Why ``heads`` is not a tree rooted at 0, or ``None`` if it is one."""
    n = len(heads) - 1
    for d in range(1, n + 1):
        if not isinstance(heads[d], int) or not 0 <= heads[d] <= n:
            return f"word {d} has head {heads[d]!r}, outside 0..{n}"
        if heads[d] == d:
            return f"word {d} is its own head"
    cycle = find_cycle(heads)
    if cycle:
        return "cycle " + " -> ".join(map(str, cycle + cycle[:1]))
    return None


def descendant_spans(heads: Sequence[int]) -> tuple[list[int], list[int]]:
    """Leftmost and rightmost word dominated by each node (itself included)."""
    n = len(heads) - 1
    lo = list(range(n + 1))
    hi = list(range(n + 1))
    for d in _bottom_up(heads):
        h = heads[d]
        if lo[d] < lo[h]:
            lo[h] = lo[d]
        if hi[d] > hi[h]:
            hi[h] = hi[d]
    return lo, hi


def _bottom_up(heads: Sequence[int]) -> list[int]:
    """Words ordered so that every word comes before its head."""
    depth = depths(heads)
    return sorted(range(1, len(heads)), key=lambda d: -depth[d])


def depths(heads: Sequence[int]) -> list[int]:
    """Distance of each node from the root (root: 0)."""
    n = len(heads) - 1
    depth = [-1] * (n + 1)
    depth[0] = 0
    for start in range(1, n + 1):
        path = []
        node = start
        while depth[node] < 0:
            path.append(node)
            node = heads[node]
        for p in reversed(path):
            depth[p] = depth[heads[p]] + 1
    return depth


def nonprojective_arcs(heads: Sequence[int]) -> list[tuple[int, int]]:
    """Arcs ``(h, d)`` with some word strictly between ``h`` and ``d`` that ``h``
    does not dominate (the usual definition, root at position 0)."""
    n = len(heads) - 1
    dominated = _dominance_counts(heads)
    result = []
    for d in range(1, n + 1):
        h = heads[d]
        lo, hi = (h, d) if h < d else (d, h)
        # every word strictly between is dominated by h iff the counts agree
        if dominated(h, lo + 1, hi - 1) != hi - lo - 1:
            result.append((h, d))
    return result


def _dominance_counts(heads: Sequence[int]) -> Callable[[int, int, int], int]:
    """A function ``f(h, i, j)``: how many words in ``i..j`` ``h`` dominates."""
    n = len(heads) - 1
    order = euler_order(heads)
    pos = [0] * (n + 1)
    for i, node in enumerate(order):
        pos[node] = i
    size = subtree_sizes(heads)

    def count(h: int, i: int, j: int) -> int:
        return sum(1 for k in range(i, j + 1) if pos[h] <= pos[k] < pos[h] + size[h])

    return count


def euler_order(heads: Sequence[int]) -> list[int]:
    """Nodes in depth-first pre-order from the root (children left to right)."""
    kids = children(heads)
    order, todo = [], [ROOT]
    while todo:
        node = todo.pop()
        order.append(node)
        todo.extend(reversed(kids[node]))
    return order


def subtree_sizes(heads: Sequence[int]) -> list[int]:
    size = [1] * len(heads)
    for d in _bottom_up(heads):
        size[heads[d]] += size[d]
    return size


def is_projective(heads: Sequence[int]) -> bool:
    """True iff no arc has a word between its ends that its head does not dominate."""
    return not nonprojective_arcs(heads)


def projective_order(heads: Sequence[int]) -> list[int]:
    """Words in the order of an in-order traversal of the tree (each head placed
    among its dependents by position); the order in which Swap-based parsers
    must see the words for the tree to become projective (Nivre 2009)."""
    kids = children(heads)
    order: list[int] = []

    def visit(node: int) -> None:
        for k in kids[node]:
            if k > node:
                break
            visit(k)
        if node != ROOT:
            order.append(node)
        for k in kids[node]:
            if k > node:
                visit(k)

    visit(ROOT)
    return order


def all_trees(n: int) -> Iterator[list[int]]:
    """Every tree over ``n`` words (heads lists), roots allowed to have several
    dependents; ``(n+1)^(n-1)`` of them, so keep ``n`` small."""
    import itertools

    for choice in itertools.product(range(n + 1), repeat=n):
        heads = [NO_HEAD, *choice]
        if all(heads[d] != d for d in range(1, n + 1)) and find_cycle(heads) is None:
            yield heads


def random_tree(n: int, rng: random.Random, *, single_root: bool = False) -> list[int]:
    """A random tree: words attach in random order to an already attached node."""
    order = list(range(1, n + 1))
    rng.shuffle(order)
    heads = [NO_HEAD] * (n + 1)
    attached = [ROOT]
    for i, d in enumerate(order):
        if single_root and i > 0:
            heads[d] = rng.choice(attached[1:])
        else:
            heads[d] = rng.choice(attached)
        attached.append(d)
    return heads


def random_projective_tree(n: int, rng: random.Random, *, single_root: bool = False) -> list[int]:
    """A random projective tree, built by recursively splitting spans."""
    heads = [NO_HEAD] * (n + 1)

    def build(lo: int, hi: int, head: int) -> None:
        # attach the words lo..hi to head as a sequence of subtrees
        while lo <= hi:
            end = rng.randint(lo, hi)
            top = rng.randint(lo, end)
            heads[top] = head
            build(lo, top - 1, top)
            build(top + 1, end, top)
            lo = end + 1

    if single_root and n > 0:
        top = rng.randint(1, n)
        heads[top] = ROOT
        build(1, top - 1, top)
        build(top + 1, n, top)
    else:
        build(1, n, ROOT)
    return heads
