"""Inference: load a checkpoint and parse sentences, batched.

    >>> from kgparser.parser import Parser
    >>> parser = Parser.load("runs/quickstart/best.pt")
    >>> parser.parse([["The", "dog", "barks", "."]])            # plain forms
    >>> parser.parse([[("The", "DET"), ("dog", "NOUN")]])        # (form, upos)
    >>> parser.parse("in.conllu")                                 # a CoNLL-U file

A batch of sentences is encoded with one BiLSTM call; all parser states then
advance in lock-step, every state that has a choice being scored by one MLP
call per step.  The output is always a valid UD tree (:func:`to_valid_tree`).

Constraints: ``parse(..., constraints=...)`` takes hard span and arc
constraints (:mod:`kgparser.constraints`) as a JSON-lines file path, ``"misc"``
(read from each sentence's MISC column), or a list with one entry per
sentence: ``None``, a :class:`~kgparser.constraints.Constraints`, a dict in
the JSON-lines shape (``{"arcs": [...], "spans": [...]}``), a callable
``f(state, legal_actions) -> allowed_actions`` or a :class:`DecodingConstraint`
(which can also force the label of an arc).  Constraints are checked against
their sentence first (whether some projective tree satisfies them is found
by the decoding itself, which is the exact test, and the sentence decoded
again without them when none does); ``on_bad_constraints="skip"`` drops
(with a warning) the constraints of a sentence no tree satisfies instead of
raising.  The decoder never falls back silently: a filter that allows none
of the legal actions is a :class:`DecodingError`.
"""
from __future__ import annotations

import contextlib
import functools
import gc

import bisect
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import torch

from .constraints import (ConstraintError, ConstraintFilter, Constraints, constraint_filter, constraints_for,
                          constraints_from_misc, forced_arc_labels, read_constraints_jsonl, unsupported)
from .errors import KgparserError
from .model import Model

ROOT_LABEL = "root"
FALLBACK_LABEL = "dep"
CHECKPOINT_FORMAT = "kgparser-checkpoint"
CHECKPOINT_VERSION = 1


class CheckpointError(KgparserError):
    """A checkpoint cannot be read."""


class DecodingError(KgparserError):
    """A decoding constraint allowed none of a state's legal actions;
    ``index`` is the sentence's position in the decoded list."""

    def __init__(self, index: int, problem: str, where: str | None = None):
        super().__init__(f"{where or f'sentence {index + 1}'}: {problem}")
        self.index, self.problem = index, problem


class DecodingConstraint:
    """Restricts the decoder for one sentence; subclass and override either method."""

    def allowed_actions(self, state, legal_actions: list[str]) -> list[str]:
        """The subset of ``legal_actions`` the decoder may take in ``state``."""
        return legal_actions

    def forced_label(self, head: int, dependent: int) -> str | None:
        """The label the arc ``head -> dependent`` must carry, or None to let the model choose."""
        return None

    #: a system that builds and advances this sentence's states in place of the
    #: model's (same actions, states of a subclass), or None
    state_system = None

    def preferred_roots(self, top: list[int]) -> list[int]:
        """Of the words a final state attaches to the root (``top``), those that
        should become the sentence's only root, best first (the others are then
        attached to it by :func:`to_valid_tree`)."""
        return []


class _FilterConstraint(DecodingConstraint):
    def __init__(self, function: Callable):
        self.function = function

    def allowed_actions(self, state, legal_actions):
        return self.function(state, legal_actions)


