"""Constraints at parse time: reading them per sentence, turning them into
decoding constraints, and reporting what became of them.

``Parser.parse(..., constraints=...)`` takes hard span and arc constraints
(Nivre, Goldberg & McDonald 2014; :mod:`kgparser.constraints`) as a
JSON-lines file path, ``"misc"`` (read from each sentence's MISC column), or
a list with one entry per sentence: ``None``, a
:class:`~kgparser.constraints.Constraints`, a dict in the JSON-lines shape
(``{"arcs": [...], "spans": [...]}``), a callable ``f(state, legal_actions)
-> allowed_actions`` or a :class:`DecodingConstraint` (which can also force
the label of an arc).  :func:`resolve_constraints` checks each against its
sentence and gives the decoder one :class:`DecodingConstraint` (or None) per
sentence; :func:`drop_unsatisfiable` and :func:`check_parse` report the
sentences whose constraints no tree satisfies or whose parse misses them
(:class:`ConstraintReport`), never silently.
"""
from __future__ import annotations

import bisect
import functools
import os
import warnings
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..constraints import (
    ConstraintError,
    ConstraintFilter,
    Constraints,
    constraint_filter,
    constraints_for,
    constraints_from_misc,
    forced_arc_labels,
    read_constraints_jsonl,
    unsupported,
)
from ..errors import KgparserError

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


class SpanArcConstraint(DecodingConstraint):
    """:class:`~kgparser.constraints.Constraints` of one sentence as a decoding
    constraint: the actions of its filter, its forced labels, and a root
    choice that keeps the arc and span constraints when a final state has
    several root dependents."""

    def __init__(self, constraints, constraint_filter):
        self.constraints = constraints
        self.filter = constraint_filter
        #: the satisfiability of the constraints is left to the decoder's run (see :mod:`kgparser.inference.decode`)
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


def as_constraint(entry) -> DecodingConstraint | None:
    if entry is None or isinstance(entry, DecodingConstraint):
        return entry
    if isinstance(entry, ConstraintFilter):
        return SpanArcConstraint(entry.constraints, entry)
    if callable(entry):
        return _FilterConstraint(entry)
    raise TypeError(f"a constraint must be None, a callable or a DecodingConstraint, not {type(entry).__name__}")


def allowed_actions_function(system, constraint) -> Callable:
    """``state -> the actions the decoder may take`` for one sentence: the
    system's legal actions filtered by ``constraint``, in one call where the
    constraint's system finds them already filtered."""
    if constraint is None:
        return system.legal_actions
    if isinstance(constraint, SpanArcConstraint) and constraint.state_system is not None:
        return constraint.state_system.legal_actions
    legal_actions, allowed_actions = system.legal_actions, constraint.allowed_actions

    def allowed(state):
        legal = legal_actions(state)
        return allowed_actions(state, legal) if legal else legal

    return allowed


def forced_labels_function(system, constraint) -> Callable | None:
    """``(state, legal actions) -> {arc action: label the constraint forces on
    its arc}`` or ``None`` (none forced) for one sentence, one call per state;
    ``None`` without a constraint."""
    if constraint is None:
        return None
    if isinstance(constraint, SpanArcConstraint) and constraint.state_system is not None:
        return constraint.state_system.forced_labels
    return functools.partial(forced_arc_labels, constraint.forced_label, system.arc_of, system.arc_actions)


def resolve_constraints(system, sentences: Sequence, constraints, on_bad_constraints: str = "error", *,
                        defer_satisfiability: bool = False) -> tuple[list, ConstraintReport]:
    """One decoding constraint (or ``None``) per sentence from ``constraints``
    (see the module docstring), and the report of what became of them.  Span
    and arc constraints are checked against their sentence; a sentence they do
    not fit raises :class:`ConstraintError` naming it, or with
    ``on_bad_constraints="skip"`` is parsed without constraints after a
    :class:`ConstraintWarning`.  ``defer_satisfiability``: leave the exact
    satisfiability test to the decoder where it can make it (arc-eager, root
    at the end), which then reports the unsatisfiable sets
    (:func:`drop_unsatisfiable`)."""
    if on_bad_constraints not in ON_BAD_CONSTRAINTS:
        raise KgparserError(f"on_bad_constraints: expected one of {ON_BAD_CONSTRAINTS}, "
                            f"got {on_bad_constraints!r}")
    report = ConstraintReport()
    made = _constraint_entries(sentences, constraints)  # "misc" is never read as a file name
    _check_supported(system, [entry for entry in made if isinstance(entry, Constraints)])
    entries = []
    for index, (sentence, entry) in enumerate(zip(sentences, made)):
        try:
            if isinstance(entry, ConstraintError):
                raise entry
            if isinstance(entry, Constraints):
                _check_single_root(entry)
                entry = constraint_filter(system, entry, sentence.n, check_satisfiable=not defer_satisfiability)
                report.constrained += entry is not None
        except ConstraintError as error:
            message = f"{describe_sentence(sentence, index)}: {error}"
            if on_bad_constraints == "error":
                raise ConstraintError(message) from None
            warnings.warn(f"constraints dropped: {message}", ConstraintWarning, stacklevel=5)
            report.skipped.append(message)
            report.skipped_sentences.append(index)
            entry = None
        entries.append(entry)
    return entries, report


def drop_unsatisfiable(report: ConstraintReport, sentence, index: int, entries: list,
                       on_bad_constraints: str) -> None:
    """The decoder found that no tree satisfies the constraints of sentence
    ``index`` and parsed it without them: raise, or warn and report."""
    message = (f"{describe_sentence(sentence, index)}: {entries[index].constraints.where}: "
               f"no projective tree satisfies these constraints")
    if on_bad_constraints == "error":
        raise ConstraintError(message)
    warnings.warn(f"constraints dropped: {message}", ConstraintWarning, stacklevel=4)
    at = bisect.bisect(report.skipped_sentences, index)
    report.skipped.insert(at, message)
    report.skipped_sentences.insert(at, index)
    report.constrained -= 1
    entries[index] = None


def check_parse(report: ConstraintReport, sentence, index: int, entry, heads, labels) -> None:
    """Warn (never silently) when a parse misses its span or arc constraints
    (``entry``: what :func:`resolve_constraints` gave for the sentence)."""
    if not isinstance(entry, ConstraintFilter):
        return
    problem = entry.constraints.violation(heads, labels)
    if problem:
        message = f"{describe_sentence(sentence, index)}: output breaks its constraints: {problem}"
        warnings.warn(message, ConstraintWarning, stacklevel=4)
        report.violated.append(message)


def _check_supported(system, constraints: list) -> None:
    reason = unsupported(system, spans=any(c.spans for c in constraints), arcs=any(c.arcs for c in constraints))
    if reason:
        first = next(c for c in constraints if c.spans or c.arcs)
        raise ConstraintError(f"{first.where}: this model cannot parse with these constraints: {reason}")
