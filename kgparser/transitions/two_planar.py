"""The 2-Planar system (Gómez-Rodríguez & Nivre 2010, "A transition-based
parser for 2-planar dependency structures", ACL, section 3) with a static
oracle after that paper and the dynamic oracle of Fernández-González &
Gómez-Rodríguez (2018, "A dynamic oracle for linear-time 2-Planar dependency
parsing", NAACL, section 3).

Configuration (2018, section 2 and figure 1): two stacks, one *active* and one
*inactive*, each tied to one plane (page) of the output; a buffer ``b..n``
(words are shifted in order, so the buffer is one index); the arcs.  The
stacks are kept as ``stacks[0]`` / ``stacks[1]`` (the physical planes 0 and 1)
with ``active`` naming the active one, and each arc remembers the plane it was
built in (``state.plane[d]``), which the dynamic oracle needs.

* ``shift``:  push ``b0`` onto *both* stacks;
* ``reduce``: pop the active stack;
* ``left``:   ``b0 -> s0`` (``s0`` = top of the active stack), nothing popped;
* ``right``:  ``s0 -> b0``, nothing popped;
* ``switch``: exchange the active and inactive stacks; never twice in a row
  (the "control constraint" that makes the parser terminate).

``left``/``right`` respect single-head and acyclicity.  The state is final
when the buffer is empty.

Root handling: as in the 2018 paper's initial configuration
``<[], [], [w1..wn], {}>`` the root is *not* a node of the parser.  Arcs from
the root are never built; following ``DESIGN.md``, the words left headless are
the dependents of the root.  A gold root word must therefore stay headless.
Root arcs never cross anything, so the system builds exactly the trees whose
word-to-word arcs are 2-planar (their crossing graph is bipartite), which is
:meth:`TwoPlanar.can_build`; there is no artificial root arc to make a tree
non-2-planar.

Canonical plane assignment (:func:`canonical_planes`).  The 2018 dynamic oracle
is exact only relative to a fixed assignment of gold arcs to planes (section
3); it takes the assignment the static oracle of Gómez-Rodríguez & Nivre (2010)
produces, "which prefers to build arcs in the active plane to minimize the
number of Switch transitions".  Here it is, precisely.  Go through the words
``b = 1..n``; at each, look at the gold arcs ``(x, b)`` with ``x < b`` (both
directions, root arcs excluded) from the nearest ``x`` to the farthest.  An
arc whose plane is still open goes to the plane active at that moment, and so
does, alternately, its whole connected component of the crossing graph (arcs
that cross must be in different planes, so one choice fixes the component).
After the arcs of ``b``, if any of them lies in the other plane the parser
switches once and stays there.  This is what the static oracle does: build
the active plane's arcs with ``b0`` (reducing down to them, nearest first),
then switch if the other plane has arcs with ``b0``, then shift.  (MaltParser's
implementation also switches before reducing when the inactive top is linked
to ``b0``; we keep such an arc in the active plane when it is still free,
which needs fewer switches.)

Gold trees that are not 2-planar: following footnote 4 of the 2018 paper, the
oracles work with a 2-planar subset (:func:`two_planar_subset`: arcs are kept
shortest first while the crossing graph stays bipartite); the dropped words
are left without a gold arc, and every dynamic-oracle loss counts them as lost.

Dynamic oracle (:class:`TwoPlanarDynamicOracle`).  Section 3: the loss of a
configuration relative to the canonical assignment is
``|U1 ∪ U2| + nc(A ∪ I1 ∪ I2)``: gold arcs not yet built in their plane that are
individually unreachable, plus the cycles that the arcs built so far and the
individually reachable gold arcs form.  Costs are loss differences, computed
without evaluating any loss in full: an action changes the loss only at the
few words whose arcs it builds or makes unreachable and on the cycles through
them (see :class:`TwoPlanarDynamicOracle`).  Finding those cycles follows
gold heads from tree root to tree root, O(n) at worst but a few steps in
practice, so the time per call hardly grows with the sentence.  ``switch``
costs the least loss change after the action the next state is forced to
take (section 3, the corrected Switch cost), and in a state just reached by
``switch`` the costs are taken against the least of the remaining actions, so
that they are exact for the parser with the control constraint.

Secondary costs (the tie-break notes of :mod:`kgparser.transitions.base`):
:meth:`TwoPlanarDynamicOracle.exact_costs` are the costs above, and
:meth:`~TwoPlanarDynamicOracle.costs` adds, first, option
``regularize_switch`` (default ``True``, as in the paper's training),
section 3's "Regularization" as the paper implements it (see
:meth:`TwoPlanarDynamicOracle.regularized_costs`), then option ``tie_break``
(default ``"none"``): ``"shortest"`` is that regularization made exact, the
zero-cost actions after which a least-loss computation is shortest
(:meth:`TwoPlanarDynamicOracle.remaining_length`), which also disfavours a
``reduce`` the computation never needs and an arc onto a word whose gold arc
is lost; a list of actions keeps the zero-cost actions that come first in it.

Features (2018, section 4.2): the top three words of the active stack, the
first buffer word and the top two words of the inactive stack:
``s0, s1, s2, b0, i0, i1``.
"""
from __future__ import annotations

