"""The two stages of the Attardi dynamic oracle of Gómez-Rodríguez, Sartorio &
Satta (2014), "A polynomial-time dynamic oracle for non-projective dependency
parsing", section 5: buffer reduction (section 5.2) and the tabular loss
algorithm (section 5.3, Algorithm 1), used by :mod:`.attardi`.

Both stages work on a configuration given as its stack (word indices, the
root ``0`` at the bottom) and the first buffer word ``b`` (the buffer is
``b..n``); a word left of ``b`` that is not on the stack already has its head.
"""
from __future__ import annotations

from typing import Sequence

#: position of the bottom-of-stack symbol ``$`` of Algorithm 1 (never in an arc)
BOTTOM = -1


def reduced_buffer(gold: Sequence[int], kids: Sequence[Sequence[int]], order: Sequence[int],
                   on_stack: Sequence[bool], b: int) -> list[int]:
    """The reduced buffer β_R of section 5.2.

    A gold subtree ``t`` rooted at a buffer word ``k`` is replaced by ``k``
    when (i) *bottom-up completeness*: no buffer word of ``t`` other than ``k``
    has a gold dependent on the stack, (ii) *zero gap-degree*: the buffer
    words of ``t`` are contiguous, and (iii) every buffer word of ``t`` other
    than ``k`` has its gold head in the buffer.  Condition (iii) is ours: the
    paper states (i)-(ii) for gold-reachable configurations, but after an
    error a buffer word of ``t`` can hang from a stack word or from a word
    that already has its head, and then its gold arc is not free to build.

    ``order`` lists the words bottom-up (every word before its head); the
    whole pass is O(n).
    """
    n = len(gold) - 1
    lo = [0] * (n + 1)      # smallest buffer word of the subtree (n+1 if none)
    hi = [0] * (n + 1)      # largest buffer word of the subtree (0 if none)
    count = [0] * (n + 1)   # number of buffer words in the subtree
    blocked = [False] * (n + 1)  # some non-root buffer word of the subtree violates (i) or (iii)
    for x in order:
        in_buffer = x >= b
        lo_x, hi_x, count_x, blocked_x = (x, x, 1, False) if in_buffer else (n + 1, 0, 0, False)
        for k in kids[x]:
            lo_x = min(lo_x, lo[k])
            hi_x = max(hi_x, hi[k])
            count_x += count[k]
            blocked_x = blocked_x or blocked[k] or (k >= b and (_stack_dependent(kids[k], on_stack)
                                                                or not in_buffer))
        lo[x], hi[x], count[x], blocked[x] = lo_x, hi_x, count_x, blocked_x
    reducible = [x >= b and not blocked[x] and hi[x] - lo[x] + 1 == count[x] for x in range(n + 1)]
    return [x for x in range(b, n + 1) if not _inside_reducible(x, gold, reducible, b)]


def _stack_dependent(dependents: Sequence[int], on_stack: Sequence[bool]) -> bool:
    return any(on_stack[d] for d in dependents)


def _inside_reducible(x: int, gold: Sequence[int], reducible: Sequence[bool], b: int) -> bool:
    """Whether a proper gold ancestor of buffer word ``x`` roots a reducible subtree.

    Only the chain of buffer ancestors matters: condition (iii) makes a
    reducible subtree's buffer words hang from buffer words all the way up.
    """
    h = gold[x]
    while h >= b:
        if reducible[h]:
            return True
        h = gold[h]
    return False


class OverBudget(Exception):
    """Raised by :func:`future_loss` when its work budget runs out."""


