"""Parsing a corpus of any size: read, parse and write in chunks
(``kgparser parse``, :meth:`Parser.parse_file <kgparser.inference.parser.Parser.parse_file>`,
:meth:`Parser.pipe <kgparser.inference.parser.Parser.pipe>`).

The input is read as it is parsed, a chunk of ``chunk_size`` sentences at a
time (:data:`DEFAULT_CHUNK_SIZE`: enough for the decoder's batches of
sentences of similar length to fill), so memory holds a few chunks whatever
the input's size: CoNLL-U, pre-tokenized text and raw text, from a file,
``.gz`` or standard input.  A chunk never splits a sentence, and raw text is
tokenized as it is read whatever its layout (:class:`~kgparser.rawtext.RawReader`:
the same sentences whatever the pieces read), so the output is the same,
byte for byte, for every chunk size and number of processes.  With ``processes`` > 1 the chunks
are parsed by that many worker processes (:mod:`kgparser.inference.workers`) and
written back in input order.

The output stays safe: a file is written to a temporary file renamed over it
at the end (:func:`kgparser.io.atomic.atomic_open`), so an error, a dead worker
or Ctrl-C leaves no output file, or the previous one; a stream (standard
output, a pipe) has received the chunks parsed before the failure.  A
lenient read skips the sentences that cannot be read, counted with their
place (``FILE:LINE``), and with ``keep_skipped`` writes them back unchanged
where they were.  Constraints (``--constraints``) are the one exception to
chunking: their records name sentences by their place in the whole input,
which is therefore parsed as one piece, in this process.

Warnings from the chunks are shown once per kind; the long-sentence warning
comes once, at the end, with the count for the whole input.
"""
from __future__ import annotations

import functools
import itertools
import os
import stat
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable, Iterator

from ..io.conllu import ConlluError, Sentence, SkippedBlock, iter_sentences, opened_text, sentences_from_tokens
from ..errors import KgparserError
from ..io.plaintext import is_text_format, tokenized_sentences
from ..io.progress import Progress
from .tags import TagReport

#: sentences per chunk: a few thousand keep the decoder's length-sorted batches full
DEFAULT_CHUNK_SIZE = 2000
#: compiled LSTM kernels oneDNN keeps (one per batch shape met; its default is 1,024)
KERNEL_CACHE_CAPACITY = 256