class _SpanArcConstraint(DecodingConstraint):
    """:class:`~kgparser.constraints.Constraints` of one sentence as a decoding
    constraint: the actions of its filter, its forced labels, and a root
    choice that keeps the arc and span constraints when a final state has
    several root dependents."""

    def __init__(self, constraints, constraint_filter):
        self.constraints = constraints
        self.filter = constraint_filter
        #: the satisfiability of the constraints is left to the decoder's run (see ``_decode_batch``)
        self.unchecked = not constraint_filter.satisfiable_checked
        if constraint_filter.follows_states:
            # The decoder's states can carry the span bookkeeping themselves,
            # which spares the filter's shadow state (each transition applied
            # once), and the system filters its legal actions as it finds them.
            # The decoder makes these objects per batch, so the system's
            # per-word tables go with the batch.
            self.state_system = constraint_filter.decoding_system()
            self.forced_label = self.state_system.forced_label  # spares a call
        else:
            self.forced_label = constraint_filter.constrained.forced_label

    def allowed_actions(self, state, legal_actions):
        if self.state_system is None:
            return self.filter.allowed_actions(state, legal_actions)
        return self.state_system.allowed(state, legal_actions)

    def preferred_roots(self, top):
        """The word constrained to hang from the root, else the root dependents
        outside every span that forbids outside dependents (attaching the other
        root dependents to a word of such a span would break it)."""
        required = [a.dep for a in self.constraints.arcs if a.head == 0 and a.dep in top]
        closed = [s for s in self.constraints.spans if s.outside == "none"]
        if not closed:
            return required + top
        open_top = [d for d in top if not any(s.first <= d <= s.last for s in closed)]
        return required + open_top


def _as_constraint(entry) -> DecodingConstraint | None:
    if entry is None or isinstance(entry, DecodingConstraint):
        return entry
    if isinstance(entry, ConstraintFilter):
        return _SpanArcConstraint(entry.constraints, entry)
    if callable(entry):
        return _FilterConstraint(entry)
    raise TypeError(f"a constraint must be None, a callable or a DecodingConstraint, not {type(entry).__name__}")


def state_rows(model: Model, state, base: int, pad: int, out: list) -> None:
    """Append the vector rows a state reads: each feature position, its leftmost and
    rightmost modifier; ``base`` is the sentence's first row, ``pad`` the padding row."""
    leftmost, rightmost = state.leftmost, state.rightmost
    for word in model.system.features(state):
        if word < 0:
            out += (pad, pad, pad)
        else:
            left, right = leftmost[word], rightmost[word]
            out += (base + word, base + left if left >= 0 else pad, base + right if right >= 0 else pad)


def flat_rows(model: Model, rows: list, count: int) -> torch.Tensor:
    """Rows of :meth:`Network.project` for ``count`` states' vector rows."""
    slots = model.n_slots
    array = np.asarray(rows, dtype=np.int64).reshape(count, slots) * slots + np.arange(slots, dtype=np.int64)
    return torch.from_numpy(array).to(model.device)


def to_valid_tree(heads: Sequence[int], labels: Sequence[str | None],
                  prefer: Callable[[list[int]], list[int]] | None = None) -> tuple[list[int], list[str | None]]:
    """A UD tree from whatever a final state holds: cycles are broken, exactly one
    word hangs from the root (label ``root``), every other headless or root-attached
    word is attached to that word (label ``dep`` unless it had one).  ``prefer``
    maps the root-attached words to those to choose the root from first."""
    n = len(heads) - 1
    heads = [-1] + [h if h is not None and 0 <= h <= n and h != d else -1 for d, h in enumerate(heads) if d > 0]
    labels = list(labels)
    _break_cycles(heads)
    top = [d for d in range(1, n + 1) if heads[d] == 0]
    labeled_root = [d for d in top if labels[d] == ROOT_LABEL]
    pending = [d for d in range(1, n + 1) if heads[d] == -1]
    if not n:
        return heads, labels
    choice = prefer(top) if prefer and len(top) > 1 else []  # one root dependent leaves no choice
    root = (choice + labeled_root + top + pending)[0]
    heads[root], labels[root] = 0, ROOT_LABEL
    for d in range(1, n + 1):
        if d == root:
            continue
        if heads[d] in (0, -1):
            heads[d] = root
        if labels[d] in (None, ROOT_LABEL):
            labels[d] = FALLBACK_LABEL
    return heads, labels


def _break_cycles(heads: list[int]) -> None:
    """Detach one word of every cycle (its head becomes -1)."""
    n = len(heads) - 1
    color = [0] * (n + 1)  # 0 unseen, 1 on the current path, 2 done
    for start in range(1, n + 1):
        path, d = [], start
        while d > 0 and color[d] == 0:
            color[d] = 1
            path.append(d)
            d = heads[d]
        if d > 0 and color[d] == 1:
            heads[d] = -1
        for p in path:
            color[p] = 2


