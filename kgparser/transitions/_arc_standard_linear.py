"""The linear-time part of the arc-standard dynamic oracle for a projective
gold tree (Nederhof 2019, "Calculating the optimal step in shift-reduce
dependency parsing: from cubic to linear time", TACL, sections 5 and 6).

:class:`ProjectiveReduction` counts the most gold arcs still derivable from a
configuration: stack ``a0..ak`` (``a0`` the root) and the *critical* buffer
words ``c0..c(m-1)`` of section 5 (a buffer word is critical if its gold head
or one of its gold descendants lies outside the buffer); every other buffer
word gets its gold head in some best computation (properties 1-3), so the
caller adds those as ``settled``.  The gold arcs among critical words form
*components*, chains ``c(t) <- c(t+1) <- ... <- c(r)`` of consecutive
critical words ending in the component's root ``c(r)``, whose gold head is
outside the buffer (section 5, figure 4).

Section 6's equations (table 5) did not survive in our copy of the paper, so
the recursion is rebuilt from the prose of sections 5 and 6.  A state
``(i, x, p)`` is the configuration with stack ``a0..ai x`` and buffer
``c(p)..``: ``x`` heads one subtree holding every unit between ``ai`` and
``c(p)``.  It is a stack word (the paper's ``score(i, j, q)``) or a critical
word (``score'(i, j)``).  The moves considered, each a normal form of some
best computation:

* a stack word ``x`` first takes all its remaining gold buffer dependents
  (they are component roots, and no stack word below ``x`` relates to any
  word before the last of them; section 5: "this would also include shifts
  of any remaining right children");
* ``ai`` takes ``x`` (the new top is ``ai``);
* ``x`` takes ``ai`` as left dependent if that arc is gold; if it is not,
  only when ``x`` (or, for a critical ``x``, a word above it in its
  component) has a gold arc with ``a0..a(i-1)`` (section 6's lambda and
  lambda') and ``ai`` has none with ``x``'s component, and then together with
  everything down to the lowest word ``ai`` has a gold arc with, since
  projectivity leaves ``x`` no gold arc with the words in between (section
  6's kappa, figure 7);
* a stack word ``x`` goes under its gold head ``c(h)``, which becomes the top
  (the third value of ``score``);
* for a critical ``x = c(t)``: ``ai`` goes under its gold head when that is
  ``c(t)`` or a word above it in its component, the chain up to it being
  built first ("ai is reduced into its parent, which is bj or another
  critical node that is an ancestor of bj"); or ``ai`` takes the component's
  root after the whole chain is built (when nothing else in the component is
  wanted, building the chain loses nothing: section 5's rule that a non-gold
  arc into a component costs the next gold arc with it).

Buffer words that have no gold arc with ``x`` or ``a0..ai`` (and, for a
critical ``x``, are not above it in its component) can only be built into the
subtree of the first word after them that has one, with all their chain arcs;
so a state is keyed by that first related word instead of ``p``.  Words with
a gold arc to ``a0..ai`` form a suffix of the words related to the stack
(projectivity nests the arcs between the stack and the buffer), so that first
word is an array look-up, and every move costs O(1).

Why the number of states is linear in ``k + m`` (section 6's last paragraph
makes the same count for table 5).  Write a state's level ``i`` and top ``x``:

* A stack word ``aj`` becomes the top only at level ``j - 1``.  It reaches a
  lower level ``i`` by a gold arc (it is the gold head of ``a(i+1)``: one top
  per level) or by a kappa jump started at a level ``i'`` where it has a gold
  arc below ``i'``.  At most two such tops are ever at one level ``i'``: were
  ``x1 < x2 < x3`` there, ``x1`` lies between ``ai'`` and ``x2`` (and ``x3``),
  so each took ``x1`` as a left dependent directly; not in a kappa jump over
  ``x1`` (``x1``'s arc below ``i'`` would cross the jump's arc), nor in one
  starting at ``x1`` (it would land at ``x1``'s lowest arc, below ``i'``), so
  by a gold arc, and ``x1`` would have two gold heads.  So there are at most
  ``4 (k + 1)`` (level, stack top) pairs.
* A critical word becomes the top as the gold head of the stack top (one per
  (level, stack top) pair) or of ``a(i+1)`` (one per level), goes down by its
  gold arcs (one per level) or by kappa jumps.  The critical tops that have a
  gold arc below ``i'`` in their component all lie in one component: each of
  them also has a gold arc with a stack word above ``i'`` (the one that made
  it the top), and two components with both kinds of arcs would cross.
* A critical top's key is ``t + 1``, or for a component's root, the first
  word tied to ``a0..ai`` after it: one state per pair.  A stack top's keys
  are first its buffer dependents, walked once at its entry level (``m`` in
  all), then its gold head or the first word tied to ``a0..ai``.

What this sketch does not pin down (how many critical tops of one component
share a level, and how many first tied words a stack top sees: on 3000 random
configurations never more than one and three) is bounded by the counting
tests of ``tests/test_arc_standard_linear.py``: on high fan-out heads,
chains, ladders (each stack word headed by a different word of one buffer
chain; they made the previous recursion quadratic) and random configurations
the memo stays under ``8 (k + m + 1)`` states, and every state makes O(1)
calls of O(1) cost.  Exactness is checked against exhaustive search on every
reachable state of small sentences, and against the cubic chart of
:mod:`._arc_standard_dp` on long ones.
"""
from __future__ import annotations