def bound_kernel_cache() -> None:
    """Keep at most :data:`KERNEL_CACHE_CAPACITY` of the kernels oneDNN compiles
    for torch's LSTMs on the CPU, unless ``ONEDNN_PRIMITIVE_CACHE_CAPACITY``
    says otherwise; to be called before the process parses anything.

    oneDNN compiles a kernel for each batch shape (sentences x words) it meets
    and keeps 1,024 of them: the process grew by some 300 MB over millions of
    words (RSS 397 MB after 100k words, 631 MB after 5M) as more shapes turned
    up.  The decoder now pads its batches to a few dozen widths
    (:func:`~kgparser.model.inputs.rounded_width`) and computes character
    vectors with torch's own kernels, so the shapes met stay under this bound
    and are all met early (350 MB after 100k words, 376 MB after 1M, 367 MB
    after 5M: BENCHMARKS.md, "Parsing a corpus"); 0 would compile every
    kernel again at each batch (9% slower)."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(KERNEL_CACHE_CAPACITY))


@dataclass
class ParseSummary:
    """What a streamed parse did: sentences and words parsed, the sentences a
    lenient read skipped (their :class:`~kgparser.io.conllu.ConlluError`), and
    the tags (:class:`~kgparser.inference.tags.TagReport`)."""

    sentences: int = 0
    words: int = 0
    skipped: list = field(default_factory=list)
    tag_report: TagReport | None = None
    #: sentences longer than the longest training sentence, and the longest of them
    long_sentences: int = 0
    longest: int = 0

    def add(self, result: "ChunkResult") -> None:
        self.sentences += result.sentences
        self.words += result.words
        self.long_sentences += result.long_sentences
        self.longest = max(self.longest, result.longest)
        self.tag_report = result.tag_report if self.tag_report is None else self.tag_report.merged(result.tag_report)

    @classmethod
    def of(cls, sentences, tag_report: TagReport) -> "ParseSummary":
        """The summary of sentences parsed in one piece (a SentenceList keeps its skipped)."""
        return cls(len(sentences), sum(s.n for s in sentences), list(getattr(sentences, "skipped", [])), tag_report)


@dataclass
class ChunkResult:
    """A parsed chunk: its CoNLL-U text (``as_text``) or its parsed sentences, with counts."""

    output: str | list
    sentences: int
    words: int
    tag_report: TagReport
    warnings: list
    long_sentences: int = 0
    longest: int = 0


def parse_chunk(parser, items: list, *, options: dict, as_text: bool) -> ChunkResult:
    """Parse the sentences of ``items`` (Sentences, and SkippedBlocks kept in
    their place) with :meth:`Parser.parse`'s ``options``; the warnings raised
    are recorded (the long-sentence one counted instead)."""
    from .parser import LongSentenceWarning

    sentences = [item for item in items if isinstance(item, Sentence)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=LongSentenceWarning)
        parsed = iter(parser.parse(sentences, **options))
    merged = [next(parsed) if isinstance(item, Sentence) else item for item in items]
    trained = parser.model.max_train_length
    long = [s.n for s in sentences if trained is not None and s.n > trained]
    output = "".join(item.to_conllu() for item in merged) if as_text else merged
    return ChunkResult(output, len(sentences), sum(s.n for s in sentences), parser.tag_report,
                       [(w.category, str(w.message)) for w in caught], len(long), max(long, default=0))


def chunked(items: Iterable, size: int | None) -> Iterator[list]:
    """Lists of ``size`` items (all of them when ``size`` is None).  When
    ``items`` raises, the items read before are yielded first."""
    iterator = iter(items)
    while True:
        chunk: list = []
        try:
            chunk.extend(itertools.islice(iterator, size))
        except Exception:
            if chunk:
                yield chunk
            raise
        if not chunk:
            return
        yield chunk


class InputFile:
    """A file to parse (``-``: standard input; ``.gz`` decompressed), read as
    it is parsed: :meth:`items` gives its sentences in order (and, with
    ``keep_skipped``, a :class:`SkippedBlock` for each that cannot be read);
    :attr:`skipped` lists those a lenient read skipped."""

    def __init__(self, path: str | Path, input_format: str = "conllu", *, lenient: bool = False,
                 keep_skipped: bool = False, lang: str | None = None):
        is_text_format(input_format)  # an unknown format is an error before anything is read
        self.path, self.input_format, self.lang = path, input_format, lang
        self.lenient, self.keep_skipped = lenient or keep_skipped, keep_skipped
        self.skipped: list[ConlluError] = []
        self.size = _file_size(path)
        self._handle: IO[str] | None = None

    def items(self) -> Iterator:
        with opened_text(self.path) as (handle, name):
            self._handle = handle
            if self.input_format == "conllu":
                yield from self._conllu(handle, name)
            elif self.input_format == "text":
                yield from tokenized_sentences(handle, name)
            else:
                yield from self._raw(handle, name)

    def _conllu(self, handle, name: str) -> Iterator:
        seen = 0
        for sentence in iter_sentences(handle, name, self.lenient, False, self.skipped):
            yield from self._skipped_since(seen)
            seen = len(self.skipped)
            yield sentence
        yield from self._skipped_since(seen)

    def _skipped_since(self, seen: int) -> Iterator[SkippedBlock]:
        if self.keep_skipped:
            for error in self.skipped[seen:]:
                yield SkippedBlock(error.lines)

    def _raw(self, handle, name: str) -> Iterator[Sentence]:
        from ..rawtext import stream_raw

        yield from stream_raw(handle, self.lang, name)

    def done_share(self) -> float | None:
        """The share of the file read so far (of its bytes on disk, compressed
        for ``.gz``), or None when its size is unknown."""
        if not self.size or self._handle is None:
            return None
        buffer = self._handle.buffer
        raw = getattr(buffer, "fileobj", buffer)  # a .gz file's compressed bytes
        try:
            return raw.tell() / self.size
        except (OSError, ValueError):
            return None


def _file_size(path: str | Path) -> int | None:
    if str(path) == "-":
        return None
    try:
        status = os.stat(path)
    except OSError:
        return None  # opening it will say why
    return status.st_size if stat.S_ISREG(status.st_mode) else None


def _sentences_of(data: Iterable, input_format: str) -> Iterator[Sentence]:
    """The sentences of :meth:`Parser.pipe`'s ``data``: Sentences or token lists,
    or lines of pre-tokenized text; numbered over the whole iterable."""
    if is_text_format(input_format):
        yield from tokenized_sentences(data, "<text>")
        return
    if input_format == "raw":
        raise KgparserError("pipe: raw text is parsed from a file (parse_file, kgparser parse --input-format raw)")
    for number, item in enumerate(data, start=1):
        yield item if isinstance(item, Sentence) else sentences_from_tokens([item], start=number)[0]


def _results(parser, chunks: Iterable[list], processes: int, options: dict, as_text: bool) -> Iterator[ChunkResult]:
    """The :class:`ChunkResult` of each chunk, in order, from this process or ``processes`` workers."""
    work = functools.partial(parse_chunk, options=options, as_text=as_text)
    if processes <= 1:
        yield from (work(parser, chunk) for chunk in chunks)
        return
    from .workers import ProcessPool, model_bytes

    device = str(next(parser.model.network.parameters()).device)
    with ProcessPool(processes, model_bytes(parser.model), device, parser.batch_size, work) as pool:
        yield from pool.map(chunks)


class _Warnings:
    """Shows the chunks' warnings, the first of each kind only."""

    def __init__(self):
        self.shown: set = set()

    def show(self, caught: list) -> None:
        for category, message in caught:
            if category not in self.shown:
                self.shown.add(category)
                warnings.warn(message, category, stacklevel=4)


