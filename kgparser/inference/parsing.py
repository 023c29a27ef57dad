"""The parse sequence, the one place it runs: plan the tags
(:mod:`~kgparser.inference.tags`), resolve the decoding constraints
(:mod:`~kgparser.inference.decoding_constraints`), decode
(:mod:`~kgparser.inference.decode`), write the predicted tags into the
input's gaps and each sentence's tree.  :class:`~kgparser.inference.parser.Parser`
calls it for what it reads, the corpus parser
(:mod:`~kgparser.inference.corpus`) for each chunk, in this process or in a
worker, and training's evaluation for gold sentences stripped of the tags
the model predicts (:func:`parse_untagged`).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

from ..io.collector import collector_paused
from ..model import Model
from .decode import Decoded, DecodingError, decode
from .decoding_constraints import (
    ConstraintReport,
    check_parse,
    describe_sentence,
    drop_unsatisfiable,
    resolve_constraints,
)
from .tags import TagReport, plan_tags


class LongSentenceWarning(UserWarning):
    """Sentences longer than the longest the model was trained on: nothing
    in training showed it positions that far, so it may parse them worse."""


def warn_long_sentences(count: int, longest: int, trained: int, stacklevel: int = 2) -> None:
    """The :class:`LongSentenceWarning` for ``count`` sentences longer than the
    longest training sentence (``trained`` words), the longest ``longest`` words."""
    warnings.warn(f"{count} sentence(s) are longer than the longest training sentence ({trained} words), "
                  f"the longest {longest} words: the model may parse them worse", LongSentenceWarning,
                  stacklevel=stacklevel)


@dataclass
class Parsed:
    """What :func:`parse_sentences` did: the tags (:class:`TagReport`), the
    constraints (:class:`ConstraintReport`), and the sentences longer than the
    longest training sentence (their count, the longest one's length)."""

    tag_report: TagReport
    constraint_report: ConstraintReport
    long_sentences: int = 0
    longest: int = 0


def parse_sentences(model: Model, sentences: list, *, batch_size: int = 64, tags: str = "auto",
                    constraints=None, on_bad_constraints: str = "error", root_choice: str | None = None) -> Parsed:
    """Parse ``sentences`` in place: HEAD and DEPREL set, predicted tags written
    where the input has ``_`` (as ``tags`` says), ``constraints`` obeyed
    (:meth:`Parser.parse <kgparser.inference.parser.Parser.parse>` documents the options)."""
    with collector_paused():  # the checks, too, make short-lived acyclic objects
        plan = plan_tags(model, sentences, tags)
        entries, report = _constraints(model, sentences, constraints, on_bad_constraints)
        decoded = _decode(model, plan.decoder_input, batch_size, entries, plan.predicts, root_choice)
    tag_report = plan.fill(sentences, decoded.tags)
    _write_back(sentences, decoded, entries, report, on_bad_constraints)
    trained = model.max_train_length
    long = [s.n for s in sentences if trained is not None and s.n > trained]
    return Parsed(tag_report, report, len(long), max(long, default=0))


def parse_untagged(model: Model, sentences: Sequence, batch_size: int = 64) -> list:
    """Copies of gold ``sentences`` parsed as a user's text would be: the columns the
    model predicts are removed, then predicted (a model without a tagger parses the
    copies as they are).  What training reports on dev and test data."""
    copies = [s.copy() for s in sentences]
    for sentence in copies:
        sentence.set_tags({column: [None] * sentence.n for column in model.tag_columns})
    parse_sentences(model, copies, batch_size=batch_size)
    return copies


def _constraints(model: Model, sentences: list, constraints,
                 on_bad_constraints: str) -> tuple[list | None, ConstraintReport]:
    """The decoding constraints of ``sentences`` (None without), their
    satisfiability left to the decoder where it can test it exactly."""
    if constraints is None:
        return None, ConstraintReport()
    return resolve_constraints(model.system, sentences, constraints, on_bad_constraints, defer_satisfiability=True)


def _decode(model: Model, sentences: list, batch_size: int, entries: list | None, with_tags: bool,
            root_choice: str | None) -> Decoded:
    try:
        return decode(model, sentences, batch_size, entries, with_tags, root_choice)
    except DecodingError as error:
        raise type(error)(error.index, error.problem, describe_sentence(sentences[error.index], error.index)) \
            from None


def _write_back(sentences: list, decoded: Decoded, entries: list | None, report: ConstraintReport,
                on_bad_constraints: str) -> None:
    """Set each sentence's tree; report the constraints the decoder found
    unsatisfiable and the parses that miss theirs."""
    for index in sorted(decoded.unsatisfiable):
        assert entries is not None  # only a sentence with constraints has unsatisfiable ones
        drop_unsatisfiable(report, sentences[index], index, entries, on_bad_constraints)
    for index, (sentence, (heads, labels)) in enumerate(zip(sentences, decoded.trees)):
        sentence.set_tree(heads, labels)
        if entries is not None:
            check_parse(report, sentence, index, entries[index], heads, labels)
