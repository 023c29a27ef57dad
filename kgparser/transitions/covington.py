"""Covington's non-projective parser in Nivre's (2008) list-based formulation,
with the dynamic oracle of Gómez-Rodríguez & Fernández-González (2015), "An
efficient dynamic oracle for unrestricted non-projective parsing", ACL.

Configuration ⟨λ1, λ2, B, A⟩ (paper, Sect. 2).  The left focus word ``i`` is
the last word of λ1 and the right focus word ``j`` the first of the buffer B.
Every transition keeps λ1 = [first..i], λ2 = [i+1..j-1] and B = [j..n], so a
state is just ``(i, j)`` plus its arcs; ``i < first`` means λ1 is empty.

* ``shift``:  λ1 := λ1·λ2·j, λ2 := [], drop ``j`` from B (so ``i = j``, ``j + 1``);
* ``no-arc``: move ``i`` to the front of λ2;
* ``left``:   add ``j -> i``, then as no-arc (``i`` has no head, ``i`` is no
  ancestor of ``j``);
* ``right``:  add ``i -> j``, then as no-arc (``j`` has no head, ``j`` is no
  ancestor of ``i``).

Final when B is empty (paper, Sect. 2); words left without a head are then
attached to the root 0 (footnote 1 and docs/transition-contract.md).  The root itself:

* ``root_node=False`` (default, the paper's formulation): λ1 starts empty and
  the root is never a focus word, so a word gets the root as head exactly by
  never receiving a head;
* ``root_node=True`` (Nivre 2008): λ1 starts as [0], so ``right`` can attach
  a word to the root explicitly (``left`` never gives the root a head); words
  left headless are still attached to the root at the end.

Option ``headless`` (with ``root_node``): what the loss the dynamic oracle
minimizes makes of a word left without a head.  ``"root"`` (default, docs/transition-contract.md
and the paper's footnote 1): it is the root's dependent, so the gold root word
may be left headless at no cost and the oracle never teaches the root arc.
``"wrong"``: it counts as an error, so the gold arc from the root is an
ordinary arc of Theorem 1's loss (reachable while ``i`` can still reach 0 with
the gold root word as ``j``) and training teaches ``right`` from the root
(issue 18: UD has one root, and the dynamic models' root choice was poor).

Both variants derive every tree over ``n`` words.  The acyclicity check uses a
union-find structure over the partial forest (paper, Sect. 3, after
Algorithm 1): arcs are only ever added, always from some node to the root of
another tree, so each set is one tree of A and keeps a pointer to that tree's
root; "does ``h -> d`` close a cycle" is "is ``d`` the root of ``h``'s tree",
O(α(n)) amortized (union by size, path halving).

Option ``tie_break`` (default ``"none"``, the paper's oracle): which of
several zero-cost actions training takes as correct (see the tie-break notes
in :mod:`kgparser.transitions.base`).  In Covington ``no-arc`` costs 0 in
almost every state and ``shift`` only once no reachable gold arc is left
between ``j`` and λ1, so a model trained on every zero-cost action can learn
to walk ``i`` left to the start of the sentence before each shift.
``"shortest"`` keeps the zero-cost actions after which a least-loss
computation is shortest (:meth:`CovingtonDynamicOracle.remaining_length`):
away from cycles of A ∪ I, ``shift`` alone whenever it costs 0.  A list of
actions keeps the zero-cost actions that come first in it, e.g. ``[shift]``
(``no-arc``, ``left`` and ``right`` cost 1 more whenever ``shift`` costs 0).

Option ``lost_words`` (default ``"free"``, the paper's oracle): after the
tie-break, what training takes as correct where a zero-cost ``left`` or
``right`` builds an arc outside the gold tree (free under the Hamming loss
once its dependent's gold head is out of reach).  ``"spare"``: the other
zero-cost actions, so such words stay headless for the single-root repair;
``"attach"``: those arcs, so the model learns to give such words a head
where the parser meets them first (issue 18: dynamic models leave many more
words headless than static ones, and every arc over such a word's tree is
non-projective).
"""
from __future__ import annotations

