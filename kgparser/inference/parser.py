"""Inference: load a checkpoint and parse sentences, batched.

    >>> from kgparser import Parser
    >>> parser = Parser.load("runs/quickstart/best.pt")          # or an installed model's name
    >>> parser.parse([["The", "dog", "barks", "."]])            # plain forms
    >>> parser.parse([[("The", "DET"), ("dog", "NOUN")]])        # (form, upos)
    >>> parser.parse("in.conllu")                                 # a CoNLL-U file

The one front door for parsing: :meth:`Parser.parse` reads the input with
the one reader (:mod:`kgparser.io.reader`) and runs the parse sequence
(:mod:`kgparser.inference.parsing`: the tags, the constraints, batched greedy
decoding into valid UD trees); :meth:`Parser.parse_file` and
:meth:`Parser.pipe` hand the same sequence to the corpus parser
(:mod:`kgparser.inference.corpus`), which runs it chunk by chunk, in this
process or in worker processes.  Checkpoints are read by
:meth:`kgparser.model.Model.load`.

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

import functools
import os
import warnings
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Sequence

import torch

from ..errors import KgparserError
from ..io.conllu import Sentence, SentenceList
from ..io.reader import Input, InputData, RawTokenizer, read
from ..model import Model
from ..model.installed import resolve_model
from ..transitions import AnySystem
from .corpus import DEFAULT_CHUNK_SIZE, Engine, ParseFunction, ParseSummary, parse_file, pipe
from .decode import DecodingError, NonFiniteScores
from .decoding_constraints import ConstraintReport, resolve_constraints
from .options import checked_batch_size, checked_root_choice
from .parsing import LongSentenceWarning, Parsed, parse_sentences, warn_long_sentences
from .tags import TagReport

__all__ = ["DecodingError", "LongSentenceWarning", "NonFiniteScores", "Parser", "RulesFallback"]

#: what tokenizes raw text: ``auto`` the model's learned tokenizer where it has one, else spaCy's
#: rules (with a :class:`RulesFallback` warning); ``model`` only the model's; ``rules`` spaCy's rules
TOKENIZERS = ("auto", "model", "rules")

#: what ``constraints`` may be (see the module docstring): a JSON-lines file, ``"misc"``,
#: or one entry per sentence
ConstraintsInput = str | os.PathLike[str] | Iterable[Any]


class RulesFallback(UserWarning):
    """Raw text is tokenized by spaCy's rules because the model has no tokenizer of its own."""