@contextlib.contextmanager
def _collector_paused():
    """Pause Python's cyclic garbage collector while decoding: the decoder
    allocates many short-lived acyclic objects (states, lists) that reference
    counting frees anyway, and the full collections they trigger cost up to a
    sixth of the parse time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def decode(model: Model, sentences: Sequence, batch_size: int = 64, constraints: Sequence | None = None,
           unsatisfiable: list | None = None) -> list[tuple[list[int], list[str | None]]]:
    """Greedy parses (valid trees) of ``sentences``, in their order.

    Constraints whose satisfiability was left to the decoder (filters made
    with ``check_satisfiable=False``) that no tree satisfies are dropped and
    their sentence decoded again without them: its position is appended to
    ``unsatisfiable``, or, without that list, a :class:`ConstraintError` is raised."""
    results: list = [None] * len(sentences)
    order = sorted(range(len(sentences)), key=lambda i: sentences[i].n)
    network = model.network
    was_training = network.training
    network.eval()
    try:
        with torch.no_grad(), _collector_paused():
            for start in range(0, len(order), batch_size):
                chosen = order[start:start + batch_size]
                batch_constraints = [_as_constraint(constraints[i]) for i in chosen] if constraints else None
                failed: list = []
                try:
                    states = _decode_batch(model, [sentences[i] for i in chosen], batch_constraints, failed)
                except DecodingError as error:
                    raise DecodingError(chosen[error.index], error.problem) from None
                for j in failed:
                    if unsatisfiable is None:
                        raise ConstraintError(f"sentence {chosen[j] + 1}: no projective tree satisfies "
                                              f"its constraints")
                    unsatisfiable.append(chosen[j])
                for j, (i, state) in enumerate(zip(chosen, states)):
                    constraint = batch_constraints[j] if batch_constraints else None
                    results[i] = to_valid_tree(state.heads, state.labels,
                                               constraint.preferred_roots if constraint else None)
    finally:
        network.train(was_training)
    return results


def _decode_batch(model: Model, sentences: Sequence, constraints: list | None, failed: list) -> list:
    """Final states of a batch.  A sentence whose unchecked constraints prove
    unsatisfiable (stuck, or a final state that misses them) is appended to
    ``failed`` and restarts without them (``constraints`` is updated)."""
    system, network = model.system, model.network
    owners = [c.state_system if c is not None and c.state_system is not None else system
              for c in constraints] if constraints else [system] * len(sentences)
    states = _initial_states(system, sentences, owners)
    live = [i for i, state in enumerate(states) if not system.is_final(state)]
    if not live:
        return states
    inputs = model.inputs(sentences)
    offsets, pad = inputs["offsets"], inputs["pad_row"]
    projected = network.project(network.encode(inputs))
    arc_actions = model.arc_actions
    allowed_in = ([_allowed_actions_function(system, c) for c in constraints] if constraints
                  else [system.legal_actions] * len(sentences))
    forced_in = [_forced_labels_function(system, c) for c in constraints] if constraints else None
    while live:
        scored, rows, legal_sets = [], [], []
        for i in live:
            state = states[i]
            legal = allowed_in[i](state)
            if not legal:
                _check_stuck(system, state, i, constraints)  # raises unless an unchecked set is unsatisfiable
                _restart_without_constraints(system, sentences, i, states, owners, constraints, failed,
                                             allowed_in, forced_in)
                continue
            if len(legal) == 1 and legal[0] not in arc_actions:
                owners[i].apply(state, legal[0])
                continue
            scored.append(i)
            legal_sets.append(legal)
            state_rows(model, state, offsets[i], pad, rows)
        if scored:
            hidden = network.hidden(projected, flat_rows(model, rows, len(scored)))
            choices = _best_transitions(model, hidden, [states[i] for i in scored], legal_sets,
                                        [forced_in[i] for i in scored] if constraints else None)
            for i, (action, label) in zip(scored, choices):
                owners[i].apply(states[i], action, label)
        if constraints:
            live = [i for i in live if not system.is_final(states[i])
                    or _restarted(system, sentences, i, states, owners, constraints, failed, allowed_in, forced_in)]
        else:
            live = [i for i in live if not system.is_final(states[i])]
    return states


def _initial_states(system, sentences: Sequence, owners: list) -> list:
    """The initial state of each sentence from its owner; where constrained
    systems own some, the unconstrained sentences get states of the same class
    when the system can make them (``unconstrained_state``), which keeps the
    decoder's attribute lookups specialized to one class."""
    constrained = next((owner for owner in owners if owner is not system), None)
    plain_state = getattr(constrained, "unconstrained_state", None) or system.initial_state
    return [plain_state(s.n) if owner is system else owner.initial_state(s.n) for owner, s in zip(owners, sentences)]


