"""Inference: load a checkpoint and parse sentences, batched.

    >>> from kgparser.parser import Parser
    >>> parser = Parser.load("runs/quickstart/best.pt")
    >>> parser.parse([["The", "dog", "barks", "."]])            # plain forms
    >>> parser.parse([[("The", "DET"), ("dog", "NOUN")]])        # (form, upos)
    >>> parser.parse("in.conllu")                                 # a CoNLL-U file

The decoding itself (batched, greedy, always a valid UD tree) is
:mod:`kgparser.decoding`; checkpoints are read by
:mod:`kgparser.model.checkpoint`.  Their names stay importable from here.

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
of the legal actions is a :class:`DecodingError`, a model whose scores are
not finite a :class:`NonFiniteScores`.

Nothing is lost: sentences longer than any the model was trained on are
parsed with one :class:`LongSentenceWarning` per call; with ``lenient=True``
the sentences of a file that cannot be read are listed in the result's
``skipped`` and, with ``parse_file(..., keep_skipped=True)``, written back
unchanged in their place.
"""
from __future__ import annotations

import bisect
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import torch

from .constraints import (ConstraintError, ConstraintFilter, Constraints, constraint_filter, constraints_for,
                          constraints_from_misc, read_constraints_jsonl, unsupported)
from .decoding import DecodingConstraint, DecodingError, _collector_paused
from .errors import KgparserError
from .model import Model
from .model.checkpoint import CheckpointError, load_checkpoint
from .model.encoder import EncoderError
from .plaintext import is_text_format, read_tokenized
from .tagging import TagReport, parse_tagged
from .tree_repair import ROOT_CHOICES

ON_BAD_CONSTRAINTS = ("error", "skip")


class ConstraintWarning(UserWarning):
    """A sentence's constraints were dropped, or its parse misses them."""


class LongSentenceWarning(UserWarning):
    """Sentences longer than the longest the model was trained on: nothing
    in training showed it positions that far, so it may parse them worse."""


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