from typing import Sequence

from ..errors import KgparserError
from . import register
from .base import (
    HEADLESS_ROOT,
    HEADLESS_WRONG,
    LOST_WORDS_FREE,
    NO_HEAD,
    ROOT,
    TIE_BREAK_NONE,
    State,
    StateKey,
    TieBreak,
    TieBreakingOracle,
    TransitionSystem,
    headless_option,
    lost_words_option,
    tie_break_option,
    tie_break_value,
)
from .trees import children

SHIFT, NO_ARC, LEFT, RIGHT = "shift", "no-arc", "left", "right"


class CovingtonOptionError(KgparserError, ValueError):
    """A bad option of the ``covington`` system."""


class CovingtonState(State):
    """Focus positions ``i`` (last of λ1) and ``j`` (first of B), the arcs, and
    a union-find over the trees of A: ``_parent``/``_size`` are the usual
    disjoint-set forest, ``_top[rep]`` the root (headless node) of the tree
    that ``rep`` represents."""

    __slots__ = ("i", "j", "first", "_parent", "_size", "_top")

    def __init__(self, n: int, root_node: bool):
        super().__init__(n)
        self.first = ROOT if root_node else 1
        self.i = 0  # λ1 = [0] with the root node, else [] (0 < first)
        self.j = 1
        self._parent = list(range(n + 1))
        self._size = [1] * (n + 1)
        self._top = list(range(n + 1))

    def copy(self) -> CovingtonState:
        new = self._copy_arcs_to(object.__new__(CovingtonState))
        new.i, new.j, new.first = self.i, self.j, self.first
        new._parent = self._parent[:]
        new._size = self._size[:]
        new._top = self._top[:]
        return new

    def key(self) -> StateKey:
        # the union-find is a function of the heads, so it is not part of the key
        return (self.i, self.j, self.first, tuple(self.heads), tuple(self.labels))

    def tree_root(self, node: int) -> int:
        """The headless node at the top of ``node``'s tree in A."""
        return self._top[self._find(node)]

    def link(self, head: int, dep: int, label: str | None) -> None:
        """Add ``head -> dep`` (``dep`` is the root of its tree) and merge the
        two trees; the merged tree keeps the root of ``head``'s tree."""
        a, b = self._find(head), self._find(dep)
        top = self._top[a]
        if self._size[a] < self._size[b]:
            a, b = b, a
        self._parent[b] = a
        self._size[a] += self._size[b]
        self._top[a] = top
        self.add_arc(head, dep, label)

    def _find(self, node: int) -> int:
        """Representative of ``node``'s set.  Path halving only shortens internal
        union-find links: heads, labels, focus words and key never change."""
        parent = self._parent
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node