def _allowed_actions_function(system, constraint) -> Callable:
    """``state -> the actions the decoder may take`` for one sentence: the
    system's legal actions filtered by ``constraint``, in one call where the
    constraint's system finds them already filtered."""
    if constraint is None:
        return system.legal_actions
    if isinstance(constraint, _SpanArcConstraint) and constraint.state_system is not None:
        return constraint.state_system.legal_actions
    legal_actions, allowed_actions = system.legal_actions, constraint.allowed_actions

    def allowed(state):
        legal = legal_actions(state)
        return allowed_actions(state, legal) if legal else legal

    return allowed


def _forced_labels_function(system, constraint) -> Callable | None:
    """``(state, legal actions) -> {arc action: label the constraint forces on
    its arc}`` or ``None`` (none forced) for one sentence, one call per state;
    ``None`` without a constraint."""
    if constraint is None:
        return None
    if isinstance(constraint, _SpanArcConstraint) and constraint.state_system is not None:
        return constraint.state_system.forced_labels
    return functools.partial(forced_arc_labels, constraint.forced_label, system.arc_of, system.arc_actions)


def _check_stuck(system, state, i: int, constraints: list | None) -> None:
    """A non-final state of sentence ``i`` where the decoder may take no
    action: a broken system or decoding constraint raises; only unchecked
    constraints that no tree satisfies return (the sentence then restarts)."""
    legal = system.legal_actions(state)
    if not legal:
        raise RuntimeError(f"{system!r}: a non-final state has no legal action")
    if not getattr(constraints[i], "unchecked", False):
        raise DecodingError(i, f"the decoding constraint allows none of the legal actions {legal}")


def _restarted(system, sentences, i: int, states: list, owners: list, constraints: list, failed: list,
               allowed_in: list, forced_in: list) -> bool:
    """Whether the final state of sentence ``i`` misses its unchecked
    constraints, which restarts the sentence without them."""
    constraint = constraints[i]
    if constraint is None or not getattr(constraint, "unchecked", False) \
            or constraint.state_system.satisfied_by(states[i].heads):
        return False
    _restart_without_constraints(system, sentences, i, states, owners, constraints, failed, allowed_in, forced_in)
    return True


def _restart_without_constraints(system, sentences, i: int, states: list, owners: list, constraints: list,
                                 failed: list, allowed_in: list, forced_in: list) -> None:
    """Drop the constraints of sentence ``i`` (noted in ``failed``) and start it
    again from a plain state."""
    failed.append(i)
    owners[i], constraints[i] = system, None
    allowed_in[i], forced_in[i] = system.legal_actions, None
    states[i] = system.initial_state(sentences[i].n)


