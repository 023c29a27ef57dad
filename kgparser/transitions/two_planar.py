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

Root handling, option ``root_node``:

* ``False`` (default): as in the 2018 paper's initial configuration
  ``<[], [], [w1..wn], {}>`` the root is *not* a node of the parser.  Arcs from
  the root are never built; following ``docs/transition-contract.md``, the words left headless
  are the dependents of the root.  A gold root word must therefore stay
  headless.  Root arcs never cross anything, so the system builds exactly the
  trees whose word-to-word arcs are 2-planar (their crossing graph is
  bipartite), which is :meth:`TwoPlanar.can_build`; there is no artificial
  root arc to make a tree non-2-planar;
* ``True`` (with ``headless: wrong``, issue 18): both stacks start as ``[0]``,
  as if the root were a first word already shifted, so ``right`` with
  ``s0 = 0`` builds a root arc (``left`` never gives node 0 a head).  Root
  arcs are then arcs of the planes like any other: the system builds the
  trees whose arcs, root arcs included, are 2-planar, and the oracles' planes
  and 2-planar subset include the root arcs (the root arc kept first).  The
  dynamic oracle is the one below for that sentence with node 0 as its first
  word, so its loss counts a word left headless as an error
  (:func:`~.base.headless_option`): the gold root arc is taught like any
  other, which the default loss never does.  Other values of ``headless``
  with the root node are refused: under ``"root"`` the root arc would be
  free in either plane, a different loss this oracle is not exact for.

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
is lost; a list of actions keeps the zero-cost actions that come first in it;
last, option ``lost_words`` (default ``"free"``; ``"spare"`` or ``"attach"``,
as for Covington) decides about the free arcs onto words whose gold arc is
lost.

Features (2018, section 4.2): the top three words of the active stack, the
first buffer word and the top two words of the inactive stack:
``s0, s1, s2, b0, i0, i1``.
"""
from __future__ import annotations

from itertools import product
from typing import Sequence

from ..errors import KgparserError
from . import register
from ._two_planar_outlook import Outlook, arc_change, covered_words, gold_cycles, lazy_switches, unreachable_change
from ._two_planar_planes import NO_PLANE, canonical_planes, is_two_planar, two_planar_subset, word_arcs
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
    penalize,
    tie_break_option,
    tie_break_value,
)

SHIFT, LEFT, RIGHT, REDUCE, SWITCH = "shift", "left", "right", "reduce", "switch"


class TwoPlanarState(State):
    """``stacks[0]``, ``stacks[1]`` (bottom first), ``active`` (index of the
    active stack), ``b`` (first buffer word; ``n + 1`` when empty),
    ``switched`` (the last action was ``switch``) and ``plane[d]`` (plane the
    arc into ``d`` was built in, :data:`NO_PLANE` if none)."""

    __slots__ = ("stacks", "active", "b", "switched", "plane")

    def __init__(self, n: int, root_node: bool = False):
        super().__init__(n)
        self.stacks = ([ROOT], [ROOT]) if root_node else ([], [])
        self.active = 0
        self.b = 1
        self.switched = False
        self.plane = [NO_PLANE] * (n + 1)

    def copy(self) -> TwoPlanarState:
        new = self._copy_arcs_to(object.__new__(TwoPlanarState))
        new.stacks = (self.stacks[0][:], self.stacks[1][:])
        new.active = self.active
        new.b = self.b
        new.switched = self.switched
        new.plane = self.plane[:]
        return new

    def key(self) -> StateKey:
        return (tuple(self.stacks[0]), tuple(self.stacks[1]), self.active, self.b, self.switched,
                tuple(self.heads), tuple(self.labels), tuple(self.plane))


def _tree_root(heads: Sequence[int], word: int) -> int:
    """The headless word at the top of ``word``'s tree in a partial forest."""
    while heads[word] != NO_HEAD:
        word = heads[word]
    return word


