"""Repairing what a final parser state holds into a valid UD tree.

A transition system's final state may leave words headless (every system
attaches them to the root, DESIGN.md), several words on the root, or, with a
decoding constraint that misbehaves, a cycle; the parser's output is always
one tree with exactly one root word labeled ``root``.
"""
from __future__ import annotations

from typing import Callable, Sequence

__all__ = ["FALLBACK_LABEL", "ROOT_LABEL", "to_valid_tree"]

ROOT_LABEL = "root"
FALLBACK_LABEL = "dep"


def to_valid_tree(heads: Sequence[int], labels: Sequence[str | None],
                  prefer: Callable[[list[int]], list[int]] | None = None) -> tuple[list[int], list[str | None]]:
    """A UD tree from whatever a final state holds: cycles are broken, exactly one
    word hangs from the root (label ``root``), every other headless or root-attached
    word is attached to that word (label ``dep`` unless it had one).  ``prefer``
    maps the root-attached words to those to choose the root from first."""
    n = len(heads) - 1
    heads = [-1] + [h if h is not None and 0 <= h <= n and h != d else -1 for d, h in enumerate(heads) if d > 0]
    labels = list(labels)
    _break_cycles(heads)
    top = [d for d in range(1, n + 1) if heads[d] == 0]
    labeled_root = [d for d in top if labels[d] == ROOT_LABEL]
    pending = [d for d in range(1, n + 1) if heads[d] == -1]
    if not n:
        return heads, labels
    choice = prefer(top) if prefer and len(top) > 1 else []  # one root dependent leaves no choice
    root = (choice + labeled_root + top + pending)[0]
    heads[root], labels[root] = 0, ROOT_LABEL
    for d in range(1, n + 1):
        if d == root:
            continue
        if heads[d] in (0, -1):
            heads[d] = root
        if labels[d] in (None, ROOT_LABEL):
            labels[d] = FALLBACK_LABEL
    return heads, labels


def _break_cycles(heads: list[int]) -> None:
    """Detach one word of every cycle (its head becomes -1)."""
    n = len(heads) - 1
    color = [0] * (n + 1)  # 0 unseen, 1 on the current path, 2 done
    for start in range(1, n + 1):
        path, d = [], start
        while d > 0 and color[d] == 0:
            color[d] = 1
            path.append(d)
            d = heads[d]
        if d > 0 and color[d] == 1:
            heads[d] = -1
        for p in path:
            color[p] = 2