def _best_transitions(model: Model, hidden, states: list, legal_sets: list, forced_labels: list | None) -> list:
    """The best legal (action, label) of each state.  As a labeled transition scores
    action + label, each arc action's best label is found in torch for all states at
    once; only the choice among a state's few legal actions is made in Python.
    ``forced_labels``: per state, ``None`` or a function ``(state, legal actions) ->
    {arc action: forced label} or None`` (see :func:`_forced_labels_function`)."""
    network = model.network
    n_labels = len(model.labels)
    action_scores, label_scores = network.head_scores(hidden)
    if n_labels:
        per_action = label_scores[:, :len(model.arc_action_ids) * n_labels].view(len(states), -1, n_labels)
        best_label_scores, best_labels = per_action.max(2)
        action_scores = action_scores.index_add(1, model.arc_action_index, best_label_scores)
        best_labels = best_labels.tolist()
    totals = action_scores.tolist()
    action_id, arc_slot, labels = model.action_id, model.arc_slot, model.labels
    label_rows = None  # the label scores as a NumPy array, made for the first forced label
    choices = []
    for j, legal in enumerate(legal_sets):
        row = totals[j]
        forced_here = forced_labels[j](states[j], legal) if forced_labels and forced_labels[j] else None
        best, best_label, best_score = None, None, -math.inf
        for action in legal:
            score = row[action_id[action]]
            label = None
            if action in model.arc_actions and n_labels:
                slot = arc_slot[action]
                label = labels[best_labels[j][slot]]
                forced = forced_here.get(action) if forced_here else None
                if forced is not None:
                    known = model.label_id.get(forced)
                    if known is not None:  # rescore with the forced label instead of the best one
                        if label_rows is None:
                            label_rows = label_scores.cpu().numpy()
                        row_scores = label_rows[j]  # the difference in float32, as torch makes it
                        score += float(row_scores[slot * n_labels + known]
                                       - row_scores[slot * n_labels + best_labels[j][slot]])
                    label = forced
            if score > best_score:
                best, best_label, best_score = action, label, score
        choices.append((best, best_label))
    return choices


def load_checkpoint(path: str | Path) -> dict:
    """The plain-data dict of a checkpoint (``torch.load(weights_only=True)``)."""
    path = Path(path)
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint") from None
    except Exception as exc:  # torch raises many types for corrupt files
        raise CheckpointError(f"{path}: not a readable kgparser checkpoint ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: not a kgparser checkpoint")
    if data.get("format_version", 0) > CHECKPOINT_VERSION:
        raise CheckpointError(f"{path}: checkpoint format {data['format_version']} is newer than this kgparser")
    return data


ON_BAD_CONSTRAINTS = ("error", "skip")


class ConstraintWarning(UserWarning):
    """A sentence's constraints were dropped, or its parse misses them."""


@dataclass
class ConstraintReport:
    """What the last constrained :meth:`Parser.parse` did with the constraints."""

    #: sentences decoded with span/arc constraints
    constrained: int = 0
    #: messages naming the sentences whose constraints were dropped (``on_bad_constraints="skip"``)
    skipped: list = field(default_factory=list)
    #: positions (0-based) of those sentences
    skipped_sentences: list = field(default_factory=list)
    #: messages naming the sentences whose output misses a constraint
    violated: list = field(default_factory=list)


def describe_sentence(sentence, index: int) -> str:
    """``file, line L, sentence I (sent_id S)`` for error messages."""
    sent_id = getattr(sentence, "sent_id", None)
    return (f"{getattr(sentence, 'source', '<input>')}, line {getattr(sentence, 'line', '?')}, "
            f"sentence {index + 1}" + (f" (sent_id {sent_id})" if sent_id else ""))


def _constraint_entries(sentences: Sequence, constraints) -> list:
    """Per sentence: Constraints, a decoding constraint, None, or the
    ConstraintError met while reading that sentence's constraints."""
    if isinstance(constraints, str) and constraints == "misc":
        return [_misc_constraints(s) for s in sentences]
    if isinstance(constraints, (str, os.PathLike)):
        return _file_constraints(sentences, str(constraints))
    constraints = list(constraints)
    if len(constraints) != len(sentences):
        raise ValueError(f"{len(constraints)} constraints for {len(sentences)} sentences")
    return [_entry_constraints(entry, s, i) for i, (entry, s) in enumerate(zip(constraints, sentences))]


def _misc_constraints(sentence):
    try:
        return constraints_from_misc(sentence.misc, where="MISC")
    except ConstraintError as error:
        return error