@register("two-planar")
class TwoPlanar(TransitionSystem[TwoPlanarState]):
    actions = (SHIFT, LEFT, RIGHT, REDUCE, SWITCH)
    arc_actions = frozenset({LEFT, RIGHT})
    feature_names = ("s0", "s1", "s2", "b0", "i0", "i1")

    def __init__(self, regularize_switch: bool = True, tie_break: object = TIE_BREAK_NONE,
                 lost_words: str = LOST_WORDS_FREE, root_node: bool = False, headless: str = HEADLESS_ROOT):
        self.regularize_switch = regularize_switch
        self.tie_break = tie_break_option(self.name, self.actions, tie_break)
        self.lost_words = lost_words_option(self.name, lost_words)
        self.root_node = bool(root_node)
        self.headless = headless_option(self.name, headless, self.root_node)
        if self.root_node and self.headless != HEADLESS_WRONG:
            raise KgparserError("two-planar option 'root_node: true' needs 'headless: wrong': with the root "
                                "node the dynamic oracle is exact for the loss that counts a headless word "
                                "as an error")

    def options(self) -> dict[str, object]:
        return {"regularize_switch": self.regularize_switch, "tie_break": tie_break_value(self.tie_break),
                "lost_words": self.lost_words, "root_node": self.root_node, "headless": self.headless}

    def initial_state(self, n: int) -> TwoPlanarState:
        return TwoPlanarState(n, self.root_node)

    def legal_actions(self, state: TwoPlanarState) -> list[str]:
        b, heads = state.b, state.heads
        if b >= len(heads):
            return []
        legal = [SHIFT]
        stack = state.stacks[state.active]
        if stack:
            s0 = stack[-1]
            if s0 != ROOT and heads[s0] == NO_HEAD and _tree_root(heads, b) != s0:
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

    def arc_probe(self, state: TwoPlanarState, head: int, dep: int) -> tuple[list[int], str] | None:
        """A configuration where ``left``/``right`` adds the arc between ``s0 = min(head, dep)``
        and ``b0 = max(head, dep)``: below ``s0`` the words of the final active stack left of
        it, nearest first, and as the inactive stack the final one's words left of ``b0``, as
        if the parser had come to the pair with the stacks it ended with.  Root arcs only with
        the root node."""
        if head == ROOT and not self.root_node:
            return None
        left, right = min(head, dep), max(head, dep)
        below = [w for w in reversed(state.stacks[state.active]) if w < left][:2]
        inactive = [w for w in reversed(state.stacks[1 - state.active]) if w < right][:2]
        below += [NO_HEAD] * (2 - len(below))
        inactive += [NO_HEAD] * (2 - len(inactive))
        return [left, *below, right, *inactive], RIGHT if head < dep else LEFT

    def can_build(self, gold_heads: Sequence[int]) -> bool:
        return is_two_planar(gold_heads, self.root_node)

    def static_oracle(self, gold_heads: Sequence[int]) -> TwoPlanarStaticOracle:
        return TwoPlanarStaticOracle(gold_heads, self.root_node)

    def dynamic_oracle(self, gold_heads: Sequence[int]) -> TwoPlanarDynamicOracle:
        return TwoPlanarDynamicOracle(gold_heads, regularize_switch=self.regularize_switch, system=self,
                                      tie_break=self.tie_break)


# --- planes -----------------------------------------------------------------

class CanonicalGold:
    """A gold tree reduced to a 2-planar subset, with its canonical planes:
    ``heads`` (dropped arcs: :data:`NO_HEAD`), ``plane`` per dependent,
    ``ending_at[b]``: the gold arcs ``(x, b)`` with ``x < b``, nearest first,
    and ``headless_gold``: the gold head of the words that must stay headless
    (:data:`ROOT`, or none with ``root_arcs``, the system's root node)."""

    def __init__(self, gold_heads: Sequence[int], root_arcs: bool = False):
        self.root_arcs = root_arcs
        self.heads = two_planar_subset(gold_heads, root_arcs)
        self.plane = canonical_planes(self.heads, root_arcs)
        self.headless_gold: int | None = None if root_arcs else ROOT
        n = len(gold_heads) - 1
        self.ending_at: list[list[int]] = [[] for _ in range(n + 2)]
        for d in word_arcs(self.heads, root_arcs):
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

    def __init__(self, gold_heads: Sequence[int], root_node: bool = False):
        self.canon = CanonicalGold(gold_heads, root_node)

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


