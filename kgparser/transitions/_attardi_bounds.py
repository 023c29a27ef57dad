"""Bounds on the future loss of a configuration for the Attardi dynamic
oracle (Gómez-Rodríguez, Sartorio & Satta 2014, section 5.3): the loss of a
greedy computation from it (upper), and the gold arcs between stack words
that the words between them block (lower, which the tables use below their
cells).  They work on ``γ`` as
:class:`._attardi_table.FutureLoss` gives it: the gold head of each position
as a position (``-2``: not in ``γ``), the doomed positions, and ``ℓ``.
"""
from __future__ import annotations

from typing import Sequence

#: position of the bottom-of-stack symbol ``$`` of Algorithm 1 (never in an arc)
BOTTOM = -1


def blocked_triples(gold_pos: Sequence[int], ell: int) -> list[int]:
    """Disjoint triples of stack words of ``γ`` each of which adds at least 1
    to the excess of any computation, as the position of each triple's top
    word.  O(|σ|^2).

    Proof.  Let a gold arc join the stack words ``γ[lo]`` and ``γ[hi]``,
    ``lo < hi``.  It is built with one of them ``s0`` and the other ``s1``
    or ``s2``, and nothing is ever pushed between two stack words, so by
    then all but at most one of the words between them were reduced, each
    while ``γ[hi]`` was above it: as ``s1``/``s2`` by ``la``/``la2``, with
    head ``s0``, ``γ[hi]`` or a word above it.  A word ``y`` between them
    whose gold head is in ``γ`` but left of ``hi`` (a *blocker*) then gets a
    wrong arc, and it is not doomed, so it adds 1 to the excess.  So for any
    two blockers ``y1``, ``y2`` of the arc into ``x``, one of ``x``, ``y1``,
    ``y2`` adds 1 to the excess (``x`` by losing its gold arc), and triples
    that share no word add 1 each.  The triples are picked greedily, by
    their top word ``γ[hi]`` (then fewest blockers), so that the stack below
    any word keeps many of them (see :func:`._attardi_table._owed`).
    """
    arcs = []
    for x in range(1, ell):
        head = gold_pos[x]
        if 0 <= head < ell:
            lo, hi = (head, x) if head < x else (x, head)
            blockers = [y for y in range(lo + 1, hi) if 0 <= gold_pos[y] < hi]
            if len(blockers) > 1:
                arcs.append((hi, len(blockers), x, blockers))
    arcs.sort()
    used = [False] * ell
    tops = []
    for hi, _, x, blockers in arcs:
        if used[x]:
            continue
        free = [y for y in blockers if not used[y]]
        if len(free) > 1:
            used[x] = used[free[0]] = used[free[1]] = True
            tops.append(hi)
    return tops


def greedy_excess(gold_pos: Sequence[int], doomed: Sequence[bool], ell: int) -> int:
    """An upper bound on the least excess of ``γ`` (given as in
    :func:`_least_excess`): the least excess of :func:`_greedy_completion`
    from the configuration, or from one of its successors when that is not 0
    (a greedy computation can go wrong at its first step: it cannot tell
    which word to give up early).  O(|γ|), times 6 when the first try is
    not 0.
    """
    m = len(gold_pos)
    waiting = [0] * m
    for head in gold_pos:
        if head >= 0:
            waiting[head] += 1
    stack = list(range(ell))
    best = _greedy_completion(gold_pos, doomed, stack[:], ell, waiting[:])
    if best and ell < m:
        best = min(best, _greedy_completion(gold_pos, doomed, stack + [ell], ell + 1, waiting[:]))
    for at, head in _reductions(stack):
        if not best:
            break
        after, after_waiting = stack[:], waiting[:]
        dep = after.pop(at)
        lost = gold_pos[dep] != head and not doomed[dep]
        if gold_pos[dep] >= 0:
            after_waiting[gold_pos[dep]] -= 1
        best = min(best, lost + _greedy_completion(gold_pos, doomed, after, ell, after_waiting))
    return best


def _greedy_completion(gold_pos: Sequence[int], doomed: Sequence[bool], stack: list[int], b: int,
                       waiting: list[int]) -> int:
    """Excess of one computation on ``γ`` from the configuration with this
    stack (of positions) and buffer ``b..``; ``waiting[p]``: the unattached
    gold dependents of position ``p``.  Uses up ``stack`` and ``waiting``.

    The computation follows the eager static oracle (see
    :func:`.attardi._eager_action`), counting as complete a word none of whose
    gold dependents is still unattached in ``γ``: it builds a ready gold arc
    (``left``, ``left2``, ``right``, ``right2``), else pops a complete doomed
    word, else shifts; with an empty buffer and nothing ready, it builds the
    arc that loses least at once (its wrong arc plus the gold dependents its
    dependent still waits for).

    The choice of a ready reduction is written out in the loop rather than
    in a helper: this runs once per step, for every successor.
    """
    m = len(gold_pos)
    excess = 0
    while b < m or len(stack) > 1:
        depth = len(stack)
        at = head = 0  # stack index of the dependent (0: nothing ready), head
        if depth > 1:
            s0, s1 = stack[-1], stack[-2]
            s2 = stack[-3] if depth > 2 else BOTTOM
            if s1 != 0 and gold_pos[s1] == s0 and not waiting[s1]:
                at, head = -2, s0
            elif s2 > 0 and gold_pos[s2] == s0 and not waiting[s2]:
                at, head = -3, s0
            elif not waiting[s0] and gold_pos[s0] == s1:
                at, head = -1, s1
            elif not waiting[s0] and s2 != BOTTOM and gold_pos[s0] == s2:
                at, head = -1, s2
            elif not waiting[s0] and doomed[s0]:
                at, head = -1, s1
            elif s1 != 0 and doomed[s1] and not waiting[s1]:
                at, head = -2, s0
            elif s2 > 0 and doomed[s2] and not waiting[s2]:
                at, head = -3, s0
        if not at:
            if b < m:
                stack.append(b)
                b += 1
                continue
            at, head = _least_damaging_reduction(stack, gold_pos, doomed, waiting)
        dep = stack.pop(at)
        excess += gold_pos[dep] != head and not doomed[dep]
        if gold_pos[dep] >= 0:
            waiting[gold_pos[dep]] -= 1
    return excess


def _reductions(stack: list[int]) -> list[tuple[int, int]]:
    """``(stack index of the dependent, head)`` of each legal reduction: the
    root (position 0) is never a dependent."""
    depth = len(stack)
    moves = []
    if depth > 1:
        s0, s1 = stack[-1], stack[-2]
        moves.append((-1, s1))
        if s1 != 0:
            moves.append((-2, s0))
        if depth > 2:
            s2 = stack[-3]
            moves.append((-1, s2))
            if s2 != 0:
                moves.append((-3, s0))
    return moves


def _least_damaging_reduction(stack: list[int], gold_pos: Sequence[int], doomed: Sequence[bool],
                              waiting: Sequence[int]) -> tuple[int, int]:
    """The legal reduction whose dependent loses least at once: 1 for a wrong
    arc into a word that is not doomed, plus its unattached gold dependents."""

    def damage(move: tuple[int, int]) -> int:
        dep = stack[move[0]]
        return (gold_pos[dep] != move[1] and not doomed[dep]) + waiting[dep]

    return min(_reductions(stack), key=damage)