from bisect import bisect_left
from itertools import product
from typing import Sequence

from . import register
from .base import (NO_HEAD, ROOT, TIE_BREAK_NONE, State, TieBreakingOracle, TransitionSystem, penalize,
                   tie_break_option, tie_break_value)

SHIFT, LEFT, RIGHT, REDUCE, SWITCH = "shift", "left", "right", "reduce", "switch"
NO_PLANE = -1


class TwoPlanarState(State):
    """``stacks[0]``, ``stacks[1]`` (bottom first), ``active`` (index of the
    active stack), ``b`` (first buffer word; ``n + 1`` when empty),
    ``switched`` (the last action was ``switch``) and ``plane[d]`` (plane the
    arc into ``d`` was built in, :data:`NO_PLANE` if none)."""

    __slots__ = ("stacks", "active", "b", "switched", "plane")

    def __init__(self, n: int):
        super().__init__(n)
        self.stacks = ([], [])
        self.active = 0
        self.b = 1
        self.switched = False
        self.plane = [NO_PLANE] * (n + 1)

    def copy(self) -> "TwoPlanarState":
        new = self._copy_arcs_to(object.__new__(TwoPlanarState))
        new.stacks = (self.stacks[0][:], self.stacks[1][:])
        new.active = self.active
        new.b = self.b
        new.switched = self.switched
        new.plane = self.plane[:]
        return new

    def key(self) -> tuple:
        return (tuple(self.stacks[0]), tuple(self.stacks[1]), self.active, self.b, self.switched,
                tuple(self.heads), tuple(self.labels), tuple(self.plane))


def _tree_root(heads: Sequence[int], word: int) -> int:
    """The headless word at the top of ``word``'s tree in a partial forest."""
    while heads[word] != NO_HEAD:
        word = heads[word]
    return word


