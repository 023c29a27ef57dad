"""Inference: load a checkpoint and parse sentences, batched.

    >>> from kgparser import Parser
    >>> parser = Parser.load("runs/quickstart/best.pt")
    >>> parser.parse([["The", "dog", "barks", "."]])            # plain forms
    >>> parser.parse([[("The", "DET"), ("dog", "NOUN")]])        # (form, upos)
    >>> parser.parse("in.conllu")                                 # a CoNLL-U file

:meth:`Parser.parse` reads the input, plans the tags
(:mod:`kgparser.inference.tags`), resolves the constraints
(:mod:`kgparser.inference.decoding_constraints`), decodes (batched, greedy,
always a valid UD tree: :mod:`kgparser.inference.decode`) and writes the trees
back; checkpoints are read by :meth:`kgparser.model.Model.load`.

Constraints: ``parse(..., constraints=...)`` takes hard span and arc
constraints (:mod:`kgparser.constraints`) as a JSON-lines file path, ``"misc"``
(read from each sentence's MISC column), or a list with one entry per
sentence: ``None``, a :class:`~kgparser.constraints.Constraints`, a dict in
the JSON-lines shape (``{"arcs": [...], "spans": [...]}``), a callable
``f(state, legal_actions) -> allowed_actions`` or a
:class:`~kgparser.inference.decoding_constraints.DecodingConstraint`
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

import os
import warnings
from pathlib import Path
from typing import Iterable, Sequence

import torch

from ..errors import KgparserError
from ..model import Model
from .decode import Decoded, DecodingError, collector_paused, decode
from .decoding_constraints import (ConstraintReport, check_parse, describe_sentence,
                                   drop_unsatisfiable, resolve_constraints)
from .options import checked_batch_size
from ..io.plaintext import is_text_format, read_tokenized
from .tags import TagReport, plan_tags
from .tree_repair import ROOT_CHOICES

__all__ = ["LongSentenceWarning", "Parser"]


class LongSentenceWarning(UserWarning):
    """Sentences longer than the longest the model was trained on: nothing
    in training showed it positions that far, so it may parse them worse."""


def warn_long_sentences(count: int, longest: int, trained: int, stacklevel: int = 2) -> None:
    """The :class:`LongSentenceWarning` for ``count`` sentences longer than the
    longest training sentence (``trained`` words), the longest ``longest`` words."""
    warnings.warn(f"{count} sentence(s) are longer than the longest training sentence ({trained} words), "
                  f"the longest {longest} words: the model may parse them worse", LongSentenceWarning,
                  stacklevel=stacklevel)


class Parser:
    """A trained parser: ``Parser.load(path).parse(...)``."""

    def __init__(self, model: Model, batch_size: int = 64):
        self.model = model
        self.batch_size = checked_batch_size(batch_size)
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
        return cls(Model.load(path, encoder=encoder).to(device), batch_size)

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
        gives a :class:`~kgparser.io.conllu.SentenceList` whose ``skipped`` lists
        the sentences that could not be read.  ``tags``: ``auto`` (the input's tags,
        the model's tagger where they are ``_``), ``input`` or ``predict``; predicted
        tags are written only where the input has ``_`` (:mod:`kgparser.tagging`,
        :attr:`tag_report` afterwards).  ``root_choice``: which loose word of a final
        state becomes the root (``scored``, ``first``, ``last``, ``multi``:
        :mod:`kgparser.tree_repair`); default the model's ``decoding.root_choice``.
        """
        if root_choice is not None and root_choice not in ROOT_CHOICES:
            raise KgparserError(f"root_choice: expected one of {', '.join(ROOT_CHOICES)}, got {root_choice!r}")
        sentences = self._input(data, input_format, lenient, lang)
        self._warn_long(sentences)
        with collector_paused():  # the checks, too, make short-lived acyclic objects
            plan = plan_tags(self.model, sentences, tags)
            entries = self._constraints(sentences, constraints, on_bad_constraints)
            decoded = self._decode(plan.decoder_input, entries, plan.predicts, root_choice)
        self.tag_report = plan.fill(sentences, decoded.tags)
        self._write_back(sentences, decoded, entries, on_bad_constraints)
        return sentences

    def _constraints(self, sentences: list, constraints, on_bad_constraints: str) -> list | None:
        """The decoding constraints of ``sentences`` (None without), their
        satisfiability left to the decoder where it can test it exactly."""
        if constraints is None:
            self.constraint_report = ConstraintReport()
            return None
        return self.decoding_constraints(sentences, constraints, on_bad_constraints, defer_satisfiability=True)

    def _decode(self, sentences: list, entries: list | None, with_tags: bool, root_choice: str | None) -> Decoded:
        try:
            return decode(self.model, sentences, self.batch_size, entries, with_tags, root_choice)
        except DecodingError as error:
            raise type(error)(error.index, error.problem,
                              describe_sentence(sentences[error.index], error.index)) from None

    def _write_back(self, sentences: list, decoded: Decoded, entries: list | None, on_bad_constraints: str) -> None:
        """Set each sentence's tree; report the constraints the decoder found
        unsatisfiable and the parses that miss theirs."""
        for index in sorted(decoded.unsatisfiable):
            drop_unsatisfiable(self.constraint_report, sentences[index], index, entries, on_bad_constraints)
        for index, (sentence, (heads, labels)) in enumerate(zip(sentences, decoded.trees)):
            sentence.set_tree(heads, labels)
            if entries is not None:
                check_parse(self.constraint_report, sentence, index, entries[index], heads, labels)

    @property
    def lang(self) -> str | None:
        """The language the model was trained on (:func:`kgparser.rawtext.model_language`), or None."""
        from ..rawtext import model_language

        return model_language(self.model.config)

    def _input(self, data, input_format: str, lenient: bool, lang: str | None) -> list:
        if input_format == "raw":
            from ..rawtext import read_raw

            return read_raw(data, lang or self.lang)
        return read_tokenized(data) if is_text_format(input_format) else self._sentences(data, lenient)

    def render(self, data, picture_format: str = "html", **options) -> str:
        """Parse ``data`` (``options`` are :meth:`parse`'s) and draw each sentence's
        tree: an HTML page or one SVG picture (:mod:`kgparser.io.render`)."""
        from ..io.render import render

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
        """One decoding constraint (or ``None``) per sentence from ``constraints``
        (:func:`~kgparser.inference.decoding_constraints.resolve_constraints`);
        what became of them is in :attr:`constraint_report` afterwards."""
        entries, self.constraint_report = resolve_constraints(self.system, sentences, constraints,
                                                              on_bad_constraints,
                                                              defer_satisfiability=defer_satisfiability)
        return entries

    @staticmethod
    def _sentences(data, lenient: bool) -> list:
        from ..io.conllu import Sentence, TokenError, read_conllu, sentences_from_tokens

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
        open text file) and return a :class:`~kgparser.inference.corpus.ParseSummary`
        (sentences, words, ``skipped``, ``tag_report``); ``options`` are
        :meth:`parse`'s (``constraints``, ``on_bad_constraints``, ``lenient``,
        ``tags``, ``input_format``, ``lang``, ``root_choice``).  CoNLL-U output
        is streamed: read, parsed and written ``chunk_size`` sentences at a time
        (default :data:`~kgparser.inference.corpus.DEFAULT_CHUNK_SIZE`), by ``processes``
        worker processes, in flat memory, with a progress line on standard error
        if ``progress`` (:mod:`kgparser.inference.corpus`).  ``output_format``:
        ``conllu``, or ``html`` / ``svg`` for pictures of the trees
        (:mod:`kgparser.io.render`; the whole input at once).  ``keep_skipped``
        reads leniently and writes each sentence that cannot be read back
        unchanged in its place, so that the output has as many sentences as the
        input (without it, a lenient parse leaves them out).  A file target is
        written whole or not at all: nothing is written when parsing fails,
        e.g. on a truncated ``.gz`` file, whose sentences read before the damage
        are not written as if they were the whole file."""
        from ..io.render import check_format, write_picture
        from .corpus import DEFAULT_CHUNK_SIZE, ParseSummary, parse_file

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
        :data:`~kgparser.inference.corpus.DEFAULT_CHUNK_SIZE`), by ``processes`` worker
        processes, in input order.  ``data``: Sentences or token lists as for
        :meth:`parse` (``input_format="text"``: lines of pre-tokenized text);
        ``options`` are :meth:`parse`'s but ``constraints``.  When ``data``
        raises, the sentences read before it are yielded first."""
        from .corpus import DEFAULT_CHUNK_SIZE, pipe

        return pipe(self, data, processes=processes, chunk_size=chunk_size or DEFAULT_CHUNK_SIZE, **options)
