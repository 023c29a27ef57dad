"""Arc constraints as reachability of the constrained arcs under an exact,
arc-decomposable dynamic oracle (arc-eager with either root position,
arc-hybrid)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..transitions.arc_eager import ArcEager
from ..transitions.arc_hybrid import ArcHybrid
from ..transitions.base import TransitionSystem
from .system import ConstrainedSystem

if TYPE_CHECKING:
    from .sentence import Constraints


class ReachableArcs(ConstrainedSystem):
    """Arc constraints for any system with an exact, arc-decomposable dynamic
    oracle: allow an action iff it makes no constrained arc unreachable."""

    def __init__(self, system: TransitionSystem, constraints: Constraints, n: int):
        super().__init__(system, constraints, n)
        if isinstance(system, (ArcEager, ArcHybrid)):
            oracle = system.dynamic_oracle(self.required_head)
            # every zero-cost action keeps the constrained arcs reachable: a tie-break
            # (arc-eager's ``costs`` over ``exact_costs``) only narrows what training takes as correct
            self.costs = getattr(oracle, "exact_costs", oracle.costs)
        else:
            constraints.fail(f"arc constraints need a system with an arc-decomposable dynamic oracle "
                             f"(arc-eager, arc-hybrid), not {system.name!r}")

    def allowed(self, state, legal: Sequence[str]) -> list[str]:
        costs = self.costs(state)
        return [a for a in legal if costs[a] == 0]