def warn_long_sentences(count: int, longest: int, trained: int, stacklevel: int = 2) -> None:
    """The :class:`LongSentenceWarning` for ``count`` sentences longer than the
    longest training sentence (``trained`` words), the longest ``longest`` words."""
    warnings.warn(f"{count} sentence(s) are longer than the longest training sentence ({trained} words), "
                  f"the longest {longest} words: the model may parse them worse", LongSentenceWarning,
                  stacklevel=stacklevel)


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
        self.tag_report = TagReport()

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu", batch_size: int = 64,
             threads: int | None = None, encoder: str | Path | None = None) -> "Parser":
        """The parser of checkpoint ``path``; ``encoder``: where the pretrained encoder
        of a model that has one is now (a folder or hub name), if it has moved since
        training (it must be the same encoder: its fingerprint is checked)."""
        if threads:
            torch.set_num_threads(threads)
        data = load_checkpoint(path)
        try:
            model = Model.from_data(data["model"], encoder=encoder)
        except (KeyError, ValueError, RuntimeError) as exc:
            raise CheckpointError(f"{path}: inconsistent checkpoint: {exc}") from None
        except EncoderError as error:
            raise type(error)(f"{path}: {error}") from None
        return cls(model.to(device), batch_size)

    @property
    def system(self):
        return self.model.system

    def parse(self, data, *, constraints=None, on_bad_constraints: str = "error", lenient: bool = False,
              tags: str = "auto", input_format: str = "conllu", root_choice: str | None = None,
              lang: str | None = None) -> list:
        """Parse a CoNLL-U path, Sentences, or lists of forms / (form, upos) tokens;
        with ``input_format="text"``, a pre-tokenized text file or a list of lines
        (one sentence per line, tokens separated by spaces: :mod:`kgparser.plaintext`);
        with ``input_format="raw"``, raw text (a str) or a raw text file (a Path),
        tokenized by spaCy for ``lang`` (default :attr:`lang`: :mod:`kgparser.rawtext`).

        Returns Sentences with HEAD and DEPREL set (copies: inputs are left unchanged);
        every other column and comment is kept.  ``constraints``: see the module
        docstring and :meth:`decoding_constraints`; what happened to them is in
        :attr:`constraint_report` afterwards.  A path read with ``lenient=True``
        gives a :class:`~kgparser.conllu_io.SentenceList` whose ``skipped`` lists
        the sentences that could not be read.  ``tags``: ``auto`` (the input's tags,
        the model's tagger where they are ``_``), ``input`` or ``predict``; predicted
        tags are written only where the input has ``_`` (:mod:`kgparser.tagging`,
        :attr:`tag_report` afterwards).  ``root_choice``: which loose word of a final
        state becomes the root (``scored``, ``first``, ``last``, ``multi``:
        :mod:`kgparser.tree_repair`); default the model's ``model.root_choice``.
        """
        if root_choice is not None and root_choice not in ROOT_CHOICES:
            raise KgparserError(f"root_choice: expected one of {', '.join(ROOT_CHOICES)}, got {root_choice!r}")
        sentences = self._input(data, input_format, lenient, lang)
        self._warn_long(sentences)
        self.constraint_report = ConstraintReport()
        entries, unsatisfiable = None, []
        with _collector_paused():  # the constraint checks, too, make short-lived acyclic objects
            if constraints is not None:
                entries = self.decoding_constraints(sentences, constraints, on_bad_constraints,
                                                    defer_satisfiability=True)
            try:
                trees, self.tag_report = parse_tagged(self.model, sentences, tags, self.batch_size,
                                                      constraints=entries, unsatisfiable=unsatisfiable,
                                                      root_choice=root_choice)
            except DecodingError as error:
                raise type(error)(error.index, error.problem,
                                  describe_sentence(sentences[error.index], error.index)) from None
        for index in sorted(unsatisfiable):
            self._drop_unsatisfiable(sentences[index], index, entries, on_bad_constraints)
        for index, (sentence, (heads, labels)) in enumerate(zip(sentences, trees)):
            sentence.set_tree(heads, labels)
            if entries is not None:
                self._verify(sentence, index, entries[index], heads, labels)
        return sentences

    @property
    def lang(self) -> str | None:
        """The language the model was trained on (:func:`kgparser.rawtext.model_language`), or None."""
        from .rawtext import model_language

        return model_language(self.model.config)

    def _input(self, data, input_format: str, lenient: bool, lang: str | None) -> list:
        if input_format == "raw":
            from .rawtext import read_raw

            return read_raw(data, lang or self.lang)
        return read_tokenized(data) if is_text_format(input_format) else self._sentences(data, lenient)

    def render(self, data, picture_format: str = "html", **options) -> str:
        """Parse ``data`` (``options`` are :meth:`parse`'s) and draw each sentence's
        tree: an HTML page or one SVG picture (:mod:`kgparser.render`)."""
        from .render import render

        return render(self.parse(data, **options), picture_format)

    def _warn_long(self, sentences: Sequence) -> None:
        """One :class:`LongSentenceWarning` for the sentences longer than the
        longest training sentence (unknown for checkpoints from before it was
        recorded, which are never warned about)."""
        longest = self.model.max_train_length
        if longest is None:
            return
        lengths = [s.n for s in sentences if s.n > longest]
        if lengths:
            warn_long_sentences(len(lengths), max(lengths), longest, stacklevel=4)

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
        from .conllu_io import Sentence, TokenError, read_conllu, sentences_from_tokens

        if isinstance(data, (str, os.PathLike)):
            return read_conllu(data, lenient=lenient, require_tree=False)
        if not isinstance(data, Iterable):
            raise TokenError(f"expected a CoNLL-U path, Sentences or lists of tokens, got {type(data).__name__}")
        items = list(data)
        if all(isinstance(s, Sentence) for s in items):
            return [s.copy() for s in items]
        return sentences_from_tokens(items)

    def parse_file(self, source: str | Path, target, *, keep_skipped: bool = False, output_format: str = "conllu",
                   processes: int = 1, chunk_size: int | None = None, progress: bool = False, **options):
        """Parse a file into ``target`` (a path, ``.gz`` for gzip, ``-`` or an
        open text file) and return a :class:`~kgparser.streaming.ParseSummary`
        (sentences, words, ``skipped``, ``tag_report``); ``options`` are
        :meth:`parse`'s (``constraints``, ``on_bad_constraints``, ``lenient``,
        ``tags``, ``input_format``, ``lang``, ``root_choice``).  CoNLL-U output
        is streamed: read, parsed and written ``chunk_size`` sentences at a time
        (default :data:`~kgparser.streaming.DEFAULT_CHUNK_SIZE`), by ``processes``
        worker processes, in flat memory, with a progress line on standard error
        if ``progress`` (:mod:`kgparser.streaming`).  ``output_format``:
        ``conllu``, or ``html`` / ``svg`` for pictures of the trees
        (:mod:`kgparser.render`; the whole input at once).  ``keep_skipped``
        reads leniently and writes each sentence that cannot be read back
        unchanged in its place, so that the output has as many sentences as the
        input (without it, a lenient parse leaves them out).  A file target is
        written whole or not at all: nothing is written when parsing fails,
        e.g. on a truncated ``.gz`` file, whose sentences read before the damage
        are not written as if they were the whole file."""
        from .render import check_format, write_picture
        from .streaming import DEFAULT_CHUNK_SIZE, ParseSummary, parse_file

        check_format(output_format)
        options["lenient"] = options.get("lenient", False) or keep_skipped
        if output_format == "conllu":
            return parse_file(self, source, target, keep_skipped=keep_skipped, processes=processes,
                              chunk_size=chunk_size or DEFAULT_CHUNK_SIZE, progress=progress, **options)
        if options.get("input_format") == "raw":
            source = Path(source)  # a file name, not the text itself
        sentences = self.parse(source, **options)
        write_picture(sentences, target, output_format)
        return ParseSummary.of(sentences, self.tag_report)

    def pipe(self, data: Iterable, *, processes: int = 1, chunk_size: int | None = None, **options):
        """Parse any iterable of sentences lazily: a generator of parsed copies,
        ``chunk_size`` sentences read and parsed at a time (default
        :data:`~kgparser.streaming.DEFAULT_CHUNK_SIZE`), by ``processes`` worker
        processes, in input order.  ``data``: Sentences or token lists as for
        :meth:`parse` (``input_format="text"``: lines of pre-tokenized text);
        ``options`` are :meth:`parse`'s but ``constraints``.  When ``data``
        raises, the sentences read before it are yielded first."""
        from .streaming import DEFAULT_CHUNK_SIZE, pipe

        return pipe(self, data, processes=processes, chunk_size=chunk_size or DEFAULT_CHUNK_SIZE, **options)