def _file_constraints(sentences: Sequence, path: str) -> list:
    table = read_constraints_jsonl(path)
    entries = [constraints_for(table, getattr(s, "sent_id", None), i) for i, s in enumerate(sentences)]
    used = {id(entry) for entry in entries if entry is not None}
    unused = [c.where for c in table.values() if id(c) not in used]
    if unused:
        raise ConstraintError(f"{unused[0]}: names no sentence of the input "
                              f"({len(unused)} such record(s) in {path})")
    return entries


def _entry_constraints(entry, sentence, index: int):
    if isinstance(entry, Mapping):
        unknown = set(entry) - {"sent_id", "index", "arcs", "spans"}
        if unknown:
            return ConstraintError(f"constraints: unknown key(s) {sorted(unknown)}; expected arcs, spans")
        try:
            return Constraints(entry.get("arcs", []), entry.get("spans", []), where="constraints")
        except ConstraintError as error:
            return error
    if entry is None or isinstance(entry, (Constraints, DecodingConstraint, ConstraintFilter)) or callable(entry):
        return entry
    raise TypeError(f"constraints for sentence {index + 1}: expected None, Constraints, a dict, a callable "
                    f"or a DecodingConstraint, not {type(entry).__name__}")


def _check_single_root(constraints: Constraints) -> None:
    """The output is a UD tree (one root word), a stricter goal than the
    constrained system's forest, so two words constrained to the root fail."""
    rooted = sorted(a.dep for a in constraints.arcs if a.head == 0)
    if len(rooted) > 1:
        constraints.fail(f"words {rooted} are all constrained to the root; a UD tree has one root word")