class Budget:
    """Work units (table cells visited plus item pairs tried) the tables may
    still use: a deterministic stand-in for a time limit, shared by the
    computations of one oracle call."""

    __slots__ = ("left",)

    def __init__(self, units: int):
        self.left = units

    def spend(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise OverBudget


def future_loss(gold: Sequence[int], stack: Sequence[int], reduced: Sequence[int],
                budget: Budget) -> int:
    """Least number of wrong arcs still to be built from a configuration with
    this stack and reduced buffer: ``T[0, |γ|]([$, $0])`` of Algorithm 1
    (section 5.3), without the term ``L_c`` for arcs already built.

    Two exact speed-ups over the paper's table.  A word of ``γ`` whose gold
    head is not in ``γ`` (the head is already attached and gone) is *doomed*:
    it costs 1 wherever it attaches, so we count those words once
    and fill the table with the *excess* (wrong arcs into other words).  And
    the table only keeps items whose excess is at most a bound, raised
    (0, 1, 3, 7, ...) until the final item appears: items only grow when
    combined, so a final item within the bound has its exact least excess.

    Raises :class:`OverBudget` when ``budget`` runs out.
    """
    gamma = list(stack) + list(reduced)
    position = {word: p for p, word in enumerate(gamma)}
    # gold head of each position as a position (-2: the gold head is not in γ)
    gold_pos = [position.get(gold[word], -2) if word else -2 for word in gamma]
    doomed = [p > 0 and g == -2 for p, g in enumerate(gold_pos)]
    bound = 0
    while True:
        excess = _least_excess(gold_pos, doomed, len(stack), bound, budget)
        if excess is not None:
            return sum(doomed) + excess
        bound = 2 * bound + 1


def _least_excess(gold_pos: list[int], doomed: list[bool], ell: int, bound: int,
                  budget: Budget) -> int | None:
    """Algorithm 1 on ``γ`` (given by its gold heads as positions), keeping
    items of excess at most ``bound``; ``None`` if the final item exceeds it.

    ``ℓ`` = stack size.  ``T[i][j]`` maps ``h1 -> {(h2, h3): excess}`` for the
    items ``[h1, h2 h3]`` whose computations shift exactly ``γ[i..j-1]``: they
    start with ``h1`` on top and end with ``h2 h3`` on top, never going lower
    in between (section 4).  Stack words are shifted in their order with no
    reduction in between (lines 1-3), since every computation goes through
    the configuration; buffer words may be shifted onto any earlier word
    (lines 4-6).  Cells are combined CKY-style (lines 7-12) by
    :func:`_combine` (PROCESSCELL); cells ``T[i][k]`` with ``i + 1 < k < ℓ``
    stay empty, as the paper notes.
    """
    m = len(gold_pos)
    table: list[list[dict | None]] = [[None] * (m + 1) for _ in range(m + 1)]
    table[0][1] = {BOTTOM: {(BOTTOM, 0): 0}}
    for i in range(1, ell):
        table[i][i + 1] = {i - 1: {(i - 1, i): 0}}
    for i in range(ell, m):
        table[i][i + 1] = {h: {(h, i): 0} for h in range(i)}
    for d in range(2, m + 1):
        for i in range(max(0, ell - d), m - d + 1):
            j = i + d
            cell: dict = {}
            buffer_only = i >= ell
            work = 1
            for k in _splits(i, j, ell):
                left, right = table[i][k], table[k][j]
                if left and right:
                    work += _combine(left, right, cell, gold_pos, doomed, buffer_only, i, bound)
            budget.spend(work)
            table[i][j] = cell
    return table[0][m].get(BOTTOM, {}).get((BOTTOM, 0))


def _splits(i: int, j: int, ell: int) -> list[int]:
    """Split points ``k`` of ``γ[i..j-1]`` (lines 10-12): ``i + 1``, then every
    ``k >= ℓ``; ``i + 1 < k < ℓ`` would use items that skip the configuration."""
    return [i + 1, *range(max(i + 2, ell), j)]


def _combine(left: dict, right: dict, out: dict, gold_pos: list[int], doomed: list[bool],
             buffer_only: bool, start: int, bound: int) -> int:
    """PROCESSCELL of Algorithm 1: concatenate ``[h1, h2 h3]`` with
    ``[h3, h4 h5]`` (stack ``h2 h4 h5``) and apply each reduce transition;
    the arc ``h -> d`` adds 1 to the excess unless it is gold or ``d`` is
    doomed (see :func:`future_loss`).

    In a span of buffer words only (``buffer_only``) an arc is built only if
    it is gold or its head lies left of the span (lines 18, 21, 24, 27): a
    wrong arc between two buffer words is never needed for an optimal
    computation.  The root (position 0) is never a dependent, ``$`` never a
    head.  Returns the number of item pairs tried.

    The four reductions are written out in full rather than through a helper:
    this is the innermost loop of the oracle, where a Python call per item
    pair would be a large part of the work.
    """
    work = 0
    for h1, pairs in left.items():
        target = None
        for (h2, h3), v1 in pairs.items():
            continuations = right.get(h3)
            if not continuations:
                continue
            work += len(continuations)
            if target is None:
                target = out.get(h1)
                if target is None:
                    target = out[h1] = {}
            for (h4, h5), v2 in continuations.items():
                base = v1 + v2
                if base > bound:
                    continue
                # la: h5 -> h4, pop h4
                if h4 != 0:
                    value = base
                    if gold_pos[h4] != h5:
                        if buffer_only:
                            value = bound + 1
                        elif not doomed[h4]:
                            value += 1
                    if value <= bound:
                        old = target.get((h2, h5))
                        if old is None or value < old:
                            target[(h2, h5)] = value
                # ra: h4 -> h5, pop h5
                gold_h5 = gold_pos[h5]
                value = base
                if gold_h5 != h4:
                    if buffer_only:
                        value = bound + 1
                    elif not doomed[h5]:
                        value += 1
                if value <= bound:
                    old = target.get((h2, h4))
                    if old is None or value < old:
                        target[(h2, h4)] = value
                if h2 == BOTTOM:
                    continue
                # la2: h5 -> h2, pop h2
                if h2 != 0:
                    value = base
                    if gold_pos[h2] != h5:
                        if buffer_only:
                            value = bound + 1
                        elif not doomed[h2]:
                            value += 1
                    if value <= bound:
                        old = target.get((h4, h5))
                        if old is None or value < old:
                            target[(h4, h5)] = value
                # ra2: h2 -> h5, pop h5
                value = base
                if gold_h5 != h2:
                    if buffer_only and h2 >= start:
                        value = bound + 1
                    elif not doomed[h5]:
                        value += 1
                if value <= bound:
                    old = target.get((h2, h4))
                    if old is None or value < old:
                        target[(h2, h4)] = value
    return work