from typing import Generator

#: a state of the recursion, ``(i, x, p)``: stack ``a0..ai x``, buffer ``c(p)..``
Move = tuple[int, int, int]
#: the moves of one state: yields the states it needs, is sent their counts, returns its best
Moves = Generator[Move, int, int]
#: a state being computed: its memo level and key, the count of the words it skipped, its moves
Frame = tuple[dict[tuple[int, int], int], tuple[int, int], int, Moves]


class ProjectiveReduction:
    """Most gold arcs still derivable from one configuration (critical part:
    ``best_from`` plus ``settled``).  ``gold`` has ``-1`` for the root; the
    critical words are in sentence order.  ``memo`` may be the memo of a
    configuration with the same buffer whose stack agrees with this one up to
    ``len(memo)`` levels: a state at level ``i`` depends only on ``a0..ai``,
    its top and the buffer."""

    def __init__(self, gold: list[int], stack: list[int], critical: list[int], settled: int = 0,
                 memo: list[dict[tuple[int, int], int]] | None = None):
        self.gold, self.stack, self.critical = gold, stack, critical
        self.settled = settled  # buffer words outside ``critical``, all given their gold heads
        self.k, self.m = len(stack) - 1, len(critical)
        self.level = {word: lvl for lvl, word in enumerate(stack)}
        self.place = {word: t for t, word in enumerate(critical)}
        self._count_chain_arcs()
        self._relate_buffer_to_stack()
        self._relate_stack_to_stack()
        self._relate_components()
        self.memo = [] if memo is None else memo
        self.memo.extend({} for _ in range(len(stack) - len(self.memo)))

    def _count_chain_arcs(self) -> None:
        """``chained[t]``: gold arcs inside ``c0..c(t)`` (``chained[m]`` repeats
        the last); ``root_kids[t]``: gold dependents of the root from ``c(t)``."""
        gold, critical, m = self.gold, self.critical, self.m
        chained = [0] * (m + 1)
        for t in range(1, m):
            chained[t] = chained[t - 1] + (gold[critical[t - 1]] == critical[t])
        chained[m] = chained[m - 1] if m else 0
        root_kids = [0] * (m + 1)
        for t in range(m - 1, -1, -1):
            root_kids[t] = root_kids[t + 1] + (gold[critical[t]] == self.stack[0])
        self.chained, self.root_kids = chained, root_kids

    def _relate_buffer_to_stack(self) -> None:
        """Per critical word, the lowest stack level it has a gold arc with
        (``k + 1`` if none); the span of each stack word's buffer dependents
        and, per place, the next buffer dependent of any stack word (between
        the first and last dependent of a stack word there are no others:
        projectivity); and the tables behind :meth:`first_tied`."""
        gold, level, k, m = self.gold, self.level, self.k, self.m
        lowest = [k + 1] * m
        kid_span: dict[int, tuple[int, int]] = {}
        for t, word in enumerate(self.critical):
            head_level = level.get(gold[word])
            if head_level is not None:
                lowest[t] = head_level
                kid_span[gold[word]] = (kid_span.get(gold[word], (t, t))[0], t)
        for lvl, word in enumerate(self.stack):
            head_place = self.place.get(gold[word])
            if head_place is not None and lvl < lowest[head_place]:
                lowest[head_place] = lvl
        next_kid = [m] * (m + 1)
        for t in range(m - 1, -1, -1):
            next_kid[t] = t if gold[self.critical[t]] in level else next_kid[t + 1]
        self.lowest, self.kid_span, self.next_kid = lowest, kid_span, next_kid
        # arcs between stack and buffer nest, so ``lowest`` never grows along
        # ``tied``: the words tied to ``a0..ai`` are the suffix from ``tied_from[i]``
        tied = [t for t in range(m) if lowest[t] <= k]
        tied_from = [len(tied)] * (k + 1)
        at = len(tied)
        for i in range(k + 1):
            while at > 0 and lowest[tied[at - 1]] <= i:
                at -= 1
            tied_from[i] = at
        next_tied = [len(tied)] * (m + 1)
        at = len(tied)
        for t in range(m, -1, -1):
            while at > 0 and tied[at - 1] >= t:
                at -= 1
            next_tied[t] = at
        self.tied, self.tied_from, self.next_tied = tied, tied_from, next_tied

    def _relate_stack_to_stack(self) -> None:
        """``below[l]``: the lowest stack level under ``al`` with a gold arc to
        ``al`` (``None`` if there is none): the kappa of section 6."""
        gold, level = self.gold, self.level
        below: list[int | None] = [None] * (self.k + 1)
        for lvl, word in enumerate(self.stack):
            head_level = level.get(gold[word])
            if head_level is None:
                continue
            low, high = min(lvl, head_level), max(lvl, head_level)
            lowest = below[high]
            if lowest is None or low < lowest:
                below[high] = low
        self.below = below

    def _relate_components(self) -> None:
        """Per critical word ``c(t)``: the place of its component's root, and the
        lowest stack level related to ``c(t)`` or a word above it in the
        component (section 6's lambda')."""
        gold, critical, m = self.gold, self.critical, self.m
        lowest_above = self.lowest[:]
        root_of = list(range(m))
        for t in range(m - 2, -1, -1):
            if gold[critical[t]] == critical[t + 1]:
                lowest_above[t] = min(lowest_above[t], lowest_above[t + 1])
                root_of[t] = root_of[t + 1]
        self.lowest_above, self.root_of = lowest_above, root_of

    def first_kid(self, x: int, p: int) -> int:
        """Place of the first gold buffer dependent of stack word ``x`` from ``p``
        on (``m`` if none)."""
        span = self.kid_span.get(x)
        if span is None or p > span[1]:
            return self.m
        return span[0] if p <= span[0] else self.next_kid[p]

    def first_tied(self, i: int, p: int) -> int:
        """Place of the first critical word from ``p`` on with a gold arc to
        ``a0..ai`` (``m`` if none)."""
        at = max(self.next_tied[p], self.tied_from[i])
        return self.tied[at] if at < len(self.tied) else self.m

    def best_from(self, i: int, x: int) -> int:
        """Best count (critical part only) once ``a(i+1)..ak`` all lie in one
        subtree headed by ``x``, before any buffer word is touched; results
        stay valid across calls, so one instance serves several successors.

        The recursion runs on an explicit stack of move generators (each
        yields the states it needs and returns its best), so its depth,
        linear in ``k + m``, is not bounded by Python's recursion limit."""
        value, pending = self._state(i, x, 0)
        frames: list[Frame] = [] if pending is None else [pending]
        while frames:
            level, key, skipped, moves = frames[-1]
            try:
                # ``value`` is None only right after ``pending`` was pushed: ``send(None)`` starts a generator
                value, pending = self._state(*moves.send(value))  # type: ignore[arg-type]
            except StopIteration as done:
                level[key] = done.value
                frames.pop()
                value = skipped + done.value
                continue
            if pending is not None:
                frames.append(pending)
                value = None  # primes the new generator
        # an int: the count of the last frame done, or the one known at once (no frame)
        return value  # type: ignore[return-value]

    def _state(self, i: int, x: int, p: int) -> tuple[int, None] | tuple[None, Frame]:
        """The state of stack ``a0..ai x`` and buffer ``c(p)..``: the words
        before the first one related to ``x`` or ``a0..ai`` are built into that
        word's subtree with their chain arcs, and the state is memoised under
        that first word.  Returns ``(count, None)`` when the count is known,
        else ``(None, (memo level, key, count of the skipped words, moves))``
        where ``moves`` is the generator that computes the state's best."""
        m, chained = self.m, self.chained
        if i == -1:
            return (chained[m] - chained[p] + self.root_kids[p] if p < m else 0), None
        t = self.place.get(x)
        kid = m
        if p >= m:
            first = m
        elif t is not None:
            first = p if self.gold[x] == self.critical[p] else self.first_tied(i, p)
        else:
            kid = self.first_kid(x, p)
            head = self.place.get(self.gold[x], m)
            first = min(kid, head if head >= p else m, self.first_tied(i, p))
        skipped = chained[first] - chained[p] if p < m else 0
        level = self.memo[i]
        known = level.get((x, first))
        if known is not None:
            return skipped + known, None
        moves = self._stack_top_moves(i, x, first, kid) if t is None else self._critical_top_moves(i, x, t, first)
        return None, (level, (x, first), skipped, moves)

    def _stack_top_moves(self, i: int, x: int, p: int, kid: int) -> Moves:
        """The best move when the top ``x`` is a stack word; ``kid`` is the place
        of its first gold dependent from ``p`` on (``m`` if none)."""
        gold, m, chained = self.gold, self.m, self.chained
        if kid < m:
            return chained[kid] - chained[p] + 1 + (yield (i, x, kid + 1))
        below = self.stack[i]
        best = (gold[x] == below) + (yield (i - 1, below, p))
        if i >= 1:
            if gold[below] == x:
                best = max(best, 1 + (yield (i - 1, x, p)))
            else:
                lowest = self.below[self.level[x]]
                if lowest is not None and lowest < i:
                    best = max(best, (yield (self._kappa(i), x, p)))
        head = self.place.get(gold[x], m)
        if p <= head < m:
            best = max(best, chained[head] - chained[p] + 1 + (yield (i, self.critical[head], head + 1)))
        return best

    def _critical_top_moves(self, i: int, x: int, t: int, p: int) -> Moves:
        """The best move when the top ``x = c(t)`` is a critical word."""
        gold, chained, critical = self.gold, self.chained, self.critical
        below = self.stack[i]
        best = (gold[x] == below) + (yield (i - 1, below, p))
        root = self.root_of[t]
        if root > t:
            best = max(best, chained[root] - chained[t] + (gold[critical[root]] == below)
                       + (yield (i - 1, below, root + 1)))
        if i >= 1:
            head = self.place.get(gold[below])
            if head == t:
                best = max(best, 1 + (yield (i - 1, x, p)))
            elif head is not None and t < head <= root:
                best = max(best, chained[head] - chained[t] + 1 + (yield (i - 1, critical[head], head + 1)))
            elif self.lowest_above[t] < i and gold[critical[root]] != below:
                best = max(best, (yield (self._kappa(i), x, p)))
        return best

    def _kappa(self, i: int) -> int:
        """Level reached when the top takes ``ai`` (no gold arc) and with it
        every stack word down to the lowest one ``ai`` has a gold arc with."""
        lowest = self.below[i]
        return i - 1 if lowest is None else lowest