class Parser:
    """A trained parser: ``Parser.load(path).parse(...)``."""

    def __init__(self, model: Model, batch_size: int = 64):
        self.model = model
        self.batch_size = batch_size
        self.constraint_report = ConstraintReport()

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu", batch_size: int = 64,
             threads: int | None = None) -> "Parser":
        if threads:
            torch.set_num_threads(threads)
        data = load_checkpoint(path)
        try:
            model = Model.from_data(data["model"])
        except (KeyError, ValueError, RuntimeError) as exc:
            raise CheckpointError(f"{path}: inconsistent checkpoint: {exc}") from None
        return cls(model.to(device), batch_size)

    @property
    def system(self):
        return self.model.system

    def parse(self, data, *, constraints=None, on_bad_constraints: str = "error", lenient: bool = False) -> list:
        """Parse a CoNLL-U path, Sentences, or lists of forms / (form, upos) tokens.

        Returns Sentences with HEAD and DEPREL set (copies: inputs are left unchanged);
        every other column and comment is kept.  ``constraints``: see the module
        docstring and :meth:`decoding_constraints`; what happened to them is in
        :attr:`constraint_report` afterwards.
        """
        sentences = self._sentences(data, lenient)
        self.constraint_report = ConstraintReport()
        entries, unsatisfiable = None, []
        with _collector_paused():  # the constraint checks, too, make short-lived acyclic objects
            if constraints is not None:
                entries = self.decoding_constraints(sentences, constraints, on_bad_constraints,
                                                    defer_satisfiability=True)
            try:
                trees = decode(self.model, sentences, self.batch_size, entries, unsatisfiable)
            except DecodingError as error:
                raise DecodingError(error.index, error.problem,
                                    describe_sentence(sentences[error.index], error.index)) from None
        for index in sorted(unsatisfiable):
            self._drop_unsatisfiable(sentences[index], index, entries, on_bad_constraints)
        for index, (sentence, (heads, labels)) in enumerate(zip(sentences, trees)):
            sentence.set_tree(heads, labels)
            if entries is not None:
                self._verify(sentence, index, entries[index], heads, labels)
        return sentences

    def decoding_constraints(self, sentences: Sequence, constraints, on_bad_constraints: str = "error", *,
                             defer_satisfiability: bool = False) -> list:
        """One decoding constraint (or ``None``) per sentence from ``constraints``:
        a JSON-lines path, ``"misc"``, or a list with one entry per sentence
        (``None``, :class:`Constraints`, a JSON-lines dict, a callable or a
        :class:`DecodingConstraint`).  Span and arc constraints are checked
        against their sentence; a sentence they do not fit raises
        :class:`ConstraintError` naming it, or with ``on_bad_constraints="skip"``
        is parsed without constraints after a :class:`ConstraintWarning`.
        ``defer_satisfiability``: leave the exact satisfiability test to
        :func:`decode` where it can make it (arc-eager, root at the end),
        which then reports the unsatisfiable sets (as :meth:`parse` does)."""
        if on_bad_constraints not in ON_BAD_CONSTRAINTS:
            raise KgparserError(f"on_bad_constraints: expected one of {ON_BAD_CONSTRAINTS}, "
                                f"got {on_bad_constraints!r}")
        self.constraint_report = report = ConstraintReport()
        made = _constraint_entries(sentences, constraints)  # "misc" is never read as a file name
        self._check_supported([entry for entry in made if isinstance(entry, Constraints)])
        entries = []
        for index, (sentence, entry) in enumerate(zip(sentences, made)):
            try:
                if isinstance(entry, ConstraintError):
                    raise entry
                if isinstance(entry, Constraints):
                    _check_single_root(entry)
                    entry = constraint_filter(self.system, entry, sentence.n,
                                              check_satisfiable=not defer_satisfiability)
                    report.constrained += entry is not None
            except ConstraintError as error:
                message = f"{describe_sentence(sentence, index)}: {error}"
                if on_bad_constraints == "error":
                    raise ConstraintError(message) from None
                warnings.warn(f"constraints dropped: {message}", ConstraintWarning, stacklevel=3)
                report.skipped.append(message)
                report.skipped_sentences.append(index)
                entry = None
            entries.append(entry)
        return entries

    def _drop_unsatisfiable(self, sentence, index: int, entries: list, on_bad_constraints: str) -> None:
        """The decoder found that no tree satisfies this sentence's constraints
        and parsed it without them: raise, or warn and report."""
        report = self.constraint_report
        message = (f"{describe_sentence(sentence, index)}: {entries[index].constraints.where}: "
                   f"no projective tree satisfies these constraints")
        if on_bad_constraints == "error":
            raise ConstraintError(message)
        warnings.warn(f"constraints dropped: {message}", ConstraintWarning, stacklevel=3)
        at = bisect.bisect(report.skipped_sentences, index)
        report.skipped.insert(at, message)
        report.skipped_sentences.insert(at, index)
        report.constrained -= 1
        entries[index] = None

    def _check_supported(self, constraints: list) -> None:
        reason = unsupported(self.system, spans=any(c.spans for c in constraints),
                             arcs=any(c.arcs for c in constraints))
        if reason:
            first = next(c for c in constraints if c.spans or c.arcs)
            raise ConstraintError(f"{first.where}: this model cannot parse with these constraints: {reason}")

    def _verify(self, sentence, index: int, entry, heads, labels) -> None:
        """Warn (never silently) when a parse misses its span or arc constraints
        (``entry``: what :meth:`decoding_constraints` gave for the sentence)."""
        if not isinstance(entry, ConstraintFilter):
            return
        problem = entry.constraints.violation(heads, labels)
        if problem:
            message = f"{describe_sentence(sentence, index)}: output breaks its constraints: {problem}"
            warnings.warn(message, ConstraintWarning, stacklevel=3)
            self.constraint_report.violated.append(message)

    @staticmethod
    def _sentences(data, lenient: bool) -> list:
        from .conllu_io import Sentence, read_conllu, sentences_from_tokens

        if isinstance(data, (str, os.PathLike)):
            return list(read_conllu(data, lenient=lenient, require_tree=False))
        items = list(data)
        if all(isinstance(s, Sentence) for s in items):
            return [s.copy() for s in items]
        return sentences_from_tokens(items)

    def parse_file(self, source: str | Path, target, **options) -> list:
        """Parse a CoNLL-U file into ``target`` (a path, ``.gz`` for gzip, ``-`` or an
        open text file) and return the parsed sentences; ``options`` are
        :meth:`parse`'s (``constraints``, ``on_bad_constraints``, ``lenient``).
        Nothing is written when parsing fails."""
        from .conllu_io import write_conllu

        sentences = self.parse(source, **options)
        write_conllu(sentences, target)
        return sentences