def _check(processes: int, chunk_size: int | None) -> None:
    if processes < 1:
        raise KgparserError(f"processes: must be >= 1, got {processes}")
    if chunk_size is not None and chunk_size < 1:
        raise KgparserError(f"chunk size: must be >= 1, got {chunk_size}")


def _streamed(parser, chunks: Iterable[list], processes: int, options: dict, as_text: bool,
              summary: ParseSummary, progress: Progress) -> Iterator[ChunkResult]:
    """The results of the chunks, counted into ``summary`` and shown by ``progress``;
    at the end, the long-sentence warning and ``parser.tag_report``."""
    shown = _Warnings()
    try:
        for result in _results(parser, chunks, processes, options, as_text):
            summary.add(result)
            shown.show(result.warnings)
            progress.update(summary.sentences, summary.words)
            yield result
    finally:
        progress.close()
    if summary.tag_report is not None:
        parser.tag_report = summary.tag_report
    if summary.long_sentences:
        from .parser import warn_long_sentences

        warn_long_sentences(summary.long_sentences, summary.longest, parser.model.max_train_length, stacklevel=4)


def parse_file(parser, source: str | Path, target, *, keep_skipped: bool = False, lenient: bool = False,
               input_format: str = "conllu", lang: str | None = None, processes: int = 1,
               chunk_size: int | None = DEFAULT_CHUNK_SIZE, progress: bool = False, **options) -> ParseSummary:
    """Parse the file ``source`` into ``target`` (a path, ``.gz`` for gzip, ``-``
    or an open text file) chunk by chunk (see the module docstring);
    ``options`` are :meth:`Parser.parse`'s.  ``progress``: show the progress
    line on standard error."""
    _check(processes, chunk_size)
    if options.get("constraints") is not None:
        processes, chunk_size = 1, None
    if input_format == "raw":
        lang = lang or parser.lang
    reader = InputFile(source, input_format, lenient=lenient, keep_skipped=keep_skipped, lang=lang)
    summary = ParseSummary(skipped=reader.skipped)
    shown = Progress(progress, reader.done_share)
    with _output(target) as handle:
        for result in _streamed(parser, chunked(reader.items(), chunk_size), processes, options, True, summary,
                                shown):
            handle.write(result.output)
    return summary


@contextmanager
def _output(target) -> Iterator[IO[str]]:
    from ..io.atomic import STANDARD_OUTPUT, atomic_open, stream_errors

    if hasattr(target, "write"):
        name = STANDARD_OUTPUT if target is sys.stdout else getattr(target, "name", "the output")
        with stream_errors(name):
            yield target
        return
    with atomic_open(target) as handle:
        yield handle


def pipe(parser, data: Iterable, *, processes: int = 1, chunk_size: int = DEFAULT_CHUNK_SIZE,
         input_format: str = "conllu", **options) -> Iterator[Sentence]:
    """Parsed copies of the sentences of ``data``, yielded as they are parsed,
    ``chunk_size`` at a time (see :meth:`Parser.pipe`)."""
    _check(processes, chunk_size)
    if options.get("constraints") is not None:
        raise KgparserError("pipe: constraints name sentences of a whole input; use Parser.parse")
    summary = ParseSummary()
    chunks = chunked(_sentences_of(data, input_format), chunk_size)
    for result in _streamed(parser, chunks, processes, options, False, summary, Progress(False)):
        yield from result.output