@register("two-planar")
class TwoPlanar(TransitionSystem):
    actions = (SHIFT, LEFT, RIGHT, REDUCE, SWITCH)
    arc_actions = frozenset({LEFT, RIGHT})
    feature_names = ("s0", "s1", "s2", "b0", "i0", "i1")

    def __init__(self, regularize_switch: bool = True, tie_break=TIE_BREAK_NONE):
        self.regularize_switch = regularize_switch
        self.tie_break = tie_break_option(self.name, self.actions, tie_break)

    def options(self) -> dict:
        return {"regularize_switch": self.regularize_switch, "tie_break": tie_break_value(self.tie_break)}

    def initial_state(self, n: int) -> TwoPlanarState:
        return TwoPlanarState(n)

    def legal_actions(self, state: TwoPlanarState) -> list[str]:
        b, heads = state.b, state.heads
        if b >= len(heads):
            return []
        legal = [SHIFT]
        stack = state.stacks[state.active]
        if stack:
            s0 = stack[-1]
            if heads[s0] == NO_HEAD and _tree_root(heads, b) != s0:
                legal.append(LEFT)
            if heads[b] == NO_HEAD and _tree_root(heads, s0) != b:
                legal.append(RIGHT)
            legal.append(REDUCE)
        if not state.switched:
            legal.append(SWITCH)
        return legal

    def apply(self, state: TwoPlanarState, action: str, label: str | None = None) -> None:
        if action == SHIFT:
            state.stacks[0].append(state.b)
            state.stacks[1].append(state.b)
            state.b += 1
        elif action == REDUCE:
            state.stacks[state.active].pop()
        elif action == LEFT or action == RIGHT:
            head, dep = self.arc_of(state, action)
            state.add_arc(head, dep, label)
            state.plane[dep] = state.active
        elif action == SWITCH:
            state.active = 1 - state.active
        else:
            raise ValueError(f"two-planar has no action {action!r}")
        state.switched = action == SWITCH

    def is_final(self, state: TwoPlanarState) -> bool:
        return state.b >= len(state.heads)

    def arc_of(self, state: TwoPlanarState, action: str) -> tuple[int, int]:
        s0 = state.stacks[state.active][-1]
        if action == LEFT:
            return state.b, s0
        if action == RIGHT:
            return s0, state.b
        raise ValueError(f"{action!r} builds no arc")

    def features(self, state: TwoPlanarState) -> list[int]:
        active, inactive = state.stacks[state.active], state.stacks[1 - state.active]
        return [
            active[-1] if active else NO_HEAD,
            active[-2] if len(active) > 1 else NO_HEAD,
            active[-3] if len(active) > 2 else NO_HEAD,
            state.b if state.b < len(state.heads) else NO_HEAD,
            inactive[-1] if inactive else NO_HEAD,
            inactive[-2] if len(inactive) > 1 else NO_HEAD,
        ]

    def can_build(self, gold_heads: Sequence[int]) -> bool:
        return is_two_planar(gold_heads)

    def static_oracle(self, gold_heads: Sequence[int]) -> "TwoPlanarStaticOracle":
        return TwoPlanarStaticOracle(gold_heads)

    def dynamic_oracle(self, gold_heads: Sequence[int]) -> "TwoPlanarDynamicOracle":
        return TwoPlanarDynamicOracle(gold_heads, regularize_switch=self.regularize_switch, system=self,
                                      tie_break=self.tie_break)


# --- planes -----------------------------------------------------------------

def _span(heads: Sequence[int], dep: int) -> tuple[int, int]:
    head = heads[dep]
    return (head, dep) if head < dep else (dep, head)


def word_arcs(heads: Sequence[int]) -> list[int]:
    """Dependents of the arcs between two words (root arcs and missing heads
    excluded); an arc is named by its dependent."""
    return [d for d in range(1, len(heads)) if heads[d] != NO_HEAD and heads[d] != ROOT]


def crossing_graph(heads: Sequence[int], deps: Sequence[int] | None = None) -> dict[int, list[int]]:
    """``graph[d]``: the arcs (named by dependent) among ``deps`` (default: all
    word-to-word arcs) that cross the arc into ``d``.  Two arcs cross when
    exactly one end of one lies strictly inside the other; arcs sharing an end
    never cross."""
    deps = word_arcs(heads) if deps is None else list(deps)
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


def is_two_planar(heads: Sequence[int]) -> bool:
    """True iff the word-to-word arcs split into two sets of non-crossing arcs,
    i.e. their crossing graph is bipartite (Gómez-Rodríguez & Nivre 2010,
    section 2)."""
    graph = crossing_graph(heads)
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


