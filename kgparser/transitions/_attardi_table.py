"""The two stages of the Attardi dynamic oracle of Gómez-Rodríguez, Sartorio &
Satta (2014), "A polynomial-time dynamic oracle for non-projective dependency
parsing", section 5: buffer reduction (section 5.2) and the tabular loss
algorithm (section 5.3, Algorithm 1), used by :mod:`.attardi`, with O(n)
bounds on the loss (a greedy computation, :mod:`._attardi_bounds`) that
settle most losses without the table.

Both stages work on a configuration given as its stack (word indices, the
root ``0`` at the bottom) and the first buffer word ``b`` (the buffer is
``b..n``); a word left of ``b`` that is not on the stack already has its head.
"""
from __future__ import annotations

from typing import Sequence

from ._attardi_bounds import BOTTOM, blocked_triples, greedy_excess
from .trees import depths


class BufferReduction:
    """The reduced buffer β_R of section 5.2 for one gold tree.

    A gold subtree ``t`` rooted at a buffer word ``k`` is replaced by ``k``
    when (i) *bottom-up completeness*: no buffer word of ``t`` other than ``k``
    has a gold dependent on the stack, (ii) *zero gap-degree*: the buffer
    words of ``t`` are contiguous, and (iii) every buffer word of ``t`` other
    than ``k`` has its gold head in the buffer.  Condition (iii) is ours: the
    paper states (i)-(ii) for gold-reachable configurations, but after an
    error a buffer word of ``t`` can hang from a stack word or from a word
    that already has its head, and then its gold arc is not free to build.
    (iii) fails exactly when ``t`` has a word out of the buffer with a buffer
    word below it, which ``last_descendant`` tells in O(1).
    """

    def __init__(self, gold: Sequence[int], kids: Sequence[Sequence[int]]):
        self.gold, self.kids = gold, kids
        depth = depths(gold)
        #: every word before its head
        self.bottom_up = sorted(range(len(gold)), key=lambda w: -depth[w])
        self.last_descendant = list(range(len(gold)))
        for word in self.bottom_up:
            head = gold[word]
            if word and self.last_descendant[word] > self.last_descendant[head]:
                self.last_descendant[head] = self.last_descendant[word]

    def reduced(self, stack: Sequence[int], b: int) -> list[int]:
        """β_R of the configuration with this stack and buffer ``b..n``;
        O(|σ| + |β|)."""
        gold, kids, last = self.gold, self.kids, self.last_descendant
        n = len(gold) - 1
        has_stack_dependent = [False] * (n + 1)
        for word in stack:
            if gold[word] >= b:
                has_stack_dependent[gold[word]] = True
        # for the buffer words: whether the subtree breaks (i) or (iii) below
        # its root, and its smallest and largest buffer word and their count
        blocked = [False] * (n + 1)
        lo, hi, count = list(range(n + 1)), list(range(n + 1)), [1] * (n + 1)
        reducible = [False] * (n + 1)
        buffer_bottom_up = [x for x in self.bottom_up if x >= b]
        for x in buffer_bottom_up:
            lo_x = hi_x = x
            count_x = 1
            for k in kids[x]:
                if k < b:
                    if last[k] >= b:
                        break
                elif blocked[k] or has_stack_dependent[k]:
                    break
                else:
                    if lo[k] < lo_x:
                        lo_x = lo[k]
                    if hi[k] > hi_x:
                        hi_x = hi[k]
                    count_x += count[k]
            else:
                lo[x], hi[x], count[x] = lo_x, hi_x, count_x
                reducible[x] = hi_x - lo_x + 1 == count_x
                continue
            blocked[x] = True
        # inside[x]: a proper gold ancestor of x roots a reducible subtree;
        # by (iii) only the chain of buffer ancestors matters
        inside = [False] * (n + 1)
        for x in reversed(buffer_bottom_up):
            head = gold[x]
            inside[x] = head >= b and (reducible[head] or inside[head])
        return [x for x in range(b, n + 1) if not inside[x]]


class OverBudget(Exception):
    """Raised by :meth:`Budget.spend` when the work budget runs out."""