@register("covington")
class Covington(TransitionSystem[CovingtonState]):
    actions = (SHIFT, NO_ARC, LEFT, RIGHT)
    arc_actions = frozenset({LEFT, RIGHT})
    #: focus words ``l1_0`` = i and ``b0`` = j, their outer neighbours ``l1_1``
    #: (i-1, in λ1) and ``b1`` (j+1, in B), and ``l2_0`` (i+1, the first word of
    #: λ2, i.e. the nearest word between the focus words; empty when adjacent)
    feature_names = ("l1_0", "l1_1", "l2_0", "b0", "b1")
    #: adds no arc and only moves ``i``: the decoder scores a run of it ahead
    #: (:meth:`chain_features`, :mod:`kgparser.inference.decode`)
    chain_action = NO_ARC

    def __init__(self, root_node: bool = False, tie_break: object = TIE_BREAK_NONE, lost_words: str = LOST_WORDS_FREE,
                 headless: str = HEADLESS_ROOT):
        self.root_node = bool(root_node)
        self.tie_break = tie_break_option(self.name, self.actions, tie_break)
        self.lost_words = lost_words_option(self.name, lost_words)
        self.headless = headless_option(self.name, headless, self.root_node, CovingtonOptionError)

    def options(self) -> dict[str, object]:
        return {"root_node": self.root_node, "tie_break": tie_break_value(self.tie_break),
                "lost_words": self.lost_words, "headless": self.headless}

    def initial_state(self, n: int) -> CovingtonState:
        return CovingtonState(n, self.root_node)

    def legal_actions(self, state: CovingtonState) -> list[str]:
        i, j = state.i, state.j
        if j >= len(state.heads):
            return []
        legal = [SHIFT]
        if i >= state.first:
            legal.append(NO_ARC)
            if i != ROOT and state.heads[i] == NO_HEAD and state.tree_root(j) != i:
                legal.append(LEFT)
            if state.heads[j] == NO_HEAD and state.tree_root(i) != j:
                legal.append(RIGHT)
        return legal

    def apply(self, state: CovingtonState, action: str, label: str | None = None) -> None:
        if action == SHIFT:
            state.i = state.j
            state.j += 1
            return
        if action == LEFT:
            state.link(state.j, state.i, label)
        elif action == RIGHT:
            state.link(state.i, state.j, label)
        elif action != NO_ARC:
            raise ValueError(f"covington has no action {action!r}")
        state.i -= 1

    def is_final(self, state: CovingtonState) -> bool:
        return state.j >= len(state.heads)

    def arc_of(self, state: CovingtonState, action: str) -> tuple[int, int]:
        if action == LEFT:
            return state.j, state.i
        if action == RIGHT:
            return state.i, state.j
        raise ValueError(f"{action!r} builds no arc")

    def features(self, state: CovingtonState) -> list[int]:
        i, j, first = state.i, state.j, state.first
        n = len(state.heads) - 1
        return [
            i if i >= first else NO_HEAD,
            i - 1 if i - 1 >= first else NO_HEAD,
            i + 1 if i + 1 < j else NO_HEAD,
            j if j <= n else NO_HEAD,
            j + 1 if j + 1 <= n else NO_HEAD,
        ]

    def chain_features(self, state: CovingtonState, count: int) -> list[list[int]]:
        """:meth:`features` of the states ``count`` (at most) No-Arc steps in a row
        reach from ``state``, nearest first, without applying them: No-Arc moves
        ``i`` one word left and changes nothing else.  The run stops at the state
        whose λ1 is empty, where only Shift is legal (and nothing is scored)."""
        i, j, first = state.i, state.j, state.first
        n = len(state.heads) - 1
        b0, b1 = j if j <= n else NO_HEAD, j + 1 if j + 1 <= n else NO_HEAD
        # after the step to k (< i < j) the focus is k, l1_1 = k - 1 and l2_0 = k + 1
        return [[k, k - 1 if k - 1 >= first else NO_HEAD, k + 1, b0, b1]
                for k in range(i - 1, max(first, i - count) - 1, -1)]

    def arc_probe(self, state: CovingtonState, head: int, dep: int) -> tuple[list[int], str] | None:
        """The configuration with focus words ``i = min(head, dep)`` and ``j = max(head, dep)``,
        where ``right`` (``i -> j``) or ``left`` (``j -> i``) adds the arc: the features read
        positions only, so this is exactly the state the parser is in when it considers the
        pair.  Root arcs exist only with ``root_node`` (``i = 0``)."""
        if head == ROOT and not self.root_node:
            return None
        i, j = min(head, dep), max(head, dep)
        n, first = len(state.heads) - 1, state.first
        positions = [i, i - 1 if i - 1 >= first else NO_HEAD, i + 1 if i + 1 < j else NO_HEAD,
                     j, j + 1 if j + 1 <= n else NO_HEAD]
        return positions, RIGHT if head < dep else LEFT

    def can_build(self, gold_heads: Sequence[int]) -> bool:
        return True

    def static_oracle(self, gold_heads: Sequence[int]) -> CovingtonStaticOracle:
        return CovingtonStaticOracle(gold_heads, self.root_node)

    def dynamic_oracle(self, gold_heads: Sequence[int]) -> CovingtonDynamicOracle:
        return CovingtonDynamicOracle(gold_heads, system=self, tie_break=self.tie_break)