class TwoPlanarDynamicOracle(TieBreakingOracle[TwoPlanarState]):
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
    nothing and only make gold arcs unreachable (:func:`unreachable_change`);
    ``left`` and ``right`` build one arc, which changes the loss only at its
    dependent and at the root of its head's tree (:func:`arc_change`).
    ``switch`` and the state just reached by ``switch`` are handled as in
    :meth:`costs`."""

    def __init__(self, gold_heads: Sequence[int], *, regularize_switch: bool = True,
                 system: TwoPlanar | None = None, tie_break: TieBreak = TIE_BREAK_NONE):
        self.system = system or TwoPlanar(regularize_switch)
        self.canon = CanonicalGold(gold_heads, self.system.root_node)
        #: the heads the loss counts against (option lost_words): the 2-planar subset
        self.gold = self.canon.heads
        self.regularize_switch = regularize_switch
        self.tie_break = tie_break
        #: gold arcs left out of the 2-planar subset, lost in every configuration
        self.dropped = sum(1 for d, h in enumerate(gold_heads) if d and self.canon.heads[d] != h)
        heads = self.canon.heads
        # starting_at[w]: the gold arcs (by dependent) whose left end is w
        self.starting_at: list[list[int]] = [[] for _ in range(len(heads))]
        for d in word_arcs(heads, self.canon.root_arcs):
            self.starting_at[min(d, heads[d])].append(d)

    def final_loss(self, state: TwoPlanarState) -> int:
        """The loss of a final state relative to the canonical planes: gold
        arcs not built in their plane (those left out of the 2-planar subset
        included) and gold root words with a head."""
        now = Outlook(self.canon, state)
        return self.dropped + sum(now.lost(d) for d in range(1, len(state.heads)))

    def exact_costs(self, state: TwoPlanarState) -> dict[str, int]:
        """Cost of each legal action.  ``switch`` costs the least loss change
        after the action forced next, that is, after ``shift``, ``left``,
        ``right`` or ``reduce`` taken with the other stack active (2018,
        section 3: a switch itself changes no loss).  In a state just reached
        by ``switch`` the costs are taken against the least change of the
        remaining actions, so that they are exact for the parser with the
        control constraint."""
        now = Outlook(self.canon, state)
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
                or self._switch_needed(state, Outlook(self.canon, state))):
            return costs
        return penalize(costs, {SWITCH})

    def _shift_change(self, state: TwoPlanarState, now: Outlook) -> int:
        """Loss change of ``shift``: ``b0`` leaves the buffer (onto both
        stacks), so the gold arcs between it and an earlier word that are not
        built yet become unreachable."""
        return unreachable_change(now, self.canon.ending_at[state.b])

    def _stack_changes(self, state: TwoPlanarState, plane: int, now: Outlook, shift: int) -> dict[str, int]:
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
        if s0 != ROOT and heads[s0] == NO_HEAD and top_of_b != s0:
            changes[LEFT] = arc_change(now, Outlook(canon, state, arc=(b, s0, plane)), s0, top_of_b)
        if heads[b] == NO_HEAD and top_of_s0 != b:
            changes[RIGHT] = arc_change(now, Outlook(canon, state, arc=(s0, b, plane)), b, top_of_s0)
        gplane = canon.plane
        changes[REDUCE] = unreachable_change(now, [d for d in self.starting_at[s0] if gplane[d] == plane])
        return changes

    def _switch_needed(self, state: TwoPlanarState, now: Outlook) -> bool:
        return (not self._has_work(state, state.active, now)
                and self._has_work(state, 1 - state.active, now))

    def _has_work(self, state: TwoPlanarState, plane: int, now: Outlook) -> bool:
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
        now = Outlook(self.canon, state)
        n = len(state.heads) - 1
        needed = [d for d in range(1, n + 1) if now.target(d) != NO_HEAD]
        cycles = gold_cycles(now, needed)
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
        return covered_words(inside, state.stacks, b) + lazy_switches(work, state.active)
