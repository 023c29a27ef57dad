"""One greedy stepper for training and parsing: a batch of parser states in lock-step.

The trainer (:mod:`kgparser.training.trainer`) and the decoder
(:mod:`kgparser.inference.decode`) walk a batch of sentences through the
transition system the same way, and only that bookkeeping lives here (after
spaCy's ``transition_states()``, which serves both its ``update()`` and its
greedy parse): each step, every live state gets its legal actions; a state
whose only legal action builds no arc takes it unscored; the others' feature
rows (Kiperwasser & Goldberg 2016, section 3: :mod:`kgparser.model.features`)
go to one MLP call, without gradients; finished states drop out.

What is done with the scores is the caller's, a :class:`Chooser`: the trainer
scores the full labeled matrix against its oracle, records hinge terms and
follows the oracle or its exploration; the decoder takes the best label per
action under its constraints and may walk ahead along runs of an arc-free
action.  Each state has an owner (the system that applies its transitions,
a constrained subclass for a constrained sentence) and a function giving the
actions it may take (the system's legal actions, or those a constraint allows).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

import torch

from ..transitions.base import State, TransitionSystem
from .features import flat_rows, state_rows
from .inputs import Batch

if TYPE_CHECKING:
    from . import Model

__all__ = ["Chooser", "Encoded", "Step", "Stepper", "no_action_error"]


def no_action_error(system: object) -> RuntimeError:
    """The error of a broken transition system: a state that is not final
    and has no legal action (a chooser's :meth:`Chooser.stuck` raises it)."""
    return RuntimeError(f"{system!r}: a non-final state has no legal action")


@dataclass
class Encoded:
    """A batch as the stepper reads it (:meth:`Model.encode <kgparser.model.Model.encode>`):
    the batch itself, the first-layer projections of every token's BiLSTM
    vector (:meth:`~kgparser.model.network.Network.project`), and the joint
    tagger's scores of every token (empty without a tagger, or when not asked for)."""

    batch: Batch
    projected: torch.Tensor
    tag_scores: dict[str, torch.Tensor]
    #: what the LEMMA head reads of every token (:meth:`Network.lemma_inputs`), for a model's lemmatizer
    lemma_inputs: torch.Tensor | None = None


@dataclass
class Step:
    """The states of one lock-step that have a choice: their batch positions,
    the actions each may take and the feature rows the MLP call scores (a
    chooser may add rows after a state's own, see :meth:`Chooser.consider`)."""

    live: list[int]
    scored: list[int] = field(default_factory=list)
    legal: list[list[str]] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)


class SentenceLike(Protocol):
    """What the stepper reads of a sentence (a :class:`~kgparser.io.conllu.Sentence`):
    its number of words."""

    @property
    def n(self) -> int: ...


class Owner(Protocol):
    """What owns a state (:class:`Stepper`): the model's system, or a constrained
    one (:class:`~kgparser.constraints.system.ConstrainedSystem`), over the
    states of the model's system."""

    def initial_state(self, n: int) -> State: ...

    def apply(self, state: State, action: str, label: str | None = None) -> None: ...


#: the actions a state may take (the system's legal actions, or those a constraint allows)
Allowed = Callable[[State], list[str]]


class Chooser(Protocol):
    """What a :class:`Stepper`'s caller decides."""

    def consider(self, step: Step, i: int, state: State, legal: list[str]) -> None:
        """State ``i`` has a choice among ``legal`` and is scored this step (its
        rows are in ``step.rows``); note what :meth:`decide` will need."""

    def decide(self, step: Step, rows: torch.Tensor, hidden: torch.Tensor) -> None:
        """Apply a transition to every state of ``step.scored`` (with
        :meth:`Stepper.apply`), given the MLP call's ``rows`` (``[rows, slots]``
        of :meth:`~kgparser.model.network.Network.project`) and its hidden layer."""

    def stuck(self, i: int, state: State) -> None:
        """State ``i`` is not final and may take no action: raise, or restart it."""

    def restarts(self, i: int) -> bool:
        """Whether the final state ``i`` starts again (:meth:`Stepper.restart`)."""


class Stepper:
    """The states of a batch of ``sentences`` and the steps that advance them.

    ``owners``: per sentence, the system whose ``initial_state`` and ``apply``
    it uses (default the model's); ``allowed``: per sentence, ``state -> the
    actions it may take`` (default the system's legal actions)."""

    def __init__(self, model: Model, sentences: Sequence[SentenceLike], owners: list[Owner] | None = None,
                 allowed: list[Allowed] | None = None):
        system = model.system
        self.model, self.system, self.sentences = model, system, sentences
        self.owners = owners or [system] * len(sentences)
        self.allowed = allowed or [system.legal_actions] * len(sentences)
        self.states = _initial_states(system, sentences, self.owners)
        #: live states advanced so far, one per state per step (scored or not)
        self.transitions = 0

    def live(self) -> list[int]:
        """The batch positions of the states not yet final."""
        is_final = self.system.is_final
        return [i for i, state in enumerate(self.states) if not is_final(state)]

    def run(self, chooser: Chooser, encoded: Encoded) -> list[State]:
        """Advance every state to its end, scoring with the projections of
        ``encoded`` (without gradients); returns the final states."""
        is_final, states = self.system.is_final, self.states
        projected, offsets, pad = encoded.projected.detach(), encoded.batch.offsets, encoded.batch.pad_row
        live = self.live()
        while live:
            self._step(Step(live), chooser, projected, offsets, pad)
            live = [i for i in live if not is_final(states[i]) or chooser.restarts(i)]
        return states

    def _step(self, step: Step, chooser: Chooser, projected: torch.Tensor, offsets: list[int], pad: int) -> None:
        model, states, owners, allowed = self.model, self.states, self.owners, self.allowed
        arc_actions, consider, rows = model.inventory.arc_actions, chooser.consider, step.rows
        for i in step.live:
            state = states[i]
            legal = allowed[i](state)
            self.transitions += 1
            if not legal:
                chooser.stuck(i, state)
                continue
            if len(legal) == 1 and legal[0] not in arc_actions:
                owners[i].apply(state, legal[0])
                continue
            step.scored.append(i)
            step.legal.append(legal)
            state_rows(model, state, offsets[i], pad, rows)
            consider(step, i, state, legal)
        if step.scored:
            flat = flat_rows(model, rows, len(rows) // model.n_slots)
            with torch.no_grad():
                hidden = model.network.hidden(projected, flat)
            chooser.decide(step, flat, hidden)

    def apply(self, i: int, action: str, label: str | None = None) -> None:
        """Apply ``(action, label)`` to state ``i``."""
        self.owners[i].apply(self.states[i], action, label)

    def restart(self, i: int) -> None:
        """Start sentence ``i`` again, unconstrained, from the system's initial state."""
        system = self.system
        self.owners[i], self.allowed[i] = system, system.legal_actions
        self.states[i] = system.initial_state(self.sentences[i].n)


def _initial_states(system: TransitionSystem[Any], sentences: Sequence[SentenceLike],
                    owners: list[Owner]) -> list[State]:
    """The initial state of each sentence from its owner; where constrained
    systems own some, the unconstrained sentences get states of the same class
    when the system can make them (``unconstrained_state``), which keeps the
    attribute lookups of the steps specialized to one class."""
    constrained = next((owner for owner in owners if owner is not system), None)
    plain_state = getattr(constrained, "unconstrained_state", None) or system.initial_state
    return [plain_state(s.n) if owner is system else owner.initial_state(s.n) for owner, s in zip(owners, sentences)]
