"""The per-sentence constrained system of a transition system
(:func:`constrain`) and the decoding filter a batched parser calls
(:class:`ConstraintFilter`, :func:`constraint_filter`)."""
from __future__ import annotations

from typing import Sequence, cast

from ..transitions.arc_eager import LEFT, REDUCE, RIGHT, SHIFT, ArcEager, ArcEagerState
from ..transitions.arc_hybrid import ArcHybrid
from ..transitions.base import NO_HEAD, TransitionSystem
from .arc_eager import ConstrainedArcEager
from .reachable_arcs import ReachableArcs
from .sentence import Constraints
from .system import ConstrainedSystem


def unsupported(system: TransitionSystem, *, spans: bool, arcs: bool) -> str | None:
    """Why ``system`` cannot enforce span (``spans``) or arc (``arcs``)
    constraints, or ``None`` when it can."""
    if isinstance(system, ArcEager) and system.root == "end":
        return None
    if spans:
        return f"span constraints need arc-eager with root='end', not {system!r}"
    if arcs and not isinstance(system, (ArcEager, ArcHybrid)):
        return (f"arc constraints need a system with an arc-decomposable dynamic oracle "
                f"(arc-eager, arc-hybrid), not {system.name!r}")
    return None


def constrain(system: TransitionSystem, constraints: Constraints | None, n: int, *,
              check_satisfiable: bool = True):
    """The per-sentence view of ``system`` restricted by ``constraints``
    (checked first); ``system`` itself when there are none.

    ``check_satisfiable=False`` leaves out the satisfiability run for
    :class:`ConstrainedArcEager` (every other check is made): its caller's own
    run is then the exact test, stuck (no allowed action) or ending in a state
    that misses the constraints (:meth:`ConstrainedSystem.satisfied_by`) iff no
    projective tree satisfies them."""
    if not constraints:
        return system
    if isinstance(system, ArcEager) and system.root == "end":
        constraints.check_structure(n)  # then check() = this system's own satisfiability run
        constrained = ConstrainedArcEager(system, constraints, n, checked=True)
        if check_satisfiable:
            constrained.check_satisfiable()
        return constrained
    constraints.check(n)
    reason = unsupported(system, spans=bool(constraints.spans), arcs=bool(constraints.arcs))
    if reason:
        constraints.fail(reason)
    return ReachableArcs(system, constraints, n)


class ConstraintFilter:
    """The constraints of one sentence as a decoding filter for a parser that
    builds states with the plain system and calls :meth:`allowed_actions` in
    every non-final state it reaches (``kgparser.inference``'s protocol:
    ``allowed_actions(state, legal)``, ``forced_label(head, dep)``; calling
    the object is ``allowed_actions``).

    Span bookkeeping of :class:`ConstrainedArcEager` lives in a private shadow
    state that follows the parser's state one transition per call (the
    transition is read off the state in O(1)); :class:`ReachableArcs` needs no
    bookkeeping and reads the parser's state directly.

    The constrained system (:attr:`constrained`) is built when first used
    unless given; :meth:`decoding_system` lends one without keeping it.
    """

    __slots__ = ("system", "constraints", "n", "_constrained", "satisfiable_checked", "follows_states", "shadow")

    def __init__(self, system: TransitionSystem, constraints: Constraints, n: int, *,
                 constrained: ConstrainedSystem | None = None, satisfiable_checked: bool = True):
        self.system, self.constraints, self.n = system, constraints, n
        self._constrained = constrained
        #: False when the satisfiability run was left to the decoder (see :func:`constrain`)
        self.satisfiable_checked = satisfiable_checked
        #: whether the filter follows the parser's states in a shadow state
        #: (made on the first call: a parser that lets the constrained system
        #: advance its own states never needs it); without a given system, the
        #: filter's is a :class:`ConstrainedArcEager`
        self.follows_states = constrained is None or isinstance(constrained, ConstrainedArcEager)
        self.shadow: ArcEagerState | None = None

    @property
    def constrained(self) -> ConstrainedSystem:
        """The constrained system of the sentence (made on first use, then kept)."""
        if self._constrained is None:
            self._constrained = self.decoding_system()
        return self._constrained

    def decoding_system(self) -> ConstrainedSystem:
        """The constrained system if made already, else a new one that the
        filter does not keep: a decoder that takes one per batch lets the
        per-word tables go with the batch."""
        if self._constrained is not None:
            return self._constrained
        # a filter made without a constrained system filters for arc-eager (see :func:`constraint_filter`)
        return ConstrainedArcEager(cast(ArcEager, self.system), self.constraints, self.n, checked=True)

    def allowed_actions(self, state, legal: Sequence[str]) -> list[str]:
        if not self.follows_states:
            return self.constrained.allowed(state, legal)
        if self.shadow is None:
            self.shadow = self.constrained.initial_state()
        self._follow(state)
        return self.constrained.allowed(self.shadow, legal)

    __call__ = allowed_actions

    def forced_label(self, head: int, dep: int) -> str | None:
        return self.constrained.forced_label(head, dep)

    def _follow(self, state) -> None:
        """Replay on the shadow the transition that led to ``state``."""
        shadow = self.shadow
        assert shadow is not None  # made by allowed_actions before its first call
        if state.b == shadow.b + 1 and len(state.stack) == len(shadow.stack) + 1:
            action = SHIFT if state.heads[shadow.b] == NO_HEAD else RIGHT
        elif state.b == shadow.b and len(state.stack) == len(shadow.stack) - 1:
            action = LEFT if shadow.heads[shadow.stack[-1]] == NO_HEAD else REDUCE
        elif state.b == shadow.b and len(state.stack) == len(shadow.stack):
            return
        else:
            raise ValueError("ConstraintFilter.allowed_actions must be called in every state the parser reaches")
        dep = state.b - 1 if action in (SHIFT, RIGHT) else shadow.stack[-1]
        self.constrained.apply(shadow, action, state.labels[dep])


def constraint_filter(system: TransitionSystem, constraints: Constraints | None, n: int, *,
                      check_satisfiable: bool = True) -> ConstraintFilter | None:
    """The decoding filter for one sentence (``None`` without constraints);
    the constraints are checked first (``check_satisfiable``: see
    :func:`constrain`; without the satisfiability run, the filter's
    :class:`ConstrainedArcEager` is built when first used)."""
    if not constraints:
        return None
    if isinstance(system, ArcEager) and system.root == "end" and not check_satisfiable:
        constraints.check_structure(n)
        return ConstraintFilter(system, constraints, n, satisfiable_checked=False)
    constrained = constrain(system, constraints, n, check_satisfiable=check_satisfiable)
    return ConstraintFilter(system, constraints, n, constrained=constrained,
                            satisfiable_checked=check_satisfiable or not isinstance(constrained, ConstrainedArcEager))