class CovingtonStaticOracle:
    """Canonical computation: for each right focus word ``j``, walk ``i`` left
    through λ1 building the gold arcs between ``i`` and ``j`` and shift once no
    gold partner of ``j`` is left in λ1.  With ``root_node`` the gold arcs from
    the root are built explicitly; without it they come from leaving the word
    headless."""

    def __init__(self, gold_heads: Sequence[int], root_node: bool):
        self.gold = list(gold_heads)
        n = len(self.gold) - 1
        # leftmost[j]: smallest word in 0..j-1 linked to j in the gold tree (j if none)
        leftmost = list(range(n + 1))
        for d in range(1, n + 1):
            h = self.gold[d]
            if h < d and (h != ROOT or root_node):
                leftmost[d] = min(leftmost[d], h)
            elif h > d:
                leftmost[h] = min(leftmost[h], d)
        self.leftmost = leftmost

    def next_action(self, state: CovingtonState) -> str:
        i, j, gold = state.i, state.j, self.gold
        if i >= state.first:
            if i != ROOT and gold[i] == j:
                return LEFT
            if gold[j] == i:
                return RIGHT
            if i > self.leftmost[j]:
                return NO_ARC
        return SHIFT


class CovingtonDynamicOracle(TieBreakingOracle[CovingtonState]):
    """Exact costs from the loss of Theorem 1 (paper, Sect. 3):

        loss(c) = |U(c)| + n_c(A ∪ I(c)),

    the gold arcs that are individually unreachable plus the cycles of the
    graph of built and individually reachable arcs.  A gold arc ``x -> y``
    outside A is unreachable (Algorithm 1) when ``max(x, y) < j``, or
    ``max(x, y) = j`` and ``min(x, y) > i``, or ``y`` has another head, or
    ``x`` and ``y`` are in one tree of A, i.e. ``y`` is the root of ``x``'s
    tree.  A gold arc from the root is reachable exactly while its dependent
    has no head (or the root as head): leaving it headless builds it; with
    the system's ``headless: wrong`` it is an ordinary arc from node 0 instead
    (the loss of :meth:`Covington.final_loss`; node 0 never gets a head, so
    it lies on no cycle and the theorem's argument is unchanged).

    One O(n) pass per state finds the reachable gold arcs and the cycles; each
    action's cost is then a delta: the gold arcs it makes unreachable, minus
    the cycles those arcs broke, plus one if its new arc closes a cycle.  A
    cycle of A ∪ I contains an arc of I, so it runs through roots of trees of
    A; it is found on the graph that maps each tree root ``r`` to the tree of
    its gold head, where an arc into ``r`` lies on a cycle iff ``r`` does.

    :meth:`exact_costs` are these costs; :meth:`costs` adds the tie-break of
    the system's ``tie_break`` option (:class:`~.base.TieBreakingOracle`).
    """

    def __init__(self, gold_heads: Sequence[int], *, system: Covington | None = None,
                 tie_break: TieBreak = TIE_BREAK_NONE):
        self.gold = list(gold_heads)
        self.kids = children(self.gold)
        self.system = system or Covington()
        self.tie_break = tie_break
        #: ``headless: wrong``: gold root arcs have to be built
        self.root_arcs = self.system.headless == HEADLESS_WRONG

    def loss(self, state: CovingtonState) -> int:
        """ℓ(c) of Theorem 1 (the least Hamming loss of a reachable tree)."""
        reach = self._reachable(state)
        cycles = self._cycles(state, reach)
        return reach.count(False) + len(set(cycles) - {-1})

    def remaining_length(self, state: CovingtonState) -> int:
        """Transitions of the shortest least-loss computation from ``state``
        (``tie_break="shortest"``), in O(n).

        Such a computation builds the reachable gold arcs between words (I
        less A; root arcs excluded unless ``headless: wrong``: leaving the
        word headless builds them)
        except one per cycle of A ∪ I, loses nothing else (Theorem 1), and
        needs ``n - j + 1`` shifts.  Arc actions and ``no-arc`` all move
        ``i`` one word left, so for each right focus ``r`` it moves ``i``
        down to the leftmost partner ``x`` of ``r`` among those arcs (``i - x
        + 1`` moves for ``r = j``, ``r - x`` later) and shifts.  Dropping the
        arc to that partner saves the moves down to the next one.  The
        unbuilt arcs at one ``r`` that lie on cycles lie on one cycle: each
        goes into ``r`` (a tree root then) or into a tree root whose edge in
        the cycle graph ends at the root of ``r``'s tree, so every such cycle
        passes that root, which is on at most one.  So each cycle drops the
        arc that saves most, independently of the others."""
        n = len(self.gold) - 1
        if state.j > n:
            return 0
        reach = self._reachable(state)
        nearest, second = self._leftmost_partners(state, reach)
        on_cycle = self._cycles(state, reach)
        moves = 0
        saving: dict[int, int] = {}
        for r in range(state.j, n + 1):
            x, dep = nearest[r]
            if dep == NO_HEAD:
                continue
            start = state.i if r == state.j else r - 1
            moves += start - x + 1
            cycle = on_cycle[dep]
            if cycle != -1:
                next_x = second[r]
                gain = start - x + 1 if next_x == NO_HEAD else next_x - x
                saving[cycle] = max(saving.get(cycle, 0), gain)
        return n - state.j + 1 + moves - sum(saving.values())

    def _leftmost_partners(self, state: CovingtonState, reach: list[bool]) -> tuple[list[tuple[int, int]], list[int]]:
        """For each right end ``r``, the unbuilt reachable gold arcs between
        ``r`` and an earlier word: ``nearest[r] = (x, dependent)`` for the
        leftmost such word ``x`` (``(-1, -1)`` if none) and ``second[r]`` the
        next one (``-1`` if none)."""
        gold, heads = self.gold, state.heads
        nearest = [(NO_HEAD, NO_HEAD)] * len(gold)
        second = [NO_HEAD] * len(gold)
        for y in range(1, len(gold)):
            x = gold[y]
            if (x == ROOT and not self.root_arcs) or heads[y] != NO_HEAD or not reach[y]:
                continue
            lo, r = (x, y) if x < y else (y, x)
            low = nearest[r][0]
            if low == NO_HEAD or lo < low:
                second[r] = low
                nearest[r] = (lo, y)
            elif second[r] == NO_HEAD or lo < second[r]:
                second[r] = lo
        return nearest, second

    def exact_costs(self, state: CovingtonState) -> dict[str, int]:
        """``loss(after) - loss(before)`` for each legal action, in O(n) for all
        of them together (reads the state, copies nothing)."""
        i, j = state.i, state.j
        if j >= len(self.gold):
            return {}
        reach = self._reachable(state)
        on_cycle = self._cycles(state, reach)
        costs = {SHIFT: self._shift_cost(state, reach, on_cycle)}
        if i >= state.first:
            costs[NO_ARC] = self._no_arc_cost(state, reach, on_cycle)
            heads = state.heads
            if i != ROOT and heads[i] == NO_HEAD and state.tree_root(j) != i:
                costs[LEFT] = self._arc_cost(state, j, i, reach, on_cycle)
            if heads[j] == NO_HEAD and state.tree_root(i) != j:
                costs[RIGHT] = self._arc_cost(state, i, j, reach, on_cycle)
        return costs

    def _reachable(self, state: CovingtonState) -> list[bool]:
        """``reach[y]``: the gold arc into ``y`` is in I(c) (built or individually
        reachable); ``reach[0]`` is True so that ``count(False)`` is |U(c)|."""
        i, j, heads, gold = state.i, state.j, state.heads, self.gold
        tree_root = state.tree_root
        reach = [True] * len(gold)
        for y in range(1, len(gold)):
            h, x = heads[y], gold[y]
            if h != NO_HEAD:
                reach[y] = h == x
            elif x != ROOT or self.root_arcs:
                near, far = (x, y) if x < y else (y, x)
                reach[y] = (far > j or (far == j and near <= i)) and tree_root(x) != y
        return reach

    def _cycles(self, state: CovingtonState, reach: list[bool]) -> list[int]:
        """For each node, an id of the cycle of A ∪ I through the arc into it,
        or -1.  Walks the functional graph tree root -> root of the tree of its
        gold head (only roots with a reachable gold arc from a word)."""
        heads, gold = state.heads, self.gold
        tree_root = state.tree_root
        on_cycle = [-1] * len(gold)
        seen = [0] * len(gold)  # 0 unseen, else the start of the walk that saw it
        for start in range(1, len(gold)):
            node = start
            while (node != ROOT and seen[node] == 0 and heads[node] == NO_HEAD
                   and reach[node] and gold[node] != ROOT):
                seen[node] = start
                node = tree_root(gold[node])
            if node != ROOT and seen[node] == start:
                cycle_node = node
                while True:
                    on_cycle[cycle_node] = node
                    cycle_node = tree_root(gold[cycle_node])
                    if cycle_node == node:
                        break
        return on_cycle

    @staticmethod
    def _delta(lost: list[int], on_cycle: list[int]) -> int:
        """Loss change when the gold arcs into ``lost`` become unreachable: one
        each, minus one per distinct cycle they were on (cycles are disjoint)."""
        return len(lost) - len({on_cycle[y] for y in lost} - {-1})

    def _shift_cost(self, state: CovingtonState, reach: list[bool], on_cycle: list[int]) -> int:
        """Shift: every reachable gold arc still unbuilt between ``j`` and λ1
        is lost (its right end is passed)."""
        j, heads, gold = state.j, state.heads, self.gold
        lost = [k for k in self.kids[j] if k < j and heads[k] == NO_HEAD and reach[k]]
        if (gold[j] != ROOT or self.root_arcs) and gold[j] < j and heads[j] == NO_HEAD and reach[j]:
            lost.append(j)
        return self._delta(lost, on_cycle)

    def _no_arc_cost(self, state: CovingtonState, reach: list[bool], on_cycle: list[int]) -> int:
        """No-arc: only the gold arc between the two focus words is lost."""
        i, j, heads, gold = state.i, state.j, state.heads, self.gold
        if i == ROOT and not self.root_arcs:
            return 0
        if i != ROOT and gold[i] == j and heads[i] == NO_HEAD and reach[i]:
            return self._delta([i], on_cycle)
        if gold[j] == i and heads[j] == NO_HEAD and reach[j]:
            return self._delta([j], on_cycle)
        return 0

    def _arc_cost(self, state: CovingtonState, head: int, dep: int, reach: list[bool], on_cycle: list[int]) -> int:
        """Adding ``head -> dep`` loses the reachable gold arc into ``dep`` if it
        differs, and the gold arc into ``top`` (root of ``head``'s tree, the
        root of the merged tree) if it comes from ``dep``'s tree; the pair of
        focus words is thereby settled too.  A new non-gold arc closes a cycle
        of A ∪ I when the walk up from ``head`` reaches ``dep``'s tree."""
        gold = self.gold
        tree_root = state.tree_root
        lost = []
        replaces = gold[dep] != head
        if replaces and reach[dep]:
            lost.append(dep)
        top = tree_root(head)
        if top != ROOT and reach[top] and gold[top] != ROOT and tree_root(gold[top]) == dep:
            lost.append(top)
        delta = self._delta(lost, on_cycle)
        if replaces and self._walk_reaches(state, head, dep, reach, lost):
            delta += 1
        return delta

    def _walk_reaches(self, state: CovingtonState, head: int, dep: int, reach: list[bool], lost: list[int]) -> bool:
        """Whether following heads from ``head`` in A ∪ I, less the arcs into
        ``lost``, enters the tree of ``dep`` (it visits each tree at most once
        unless it runs into a cycle avoiding ``dep``, hence the bound)."""
        gold = self.gold
        tree_root = state.tree_root
        node = head
        for _ in range(len(gold)):
            top = tree_root(node)
            if top == dep:
                return True
            if top == ROOT or not reach[top] or gold[top] == ROOT or top in lost:
                return False
            node = gold[top]
        return False