class Parser:
    """A trained parser: ``Parser.load(path).parse(...)``."""

    def __init__(self, model: Model, batch_size: int = 64) -> None:
        self.model = model
        self.batch_size = checked_batch_size(batch_size)
        self.constraint_report = ConstraintReport()
        self.tag_report = TagReport()

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu", batch_size: int = 64,
             threads: int | None = None, encoder: str | Path | None = None,
             quantize: bool | None = None) -> Parser:
        """The parser of checkpoint ``path``, or of the installed model package of
        that name (``kgparser package``: :func:`~kgparser.model.installed.resolve_model`);
        ``encoder``: where the pretrained encoder of a model that has one is now (a
        folder or hub name), if it has moved since training (it must be the same
        encoder: its fingerprint is checked); a packaged model's comes from its
        package (:mod:`kgparser.model.packaged_encoder`) unless given."""
        if threads:
            torch.set_num_threads(threads)
        files = resolve_model(path)
        model = Model.load(files.checkpoint, encoder=files.encoder() if encoder is None else encoder,
                           quantize=quantize)
        return cls(model.to(device), batch_size)

    @property
    def system(self) -> AnySystem:
        return self.model.system

    @property
    def lang(self) -> str | None:
        """The language the model was trained on (:func:`kgparser.tokenize.rules.model_language`), or None."""
        from ..tokenize.rules import model_language

        return model_language(self.model.config)

    def parse(self, data: InputData, *, constraints: ConstraintsInput | None = None, on_bad_constraints: str = "error",
              lenient: bool = False, tags: str = "auto", input_format: str = "conllu", root_choice: str | None = None,
              lang: str | None = None, tokenizer: str = "auto") -> SentenceList:
        """Parse a CoNLL-U path, Sentences, or lists of forms / (form, upos) tokens;
        with ``input_format="text"``, a pre-tokenized text file or a list of lines
        (one sentence per line, tokens separated by spaces: :mod:`kgparser.io.plaintext`);
        with ``input_format="raw"``, raw text (a str) or a raw text file (a Path),
        split into sentences, tokens and words by the model's learned tokenizer
        (:mod:`kgparser.tokenize`) where it has one, else (or with
        ``tokenizer="rules"``) by spaCy's rules for ``lang`` (default
        :attr:`lang`: :mod:`kgparser.tokenize.rules`).

        Returns Sentences with HEAD and DEPREL set (copies: inputs are left unchanged);
        every other column and comment is kept.  ``constraints``: see the module
        docstring and :meth:`decoding_constraints`; what happened to them is in
        :attr:`constraint_report` afterwards.  A path read with ``lenient=True``
        gives a :class:`~kgparser.io.conllu.SentenceList` whose ``skipped`` lists
        the sentences that could not be read.  ``tags``: ``auto`` (the input's tags,
        the model's tagger where they are ``_``), ``input`` or ``predict``; predicted
        tags are written only where the input has ``_`` (:mod:`kgparser.inference.tags`,
        :attr:`tag_report` afterwards).  ``root_choice``: which loose word of a final
        state becomes the root (``scored``, ``first``, ``last``, ``multi``:
        :mod:`kgparser.inference.tree_repair`); default the model's ``decoding.root_choice``.
        """
        checked_root_choice(root_choice)
        sentences = read(data, input_format, lenient=lenient, raw=self._raw_tokenizer(input_format, lang, tokenizer))
        parsed = parse_sentences(self.model, sentences, batch_size=self.batch_size, tags=tags,
                                 constraints=constraints, on_bad_constraints=on_bad_constraints,
                                 root_choice=root_choice)
        self._report(parsed.tag_report, parsed.constraint_report, parsed)
        return sentences

    def _raw_tokenizer(self, input_format: str, lang: str | None, tokenizer: str) -> RawTokenizer | None:
        """What tokenizes raw input (None for the other formats, which need
        none): the model's learned tokenizer, or spaCy's rules for ``lang`` or
        the model's language, as ``tokenizer`` (:data:`TOKENIZERS`) says; a
        model without a tokenizer falls back to the rules with a
        :class:`RulesFallback` warning."""
        if tokenizer not in TOKENIZERS:
            raise KgparserError(f"tokenizer: {tokenizer!r} is not one of {', '.join(TOKENIZERS)}")
        if input_format != "raw":
            return None
        if tokenizer != "rules" and self.model.tokenizer is not None:
            from ..io.rawtext import stream_raw

            return functools.partial(stream_raw, segmenter=self.model.tokenizer)
        if tokenizer == "model":
            raise KgparserError("this model has no tokenizer (it was trained without tokenizer.enabled); "
                                "tokenize with spaCy's rules: --tokenizer rules (tokenizer='rules')")
        from ..tokenize.rules import read_rules

        language = lang or self.lang
        if tokenizer == "auto":
            warnings.warn(RulesFallback("this model has no tokenizer of its own (trained without "
                                        "tokenizer.enabled): raw text is tokenized by spaCy's rules"
                                        + (f" for {language!r}" if language else "")), stacklevel=3)
        return functools.partial(read_rules, lang=language)

    def _parse_function(self, options: dict[str, Any]) -> ParseFunction:
        """The parse sequence with :meth:`parse`'s ``options`` and this parser's
        batch size, for the corpus parser to run on each chunk."""
        checked_root_choice(options.get("root_choice"))
        return functools.partial(parse_sentences, batch_size=self.batch_size, **options)

    def _report(self, tag_report: TagReport | None, constraint_report: ConstraintReport,
                counts: Parsed | ParseSummary) -> None:
        """Keep what a parse reported; warn once about its sentences longer than
        any in training (unknown for checkpoints from before that was recorded)."""
        if tag_report is not None:
            self.tag_report = tag_report
        self.constraint_report = constraint_report
        if counts.long_sentences:
            trained = self.model.max_train_length
            assert trained is not None  # a sentence is counted long only against a known length
            warn_long_sentences(counts.long_sentences, counts.longest, trained, stacklevel=4)

    def render(self, data: InputData, picture_format: str = "html", **options: Any) -> str:
        """Parse ``data`` (``options`` are :meth:`parse`'s) and draw each sentence's
        tree: an HTML page or one SVG picture (:mod:`kgparser.io.render`)."""
        from ..io.render import render

        return render(self.parse(data, **options), picture_format)

    def decoding_constraints(self, sentences: Sequence[Sentence], constraints: ConstraintsInput,
                             on_bad_constraints: str = "error", *, defer_satisfiability: bool = False) -> list[Any]:
        """One decoding constraint (or ``None``) per sentence from ``constraints``
        (:func:`~kgparser.inference.decoding_constraints.resolve_constraints`);
        what became of them is in :attr:`constraint_report` afterwards."""
        entries, self.constraint_report = resolve_constraints(self.system, sentences, constraints,
                                                              on_bad_constraints,
                                                              defer_satisfiability=defer_satisfiability)
        return entries

    def parse_file(self, source: str | Path, target: str | Path | IO[str], *, keep_skipped: bool = False,
                   output_format: str = "conllu", processes: int = 1, chunk_size: int | None = None,
                   engine: str | Engine = "local",
                   progress: bool = False, lenient: bool = False, input_format: str = "conllu",
                   lang: str | None = None, tokenizer: str = "auto", **options: Any) -> ParseSummary:
        """Parse a file into ``target`` (a path, ``.gz`` for gzip, ``-`` or an
        open text file) and return a :class:`~kgparser.inference.corpus.ParseSummary`
        (sentences, words, ``skipped``, ``tag_report``); ``options`` are
        :meth:`parse`'s (``constraints``, ``on_bad_constraints``, ``tags``,
        ``root_choice``), as are ``lenient``, ``input_format``, ``lang`` and ``tokenizer``.  CoNLL-U output
        is streamed: read, parsed and written ``chunk_size`` sentences at a time
        (default :data:`~kgparser.inference.corpus.DEFAULT_CHUNK_SIZE`), by ``processes``
        worker processes, in flat memory, with a progress line on standard error
        if ``progress`` (:mod:`kgparser.inference.corpus`).  ``engine``: what
        parses the chunks: ``"local"`` (this process or worker processes),
        ``"ray"`` (``processes`` Ray actors: :mod:`kgparser.inference.ray_engine`),
        or an :class:`~kgparser.inference.corpus.Engine` naming Ray's address and
        the actors' device; the output is the same.  ``output_format``:
        ``conllu``, or ``html`` / ``svg`` for pictures of the trees
        (:mod:`kgparser.io.render`; the whole input at once).  ``keep_skipped``
        reads leniently and writes each sentence that cannot be read back
        unchanged in its place, so that the output has as many sentences as the
        input (without it, a lenient parse leaves them out).  Constraints name
        sentences by their place in the whole input, which is then parsed as
        one piece, in this process, whatever the engine.  A file target is
        written whole or not at all: nothing is written when parsing fails,
        e.g. on a truncated ``.gz`` file, whose sentences read before the damage
        are not written as if they were the whole file."""
        from ..io.render import check_format, write_picture

        check_format(output_format)
        lenient = lenient or keep_skipped
        if output_format != "conllu":
            path = Path(source) if input_format == "raw" else source  # a file name, not the text itself
            sentences = self.parse(path, lenient=lenient, input_format=input_format, lang=lang, tokenizer=tokenizer,
                                   **options)
            write_picture(sentences, target, output_format)
            return ParseSummary.of(sentences, self.tag_report)
        if options.get("constraints") is not None:
            processes, chunk_size, engine = 1, None, "local"
        else:
            chunk_size = chunk_size or DEFAULT_CHUNK_SIZE
        reader = Input(Path(source), input_format, lenient=lenient, keep_skipped=keep_skipped,
                       raw=self._raw_tokenizer(input_format, lang, tokenizer))
        summary = parse_file(self.model, self._parse_function(options), reader, target, processes=processes,
                             chunk_size=chunk_size, progress=progress, engine=engine)
        self._report(summary.tag_report, summary.constraint_report, summary)
        return summary

    def pipe(self, data: InputData, *, processes: int = 1, chunk_size: int | None = None,
             input_format: str = "conllu", lang: str | None = None, tokenizer: str = "auto",
             **options: Any) -> Iterator[Sentence]:
        """Parse any iterable of sentences lazily: a generator of parsed copies,
        ``chunk_size`` sentences read and parsed at a time (default
        :data:`~kgparser.inference.corpus.DEFAULT_CHUNK_SIZE`), by ``processes``
        worker processes, in input order.  ``data``: Sentences or token lists as for
        :meth:`parse` (``input_format="text"``: lines of pre-tokenized text;
        ``"raw"``: a text, ``lang`` and ``tokenizer`` as for :meth:`parse`); ``options`` are
        :meth:`parse`'s but ``constraints``.
        When ``data`` raises, the sentences read before it are yielded first."""
        if options.get("constraints") is not None:
            raise KgparserError("pipe: constraints name sentences of a whole input; use Parser.parse")
        parse = self._parse_function(options)
        summary = ParseSummary()
        reader = Input(data, input_format, raw=self._raw_tokenizer(input_format, lang, tokenizer))
        yield from pipe(self.model, parse, reader, summary, processes=processes,
                        chunk_size=chunk_size or DEFAULT_CHUNK_SIZE)
        self._report(summary.tag_report, summary.constraint_report, summary)

    def parse_dataset(self, dataset: Any, *, input_format: str = "text", column: str = "text",
                      output: str = "conllu", processes: int = 1, device: str | None = None,
                      lang: str | None = None, tokenizer: str = "auto", **options: Any) -> Any:
        """Parse a Ray Dataset: a Dataset of the parsed sentences of the rows'
        ``column`` (pre-tokenized text, raw text or CoNLL-U, as ``input_format``
        says; ``lang`` and ``tokenizer`` as for :meth:`parse`), one row per
        sentence, with the other columns of its row and its CoNLL-U
        (``output="conllu"``) or a record (``"records"``), parsed by
        ``processes`` Ray actors holding this model on ``device`` (default: where
        it is): :func:`kgparser.inference.ray_dataset.parse_dataset`.  ``options``
        are :meth:`parse`'s but ``constraints``."""
        from .ray_dataset import parse_dataset

        if options.get("constraints") is not None:
            raise KgparserError("parse_dataset: constraints name sentences of a whole input; use Parser.parse")
        return parse_dataset(dataset, self.model, self._parse_function(options), input_format=input_format,
                             column=column, output=output, processes=processes, device=device,
                             raw=self._raw_tokenizer(input_format, lang, tokenizer))
