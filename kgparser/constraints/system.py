"""The interface of a transition system restricted by the constraints of
one sentence (:class:`ConstrainedSystem`), and the forced labels of arc
actions shared with the decoder."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..transitions.base import NO_HEAD, ROOT, TransitionSystem

if TYPE_CHECKING:
    from .sentence import Constraints


def forced_arc_labels(forced_label, arc_of, arc_actions, state, actions: Sequence[str]) -> dict | None:
    """The labels that ``forced_label(head, dep)`` forces on the arcs of the
    arc actions among ``actions`` in ``state``, by action; ``None`` when it
    forces none."""
    labels = {a: forced_label(*arc_of(state, a)) for a in actions if a in arc_actions}
    return {a: label for a, label in labels.items() if label is not None} or None


class ConstrainedSystem:
    """A transition system restricted, for one sentence, to the computations
    whose output satisfies the constraints.  See the docstring of
    :mod:`kgparser.constraints`."""

    def __init__(self, system: TransitionSystem, constraints: Constraints, n: int):
        self.system = system
        self.constraints = constraints
        self.n = n
        self.required_head = constraints.heads(n)
        self.required_label = constraints.labels(n)

    def initial_state(self, n: int | None = None):
        return self.system.initial_state(self.n if n is None else n)

    def legal_actions(self, state) -> list[str]:
        return self.allowed(state, self.system.legal_actions(state))

    def allowed(self, state, legal: Sequence[str]) -> list[str]:
        raise NotImplementedError

    def forced_label(self, head: int, dep: int) -> str | None:
        """The label the arc ``head -> dep`` must carry (``None``: free)."""
        return self.required_label[dep] if self.required_head[dep] == head else None

    def forced_labels(self, state, actions: Sequence[str]) -> dict | None:
        """The labels that the arcs of ``actions`` (legal in ``state``) must
        carry, by action, or ``None`` when none is forced."""
        return forced_arc_labels(self.forced_label, self.system.arc_of, self.system.arc_actions, state, actions)

    def apply(self, state, action: str, label: str | None = None) -> None:
        """Apply ``action``; an arc constrained with a label gets that label."""
        if action in self.system.arc_actions:
            label = self.forced_label(*self.system.arc_of(state, action)) or label
        self.system.apply(state, action, label)

    def is_final(self, state) -> bool:
        return self.system.is_final(state)

    def arc_of(self, state, action: str) -> tuple[int, int]:
        return self.system.arc_of(state, action)

    def features(self, state) -> list[int]:
        return self.system.features(state)

    def satisfied_by(self, heads: Sequence[int]) -> bool:
        """Whether a final tree (headless words resolved to the root) meets the arcs."""
        return all((ROOT if heads[a.dep] == NO_HEAD else heads[a.dep]) == a.head for a in self.constraints.arcs)