class Budget:
    """Work units (words of ``γ`` bounded, table cells visited plus item
    pairs tried) the computations of one oracle call may still use: a
    deterministic stand-in for a time limit."""

    __slots__ = ("left",)

    def __init__(self, units: float):
        self.left = units

    def spend(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise OverBudget


class FutureLoss:
    """The least number of wrong arcs still to be built from a configuration
    with this stack and reduced buffer: ``T[0, |γ|]([$, $0])`` of Algorithm 1
    (section 5.3), without the term ``L_c`` for arcs already built.

    Exact speed-ups over the paper's table.  A word of ``γ`` whose gold
    head is not in ``γ`` (the head is already attached and gone) is *doomed*:
    it costs 1 wherever it attaches, so we count those words once and look
    for the least *excess* (wrong arcs into other words).  A greedy
    computation (:func:`.greedy_excess`) gives an upper bound on the excess:
    ``lower``/``upper`` bound the future loss in O(|γ|), and when they meet
    no table is needed.  Otherwise :meth:`exact` fills tables that only keep
    items whose excess, plus the words they leave without their gold head,
    is at most a bound (see :func:`_least_excess` and :func:`_within_bound`).

    Building it spends one unit of ``budget`` per word of ``γ``.  The object
    remembers what its tables found (:meth:`_table`), so asking it again (the
    successors by ``right`` and ``right2`` are the same configuration) costs
    no table.
    """

    __slots__ = ("gold_pos", "doomed", "ell", "lower", "upper", "_least", "_above")

    def __init__(self, gold: Sequence[int], stack: Sequence[int], reduced: Sequence[int],
                 budget: Budget):
        gamma = list(stack) + list(reduced)
        budget.spend(len(gamma))
        position = {word: p for p, word in enumerate(gamma)}
        # gold head of each position as a position (-2: the gold head is not in γ)
        self.gold_pos = [position.get(gold[word], -2) if word else -2 for word in gamma]
        self.doomed = [p > 0 and g == -2 for p, g in enumerate(self.gold_pos)]
        self.ell = len(stack)
        self.lower = sum(self.doomed)
        self.upper = self.lower + greedy_excess(self.gold_pos, self.doomed, self.ell)
        #: the least excess once a table found it; the excess is known to be above ``_above``
        self._least: int | None = None
        self._above = -1

    def exact(self, budget: Budget, at_least: int = 0, at_most: int | None = None) -> int:
        """The future loss, knowing that it is at least ``at_least`` and at
        most ``at_most`` (bounds the caller has from elsewhere).

        Tables are filled with the bound on the excess raised one at a time,
        up to one less than the upper bound: items only grow when combined,
        so a final item within the bound has its exact least excess, and when
        none is found one below the upper bound, the upper bound is exact.
        The first bound is at least 1 when the upper bound is 2 or more: the
        greedy bound misses almost no zero-excess completion, so a table at
        bound 0 would almost always be wasted.  A lower bound past the upper
        one (possible only for a gold tree the parser cannot build, where the
        losses are approximate) is ignored.  Raises :class:`OverBudget` when
        ``budget`` runs out.
        """
        upper = self.upper if at_most is None else max(self.lower, min(self.upper, at_most))
        upper -= self.lower
        return self._search(self._first_bound(at_least, upper), upper, budget)

    def exact_expecting_more(self, budget: Budget, at_least: int) -> int:
        """:meth:`exact` for a loss the caller expects above ``at_least``:
        the first table is at one more.  A table finds every loss up to its
        bound, so this only skips the table at ``at_least`` (12% of the
        oracle's time on the Hungarian and Greek bench, for the successors
        that do not look best by their upper bound)."""
        upper = self.upper - self.lower
        bound = self._first_bound(at_least, upper)
        return self._search(min(bound + 1, upper - 1) if bound < upper else bound, upper, budget)

    def _first_bound(self, at_least: int, upper: int) -> int:
        """The bound of :meth:`exact`'s first table (on the excess, below ``upper``)."""
        return max(at_least - self.lower, min(1, upper - 1), 0)

    def _search(self, bound: int, upper: int, budget: Budget) -> int:
        """The future loss from tables at ``bound``, raised one at a time,
        below ``upper`` (on the excess); ``lower + upper`` if none finds it."""
        while bound < upper:
            excess = self._table(bound, budget)
            if excess is not None:
                return self.lower + excess
            bound += 1
        return self.lower + upper

    def _table(self, bound: int, budget: Budget) -> int | None:
        """:func:`_least_excess` at ``bound``, from what earlier tables found
        when that settles it: a table returns the least excess when it is
        within its bound and ``None`` otherwise, so one that found it answers
        every bound, and one that found nothing answers every lower bound."""
        if self._least is not None:
            return self._least if self._least <= bound else None
        if bound <= self._above:
            return None
        excess = _least_excess(self.gold_pos, self.doomed, self.ell, bound, budget)
        if excess is None:
            self._above = bound
        else:
            self._least = excess
        return excess


#: items ``[h1, h2 h3]`` of one ``h1``: ``(h2, h3) -> excess``
Pairs = dict[tuple[int, int], int]
#: ``(items by h1, shared items)``: ``items[h1]`` maps ``(h2, h3) -> excess``
#: for the items ``[h1, h2 h3]``; an ``h1`` that is not a key has the shared
#: items (``None`` in cells of stack words), read with ``h1`` for :data:`BASE`
Cell = tuple[dict[int, Pairs], "Pairs | None"]

#: stands for ``h1`` in the shared items of a cell of buffer words
BASE = -3

#: the least ``|γ|`` whose tables cut items by :func:`_within_bound`: on
#: shorter ones, counting what the items owe costs more than the cut saves
CUT_FROM = 16


def _least_excess(gold_pos: list[int], doomed: list[bool], ell: int, bound: int,
                  budget: Budget) -> int | None:
    """Algorithm 1 on ``γ`` (given by its gold heads as positions), keeping
    items of excess at most ``bound``; ``None`` if the final item exceeds it.

    ``ℓ`` = stack size.  ``T[i][j]`` holds the items ``[h1, h2 h3]`` whose
    computations shift exactly ``γ[i..j-1]``: they start with ``h1`` on top
    and end with ``h2 h3`` on top, never going lower in between (section 4),
    as a :data:`Cell`.  Stack words are shifted in their order with no
    reduction in between (lines 1-3), since every computation goes through
    the configuration; buffer words may be shifted onto any earlier word
    (lines 4-6).  Cells are combined CKY-style (lines 7-12) by
    :func:`_extend` (PROCESSCELL); cells ``T[i][k]`` with ``i + 1 < k < ℓ``
    stay empty, as the paper notes.

    A cell of buffer words (``i >= ℓ``) has items for every earlier ``h1``,
    but in such a span an arc is built only if it is gold or hangs a span
    word from ``h1`` (see :func:`_extend`), so all the ``h1`` with no gold
    arc to or from the span have the same items up to renaming ``h1``: the
    cell keeps them once, with :data:`BASE` for ``h1``, and items per ``h1``
    only for the others (:func:`_linked_bases`).

    Each cell keeps only the items that :func:`_within_bound` finds can still
    be in a final item within ``bound`` (when ``|γ| >=`` :data:`CUT_FROM`).
    """
    m = len(gold_pos)
    linked = _linked_bases(gold_pos, ell)
    dependents = _gold_dependents(gold_pos)
    owed = _owed(gold_pos, dependents, ell) if m >= CUT_FROM else None
    # a cell is read only once computed (by width), so the cells are typed as the filled ones
    table: list[list[Cell]] = [[None] * (m + 1) for _ in range(m + 1)]  # type: ignore[list-item]
    table[0][1] = ({BOTTOM: {(BOTTOM, 0): 0}}, None)
    for i in range(1, ell):
        table[i][i + 1] = ({i - 1: {(i - 1, i): 0}}, None)
    for i in range(ell, m):
        table[i][i + 1] = ({}, {(BASE, i): 0})
    for d in range(2, m + 1):
        for i in range(max(0, ell - d), m - d + 1):
            j = i + d
            bases, shared, work = _combine(table, i, j, ell, linked, gold_pos, doomed, bound)
            owed_here = owed[i][j] if owed else 0
            table[i][j] = _pruned(bases, shared, i, j, ell, linked, gold_pos, dependents, owed_here, bound)
            budget.spend(work)
    return table[0][m][0].get(BOTTOM, {}).get((BOTTOM, 0))


def _combine(table: list[list[Cell]], i: int, j: int, ell: int, linked: list[list[list[int]]], gold_pos: list[int],
             doomed: list[bool], bound: int) -> tuple[dict[int, Pairs], Pairs | None, int]:
    """Cell ``T[i][j]`` before pruning (Algorithm 1, lines 7-12), with the work it took.

    Split points: ``i + 1``, then every ``k >= ℓ``; ``i + 1 < k < ℓ`` would use
    items that skip the configuration."""
    buffer_only = i >= ell
    bases: dict[int, Pairs] = {}
    shared: Pairs | None = {} if buffer_only else None
    work = 1
    for k in (i + 1, *range(max(i + 2, ell), j)):
        (left, left_shared), right = table[i][k], table[k][j]
        if not (right[0] or right[1]):
            continue
        if buffer_only:
            if left_shared:
                # ``shared`` is a dict in a cell of buffer words (``buffer_only``)
                work += _extend_buffer(BASE, left_shared, right, shared,  # type: ignore[arg-type]
                                       gold_pos, doomed, i, bound)
            for h1 in linked[i][j]:
                pairs = left.get(h1, left_shared)
                if pairs:
                    out = bases.get(h1)
                    if out is None:
                        out = bases[h1] = {}
                    work += _extend_buffer(h1, pairs, right, out, gold_pos, doomed, i, bound)
        else:
            for h1, pairs in left.items():
                out = bases.get(h1)
                if out is None:
                    out = bases[h1] = {}
                work += _extend(h1, pairs, right, out, gold_pos, doomed, bound)
    return bases, shared, work


def _pruned(bases: dict[int, Pairs], shared: Pairs | None, i: int, j: int, ell: int, linked: list[list[list[int]]],
            gold_pos: list[int], dependents: list[list[int]], owed_here: int, bound: int) -> Cell:
    """Cell ``T[i][j]`` keeping only the items :func:`_within_bound` allows."""
    if i >= ell:
        # the linked h1 keep their (maybe empty) items: they differ from the shared ones
        if owed_here:
            bases = {h1: _within_bound(bases.get(h1, {}), gold_pos, dependents, i, 0, j, owed_here, bound)
                     for h1 in linked[i][j]}
            # ``shared`` is a dict in a cell of buffer words (``i >= ell``)
            shared = _within_bound(shared, gold_pos, dependents, i, 0, j, owed_here, bound)  # type: ignore[arg-type]
        else:
            for h1 in linked[i][j]:
                bases.setdefault(h1, {})
        return bases, shared
    if owed_here:  # an h1 without items would only cost lookups later
        lo = max(i - 1, 0)
        return {h1: kept for h1, pairs in bases.items()
                if (kept := _within_bound(pairs, gold_pos, dependents, lo, lo, j, owed_here, bound))}, shared
    return {h1: pairs for h1, pairs in bases.items() if pairs}, shared


def _gold_dependents(gold_pos: list[int]) -> list[list[int]]:
    """The positions whose gold head is each position of ``γ``."""
    dependents: list[list[int]] = [[] for _ in gold_pos]
    for q, head in enumerate(gold_pos):
        if head >= 0:
            dependents[head].append(q)
    return dependents


def _owed(gold_pos: list[int], dependents: list[list[int]], ell: int) -> list[list[int]]:
    """``owed[i][j]``: the words still to be attached after the computations
    of the items of ``T[i][j]`` whose gold head is in the span of
    :func:`_within_bound`.  In a cell of stack words (``i < ℓ``), the span is
    ``γ[lo..j-1]`` with ``lo = max(i - 1, 0)`` and those words are the ones
    outside it; in a cell of buffer words the span is ``γ[i..j-1]`` and those
    words are from ``j`` (the words between ``h1`` and ``i`` may be gone).
    O(|γ|^2), each row built incrementally as ``j`` grows: the new span word
    adds its gold dependents outside the span and leaves their count if its
    gold head is in the span.

    A cell of stack words also counts the :func:`.blocked_triples` below
    ``lo``: their words stay on the stack below the span until the item's
    computation ends, and their gold heads are below ``lo`` too, so each adds
    1 later, to words not counted above."""
    m = len(gold_pos)
    later = [sum(q > x for q in dependents[x]) for x in range(m)]
    tops = blocked_triples(gold_pos, ell)
    owed: list[list[int]] = []
    for i in range(m):
        lo = max(i - 1, 0) if i < ell else i
        row = [0] * (lo + 1)
        total = sum(top < lo for top in tops) if i < ell else 0
        for x in range(lo, m):
            total += later[x]
            if i < ell:
                for q in dependents[x]:
                    if q < lo:
                        total += 1
            if lo <= gold_pos[x] < x:
                total -= 1
            row.append(total)
        owed.append(row)
    return owed


def _within_bound(pairs: Pairs, gold_pos: list[int], dependents: list[list[int]], lo: int, below: int,
                  j: int, owed: int, bound: int) -> Pairs:
    """The items ``[h1, h2 h3]`` of a cell ``T[i][j]`` whose excess plus a
    lower bound on the excess still to come is within ``bound``: an item
    outside it is in no final item within it.

    The computation of an item pops every word of its span ``γ[lo..j-1]``
    but ``h2``, ``h3`` and the root.  In a cell of stack words (``i < ℓ``),
    ``h1 = lo = i - 1`` (or ``$``, and ``lo = 0``, when ``i = 0``) and may be
    popped by ``la``/``la2``; every word outside the span is still to be
    attached afterwards: the stack words below ``lo`` (no reduction comes
    before the configuration) and the buffer words from ``j`` (``below =
    lo``).  In a cell of buffer words, ``lo = i`` and only the words from
    ``j`` are known to be still there (``below = 0``).  A word still to be
    attached (those, ``h2`` and ``h3``) whose gold head is popped costs 1
    more: its gold head is in ``γ``, so it is not doomed.  Counted as the
    ``owed`` words (see :func:`_owed`), less the gold dependents of
    ``h2`` and ``h3`` among them, plus ``h2`` and ``h3`` when their gold
    head is popped (at most 2 more).  ``h2`` may be :data:`BASE` (an
    ``h1`` with no gold arc to or from the span) or ``$``.
    """
    if not owed:
        return pairs
    kept: Pairs = {}
    for (h2, h3), value in pairs.items():
        if value + owed > bound:
            rest = owed
            for h, other in ((h2, h3), (h3, h2)):
                if h < 0:
                    continue
                if lo <= h < j:
                    for q in dependents[h]:
                        if q < below or q >= j:
                            rest -= 1
                if h > 0:
                    head = gold_pos[h]
                    rest += lo <= head < j and head != other
            if value + rest > bound:
                continue
        kept[(h2, h3)] = value
    return kept


def _linked_bases(gold_pos: list[int], ell: int) -> list[list[list[int]]]:
    """``linked[i][j]`` (``i >= ℓ``): the positions before ``i`` with a gold
    arc to or from ``γ[i..j-1]``.  O(|γ|^2) lists, built incrementally."""
    m = len(gold_pos)
    dependents = _gold_dependents(gold_pos)
    linked: list[list[list[int]]] = [[] for _ in range(m)]
    for i in range(ell, m):
        row: list[list[int]] = [[]] * (i + 1)
        found: list[int] = []
        for j in range(i + 1, m + 1):
            added = j - 1
            new = [q for q in dependents[added] if q < i and q not in found]
            head = gold_pos[added]
            if 0 <= head < i and head not in found and head not in new:
                new.append(head)
            if new:
                found = found + new
            row.append(found)
        linked[i] = row
    return linked


def _extend(h1: int, pairs: Pairs, right: Cell, out: Pairs, gold_pos: list[int], doomed: list[bool],
            bound: int) -> int:
    """PROCESSCELL of Algorithm 1 for one ``h1`` in a cell with stack words:
    concatenate each item ``[h1, h2 h3]`` of ``pairs`` with each
    ``[h3, h4 h5]`` of ``right`` (stack ``h2 h4 h5``) and apply each reduce
    transition into ``out`` (:func:`_reduce_after`).  Returns the number of
    item pairs tried.
    """
    work = 0
    right_items, right_shared = right
    for (h2, h3), v1 in pairs.items():
        continuations = right_items.get(h3, right_shared)
        if continuations:
            work += len(continuations)
            _reduce_after(h2, h3, v1, continuations, out, gold_pos, doomed, bound)
    return work


def _reduce_after(h2: int, h3: int, v1: int, continuations: Pairs, out: Pairs, gold_pos: list[int],
                  doomed: list[bool], bound: int) -> None:
    """The reductions of :func:`_extend` after one item ``[h1, h2 h3]`` of excess
    ``v1`` and each of its ``continuations`` ``[h3, h4 h5]``, into ``out``: the
    arc ``h -> d`` adds 1 to the excess unless it is gold or ``d`` is doomed
    (see :class:`FutureLoss`).  The root (position 0) is never a dependent,
    ``$`` never a head.

    The reductions are written out in full, one call per item rather than per
    item pair: this is the innermost loop of the oracle, where a Python call
    per item pair would be a large part of the work.
    """
    room = bound - v1
    # la2 pops h2 (neither $ nor the root): its cost depends on h5 only
    pops_h2 = h2 > 0
    gold_h2 = gold_pos[h2] if pops_h2 else -2
    free_h2 = pops_h2 and doomed[h2]
    for (h4, h5), v2 in continuations.items():
        if v2 > room:
            continue
        base = v1 + v2
        if h4 == BASE:
            h4 = h3
        # la: h5 -> h4, pop h4
        if h4 != 0:
            value = base if gold_pos[h4] == h5 or doomed[h4] else base + 1
            if value <= bound:
                old = out.get((h2, h5))
                if old is None or value < old:
                    out[(h2, h5)] = value
        # ra (h4 -> h5) and ra2 (h2 -> h5) both pop h5 and leave [h1, h2 h4]: the
        # cheaper counts; ra2 needs h2 != $, and $ is no gold head (gold_h5 != BOTTOM)
        gold_h5 = gold_pos[h5]
        value = base if gold_h5 == h4 or gold_h5 == h2 or doomed[h5] else base + 1
        if value <= bound:
            old = out.get((h2, h4))
            if old is None or value < old:
                out[(h2, h4)] = value
        # la2: h5 -> h2, pop h2
        if pops_h2:
            value = base if gold_h2 == h5 or free_h2 else base + 1
            if value <= bound:
                old = out.get((h4, h5))
                if old is None or value < old:
                    out[(h4, h5)] = value


def _extend_buffer(h1: int, pairs: Pairs, right: Cell, out: Pairs, gold_pos: list[int],
                   doomed: list[bool], start: int, bound: int) -> int:
    """:func:`_extend` in a span of buffer words starting at ``start``, where
    an arc is built only if it is gold or hangs a span word from ``h1``, left
    of the span (lines 18, 21, 24, 27): a wrong arc between two buffer words
    is never needed for an optimal computation.  ``h1`` may be :data:`BASE`;
    ``h2`` is ``h1`` or a span word, ``h3 h4 h5`` are span words.
    """
    work = 0
    right_items, right_shared = right
    for (h2, h3), v1 in pairs.items():
        if h2 == BASE:
            h2 = h1
        continuations = right_items.get(h3, right_shared)
        if not continuations:
            continue
        work += len(continuations)
        for (h4, h5), v2 in continuations.items():
            base = v1 + v2
            if base > bound:
                continue
            if h4 == BASE:
                h4 = h3
            # la: h5 -> h4, pop h4
            if gold_pos[h4] == h5:
                old = out.get((h2, h5))
                if old is None or base < old:
                    out[(h2, h5)] = base
            # ra: h4 -> h5, pop h5
            gold_h5 = gold_pos[h5]
            if gold_h5 == h4:
                old = out.get((h2, h4))
                if old is None or base < old:
                    out[(h2, h4)] = base
            # la2: h5 -> h2, pop h2 (BASE has no gold arc from the span)
            if h2 > 0 and gold_pos[h2] == h5:
                old = out.get((h4, h5))
                if old is None or base < old:
                    out[(h4, h5)] = base
            # ra2: h2 -> h5, pop h5
            if gold_h5 == h2:
                value = base
            elif h2 < start and (doomed[h5] or base < bound):
                value = base if doomed[h5] else base + 1
            else:
                continue
            old = out.get((h2, h4))
            if old is None or value < old:
                out[(h2, h4)] = value
    return work