def two_planar_subset(heads: Sequence[int]) -> list[int]:
    """The gold tree with the arcs that break 2-planarity removed (their
    dependents get :data:`NO_HEAD`): word-to-word arcs are kept shortest first
    (ties: leftmost first) as long as the kept arcs' crossing graph stays
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

    order = sorted(word_arcs(heads), key=lambda d: (_span(heads, d)[1] - _span(heads, d)[0], _span(heads, d)))
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


def canonical_planes(heads: Sequence[int]) -> list[int]:
    """The canonical plane (0 or 1) of each word-to-word arc of a 2-planar
    tree, named by dependent; :data:`NO_PLANE` for root arcs and missing heads.

    The planes the static oracle builds the arcs in, starting with plane 0
    active (see the module docstring): for ``b = 1..n``, the arcs ``(x, b)``,
    ``x < b``, nearest ``x`` first; an arc whose crossing-graph component has
    no plane yet gives it one, the arc going to the active plane; afterwards
    the active plane flips if some arc of ``b`` is in the other plane."""
    n = len(heads) - 1
    deps = word_arcs(heads)
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


class _CanonicalGold:
    """A gold tree reduced to a 2-planar subset, with its canonical planes:
    ``heads`` (dropped arcs: :data:`NO_HEAD`), ``plane`` per dependent and
    ``ending_at[b]``: the gold arcs ``(x, b)`` with ``x < b``, nearest first."""

    def __init__(self, gold_heads: Sequence[int]):
        self.heads = two_planar_subset(gold_heads)
        self.plane = canonical_planes(self.heads)
        n = len(gold_heads) - 1
        self.ending_at: list[list[int]] = [[] for _ in range(n + 2)]
        for d in word_arcs(self.heads):
            self.ending_at[max(d, self.heads[d])].append(d)
        for arcs_here in self.ending_at:
            arcs_here.sort(key=lambda d: -min(d, self.heads[d]))


class TwoPlanarStaticOracle:
    """The static oracle after Gómez-Rodríguez & Nivre (2010), following the
    canonical planes: build an arc between ``s0`` and ``b0`` if it belongs to
    the active plane; else reduce if the active plane still has an arc between
    ``b0`` and a word below ``s0``; else switch if the other plane has an arc
    with ``b0`` left; else shift.  For a tree that is not 2-planar it builds
    the 2-planar subset (the dropped words end attached to the root)."""

    def __init__(self, gold_heads: Sequence[int]):
        self.canon = _CanonicalGold(gold_heads)

    def _pending(self, state: TwoPlanarState, plane: int) -> bool:
        """Some gold arc between ``b0`` and an earlier word, in ``plane``, is not built."""
        heads, gold, planes = state.heads, self.canon.heads, self.canon.plane
        return any(planes[d] == plane and heads[d] != gold[d] for d in self.canon.ending_at[state.b])

    def next_action(self, state: TwoPlanarState) -> str:
        gold, planes = self.canon.heads, self.canon.plane
        b, active, heads = state.b, state.active, state.heads
        stack = state.stacks[active]
        if stack:
            s0 = stack[-1]
            if gold[s0] == b and planes[s0] == active and heads[s0] == NO_HEAD:
                return LEFT
            if gold[b] == s0 and planes[b] == active and heads[b] == NO_HEAD:
                return RIGHT
        if self._pending(state, active):
            return REDUCE
        if not state.switched and self._pending(state, 1 - active):
            return SWITCH
        return SHIFT


class TwoPlanarDynamicOracle(TieBreakingOracle):
    """Fernández-González & Gómez-Rodríguez (2018), section 3: costs relative
    to the canonical plane assignment.

    The loss is ``|U1 ∪ U2| + nc(A ∪ I1 ∪ I2)``.  A gold arc ``x -> y`` of
    plane ``i`` (span ``lo < hi``) not built in plane ``i`` is individually
    unreachable when ``hi`` has left the buffer, or ``lo`` has left the
    buffer and is not on stack ``i``, or its dependent already has a head (in
    any plane, the right head included: an arc built in the wrong plane
    counts as lost), or its head is in the dependent's tree (acyclicity).  A
    gold root word is lost when it has a head.  The graph of the built arcs
    plus the reachable gold arcs has in-degree one, so its cycles are found
    by following heads.

    An action's cost is the change of that loss, found where the action can
    change it; no loss is evaluated in full.  ``shift`` and ``reduce`` build
    nothing and only make gold arcs unreachable (:func:`_unreachable_change`);
    ``left`` and ``right`` build one arc, which changes the loss only at its
    dependent and at the root of its head's tree (:func:`_arc_change`).
    ``switch`` and the state just reached by ``switch`` are handled as in
    :meth:`costs`."""

    def __init__(self, gold_heads: Sequence[int], *, regularize_switch: bool = True,
                 system: "TwoPlanar | None" = None, tie_break=TIE_BREAK_NONE):
        self.canon = _CanonicalGold(gold_heads)
        self.regularize_switch = regularize_switch
        self.system = system or TwoPlanar(regularize_switch)
        self.tie_break = tie_break
        #: gold arcs left out of the 2-planar subset, lost in every configuration
        self.dropped = sum(1 for d, h in enumerate(gold_heads) if d and self.canon.heads[d] != h)
        heads = self.canon.heads
        # starting_at[w]: the gold arcs (by dependent) whose left end is w
        self.starting_at: list[list[int]] = [[] for _ in range(len(heads))]
        for d in word_arcs(heads):
            self.starting_at[min(d, heads[d])].append(d)

    def final_loss(self, state: TwoPlanarState) -> int:
        """The loss of a final state relative to the canonical planes: gold
        arcs not built in their plane (those left out of the 2-planar subset
        included) and gold root words with a head."""
        now = _Outlook(self.canon, state)
        return self.dropped + sum(now.lost(d) for d in range(1, len(state.heads)))

    def exact_costs(self, state: TwoPlanarState) -> dict[str, int]:
        """Cost of each legal action.  ``switch`` costs the least loss change
        after the action forced next, that is, after ``shift``, ``left``,
        ``right`` or ``reduce`` taken with the other stack active (2018,
        section 3: a switch itself changes no loss).  In a state just reached
        by ``switch`` the costs are taken against the least change of the
        remaining actions, so that they are exact for the parser with the
        control constraint."""
        now = _Outlook(self.canon, state)
        shift = self._shift_change(state, now)
        changes = self._stack_changes(state, state.active, now, shift)
        if state.switched:
            least = min(changes.values())
            return {a: change - least for a, change in changes.items()}
        forced = self._stack_changes(state, 1 - state.active, now, shift)
        changes[SWITCH] = min(forced.values())
        return changes

    def regularized_costs(self, state: TwoPlanarState, costs: dict[str, int]) -> dict[str, int]:
        """With ``regularize_switch`` (2018, section 3, "Regularization": a
        term for the length of the transition sequence, which "amounts to
        penalizing the Switch transition if there is any zero-cost transition
        available in the active plane and changing planes will delay its
        application"), ``switch`` costs one more unless it is needed now: the
        active plane has no individually reachable gold arc left between
        ``b0`` and a word on its stack, and the other plane has one.  A switch
        that delays nothing the other plane needs only lengthens the
        sequence, so it is penalized as well.  (Never where ``switch`` is the
        only least-cost action, :func:`~.base.penalize`; the exhaustive tests
        meet no such state.)"""
        if (not self.regularize_switch or SWITCH not in costs
                or self._switch_needed(state, _Outlook(self.canon, state))):
            return costs
        return penalize(costs, {SWITCH})

    def _shift_change(self, state: TwoPlanarState, now: "_Outlook") -> int:
        """Loss change of ``shift``: ``b0`` leaves the buffer (onto both
        stacks), so the gold arcs between it and an earlier word that are not
        built yet become unreachable."""
        return _unreachable_change(now, self.canon.ending_at[state.b])

    def _stack_changes(self, state: TwoPlanarState, plane: int, now: "_Outlook", shift: int) -> dict[str, int]:
        """Loss change of ``shift`` (given) and of each legal ``left``,
        ``right`` and ``reduce`` taken with stack ``plane`` active.
        ``reduce`` makes the gold arcs of ``plane`` that start at the popped
        word unreachable."""
        changes = {SHIFT: shift}
        stack = state.stacks[plane]
        if not stack:
            return changes
        canon, heads, b = self.canon, state.heads, state.b
        s0 = stack[-1]
        top_of_b, top_of_s0 = now.root(b), now.root(s0)
        if heads[s0] == NO_HEAD and top_of_b != s0:
            changes[LEFT] = _arc_change(now, _Outlook(canon, state, arc=(b, s0, plane)), s0, top_of_b)
        if heads[b] == NO_HEAD and top_of_s0 != b:
            changes[RIGHT] = _arc_change(now, _Outlook(canon, state, arc=(s0, b, plane)), b, top_of_s0)
        gplane = canon.plane
        changes[REDUCE] = _unreachable_change(now, [d for d in self.starting_at[s0] if gplane[d] == plane])
        return changes

    def _switch_needed(self, state: TwoPlanarState, now: "_Outlook") -> bool:
        return (not self._has_work(state, state.active, now)
                and self._has_work(state, 1 - state.active, now))

    def _has_work(self, state: TwoPlanarState, plane: int, now: "_Outlook") -> bool:
        """Some gold arc ``(x, b0)`` of ``plane`` with ``x`` on that plane's
        stack is not built and still individually reachable."""
        gplane = self.canon.plane
        return any(gplane[d] == plane and now.target(d) != NO_HEAD for d in self.canon.ending_at[state.b])

    # --- tie_break="shortest" --------------------------------------------------

    def remaining_length(self, state: TwoPlanarState) -> int:
        """Transitions of the shortest least-loss computation from ``state``
        (``tie_break="shortest"``; the loss relative to the canonical planes).

        From a state not just reached by ``switch`` the lazy computation is
        shortest: it builds the reachable gold arcs (``I1 ∪ I2`` less ``A``)
        in their planes except one per cycle of ``A ∪ I1 ∪ I2``
        (:meth:`_plan_length`), reduces a word only to uncover the partner of
        ``b0`` below it, switches only when the other plane has an arc to
        build with ``b0``, and shifts otherwise.  Every computation of least
        loss builds those arcs, shifts ``n - b + 1`` times, pops each word
        that lies under an arc to build in that plane and is still on its
        stack then, and is in each plane when it builds the plane's arcs with
        each ``b0``, so none is shorter.  Just after ``switch`` the lazy
        computation may need to switch back at once, which the control
        constraint forbids: the length is then one more than the least after
        a zero-cost action."""
        if state.b >= len(state.heads):
            return 0
        if not state.switched:
            return self._plan_length(state)
        exact = self.exact_costs(state)
        return 1 + min(self._plan_length(self._successor(state, a)) for a, c in exact.items() if c == 0)

    def _plan_length(self, state: TwoPlanarState) -> int:
        """Length of the lazy computation from a state not just reached by
        ``switch``, least over the choice of the arc each cycle drops (tried
        in every combination: cycles are rare, e.g. following the oracle
        with 10-60% random actions on 800 Turkish-IMST sentences, 154 of
        21,035 states had one and none had two)."""
        now = _Outlook(self.canon, state)
        n = len(state.heads) - 1
        needed = [d for d in range(1, n + 1) if now.target(d) != NO_HEAD]
        cycles = _cycles(now, needed)
        rest = min(self._stack_work(state, needed, set(drop)) for drop in product(*cycles))
        return n - state.b + 1 + len(needed) - len(cycles) + rest

    def _stack_work(self, state: TwoPlanarState, needed: Sequence[int], dropped: set[int]) -> int:
        """Reduces plus switches of the lazy computation that builds the gold
        arcs into ``needed`` except ``dropped``: the words on a plane's stack
        (or still in the buffer) strictly inside an arc of that plane, and
        one switch for each ``b0`` whose arcs lie only in the inactive plane
        or in both (after which the other plane is active)."""
        gold, gplane, b = self.canon.heads, self.canon.plane, state.b
        n = len(state.heads) - 1
        inside = ([0] * (n + 2), [0] * (n + 2))
        work: dict[int, set[int]] = {}
        for d in needed:
            if d not in dropped:
                lo, hi = (gold[d], d) if gold[d] < d else (d, gold[d])
                inside[gplane[d]][lo + 1] += 1
                inside[gplane[d]][hi] -= 1
                work.setdefault(hi, set()).add(gplane[d])
        return _covered_words(inside, state.stacks, b) + _lazy_switches(work, state.active)


def _cycles(now: "_Outlook", needed: Sequence[int]) -> list[list[int]]:
    """The cycles of ``A ∪ I1 ∪ I2``, each as the dependents of its arcs not
    built yet (tree roots whose gold arc is reachable, ``needed``), found
    by following :meth:`_Outlook.target` from each once."""
    mark = dict.fromkeys(needed, 0)  # 0 unseen, 1 on the current walk, 2 done
    cycles = []
    for start in needed:
        walk, node = [], start
        while mark.get(node) == 0:
            mark[node] = 1
            walk.append(node)
            node = now.target(node)
        if mark.get(node) == 1:
            cycles.append(walk[walk.index(node):])
        for w in walk:
            mark[w] = 2
    return cycles


def _covered_words(inside: tuple[list[int], list[int]], stacks, b: int) -> int:
    """Words strictly inside some arc of their plane (``inside[p]``: a
    difference array of arc interiors) that are on that plane's stack or not
    shifted yet: the reduces of the lazy computation."""
    count = 0
    for plane in (0, 1):
        on_stack = set(stacks[plane])
        depth = 0
        for w, step in enumerate(inside[plane]):
            depth += step
            if depth and (w >= b or w in on_stack):
                count += 1
    return count


def _lazy_switches(work: dict[int, set[int]], active: int) -> int:
    """Switches needed to be in each plane of ``work[y]`` while ``y`` is
    ``b0``, in order of ``y``, starting in plane ``active``: finishing the
    active plane first and then switching is never worse than switching
    twice."""
    switches = 0
    for y in sorted(work):
        planes = work[y]
        if planes != {active}:
            switches += 1
            active = 1 - active
    return switches


def _unreachable_change(now: "_Outlook", arcs: Sequence[int]) -> int:
    """Loss change of an action that builds nothing and makes the gold arcs
    into ``arcs`` (dependents) unreachable unless built, and nothing else
    (trees stay as they are): each one still reachable now is lost, and the
    graph ``A ∪ I1 ∪ I2`` loses it, which breaks the cycles through it (each
    through its dependent, a tree root) and makes no new one."""
    gone = [d for d in arcs if now.target(d) != NO_HEAD]
    return len(gone) - now.cycles_through(gone)


def _arc_change(now: "_Outlook", after: "_Outlook", dep: int, top: int) -> int:
    """Loss change of building the arc into the headless ``dep`` (``after``)
    whose head's tree has root ``top``.  Only ``dep``'s own arc changes its
    status (built right, or lost), and only ``top`` can now have its gold
    head in its own tree (acyclicity).  Every other tree root keeps its edge
    in ``A ∪ I1 ∪ I2``, except that the edges into ``dep``'s tree now reach
    ``top``, whose tree absorbs it; so the cycles that disappear or appear
    are those through ``dep`` or ``top``."""
    words = (dep, top)
    lost = sum(after.lost(d) - now.lost(d) for d in words)
    return lost + after.cycles_through(words) - now.cycles_through(words)


class _Outlook:
    """What the loss of a configuration depends on, for the configuration
    itself or the one an action leads to (without building it): the buffer
    starts at ``first`` (``b + 1`` after a shift, which puts ``b`` on both
    stacks), ``popped = (plane, word)`` has left that stack, ``arc = (head,
    dep, plane)`` has been built.  Stacks hold words in increasing order, so
    membership is a binary search."""

    __slots__ = ("gold", "gplane", "heads", "plane", "stacks", "b", "first",
                 "popped_plane", "popped", "arc_head", "arc_dep", "arc_plane", "_targets")

    def __init__(self, canon: _CanonicalGold, state: TwoPlanarState, *, first: int | None = None,
                 popped: tuple[int, int] = (NO_PLANE, NO_HEAD),
                 arc: tuple[int, int, int] = (NO_HEAD, NO_HEAD, NO_PLANE)):
        self.gold, self.gplane = canon.heads, canon.plane
        self.heads, self.plane, self.stacks, self.b = state.heads, state.plane, state.stacks, state.b
        self.first = state.b if first is None else first
        self.popped_plane, self.popped = popped
        self.arc_head, self.arc_dep, self.arc_plane = arc
        self._targets: dict[int, int] = {}

    def root(self, word: int) -> int:
        """The headless word at the top of ``word``'s tree."""
        heads, dep = self.heads, self.arc_dep
        while True:
            head = heads[word]
            if head == NO_HEAD:
                if word != dep:
                    return word
                head = self.arc_head
            word = head

    def _on_stack(self, plane: int, word: int) -> bool:
        if word == self.popped and plane == self.popped_plane:
            return False
        stack = self.stacks[plane]
        at = bisect_left(stack, word)
        return at < len(stack) and stack[at] == word

    def target(self, dep: int) -> int:
        """The edge out of ``dep`` in ``A ∪ I1 ∪ I2`` up to the built arcs:
        for a headless ``dep`` whose gold arc is individually reachable, the
        root of its gold head's tree; else :data:`NO_HEAD`."""
        found = self._targets.get(dep)
        if found is None:
            found = self._targets[dep] = self._find_target(dep)
        return found

    def _find_target(self, dep: int) -> int:
        gold = self.gold[dep]
        if gold == ROOT or gold == NO_HEAD or dep == self.arc_dep or self.heads[dep] != NO_HEAD:
            return NO_HEAD
        lo, hi = (gold, dep) if gold < dep else (dep, gold)
        if hi < self.first or (lo < self.b and not self._on_stack(self.gplane[dep], lo)):
            return NO_HEAD
        top = self.root(gold)
        return NO_HEAD if top == dep else top

    def lost(self, dep: int) -> int:
        """1 if the gold arc into ``dep`` counts as lost: in ``U1 ∪ U2``, or
        a gold root word with a head; else 0.  (Arcs dropped from a
        non-2-planar tree are lost in every configuration and never change
        the loss.)"""
        gold = self.gold[dep]
        if dep == self.arc_dep:
            head, plane = self.arc_head, self.arc_plane
        else:
            head, plane = self.heads[dep], self.plane[dep]
        if head != NO_HEAD:
            if gold == ROOT:
                return 1
            return int(gold != NO_HEAD and (head != gold or plane != self.gplane[dep]))
        return int(gold != ROOT and gold != NO_HEAD and self.target(dep) == NO_HEAD)

    def cycle_from(self, dep: int) -> list[int]:
        """The tree roots on the cycle of ``A ∪ I1 ∪ I2`` through the tree
        root ``dep``, or ``[]`` when there is none (or ``dep`` has a head).
        Cycles are followed from root to root, from dependent to head."""
        walk, seen = [dep], {dep}
        top = self.target(dep)
        while top != NO_HEAD:
            if top == dep:
                return walk
            if top in seen:
                return []
            walk.append(top)
            seen.add(top)
            top = self.target(top)
        return []

    def cycles_through(self, words: Sequence[int]) -> int:
        """How many distinct cycles of ``A ∪ I1 ∪ I2`` go through one of the
        tree roots among ``words``."""
        on_cycle: set[int] = set()
        count = 0
        for dep in words:
            if dep not in on_cycle:
                cycle = self.cycle_from(dep)
                if cycle:
                    count += 1
                    on_cycle.update(cycle)
        return count
