"""Parsing a corpus of any size: read, parse and write in chunks
(``kgparser parse``, :meth:`Parser.parse_file <kgparser.inference.parser.Parser.parse_file>`,
:meth:`Parser.pipe <kgparser.inference.parser.Parser.pipe>`).  What reads
the input (:class:`~kgparser.io.reader.Input`) and what parses a chunk (a
function handed down: ``parse(model, sentences)``, the parse sequence of
:mod:`~kgparser.inference.parsing` with the caller's options) come from
the caller; this module only chunks, parses in this process or in worker
processes, and writes.

The input is read as it is parsed, a chunk of ``chunk_size`` sentences at a
time (:data:`DEFAULT_CHUNK_SIZE`: enough for the decoder's batches of
sentences of similar length to fill), so memory holds a few chunks whatever
the input's size: CoNLL-U, pre-tokenized text and raw text, from a file,
``.gz`` or standard input.  A chunk never splits a sentence, and raw text is
tokenized as it is read whatever its layout (:class:`~kgparser.io.rawtext.RawReader`:
the same sentences whatever the pieces read), so the output is the same,
byte for byte, for every chunk size and number of processes.  With ``processes`` > 1 the chunks
are parsed by that many worker processes (:mod:`kgparser.inference.workers`) and
written back in input order.  The :class:`Engine` says what parses them: the
``local`` processes, or ``ray``: actors on a Ray cluster
(:mod:`kgparser.inference.ray_engine`), fed and read back by this process the
same way, so that reading, chunking, writing and counting stay here whatever
the engine, and the output is the same bytes.

The output stays safe: a file is written to a temporary file renamed over it
at the end (:func:`kgparser.io.atomic.atomic_open`), so an error, a dead worker
or Ctrl-C leaves no output file, or the previous one; a stream (standard
output, a pipe) has received the chunks parsed before the failure.  A
lenient read skips the sentences that cannot be read, counted with their
place (``FILE:LINE``), and with ``keep_skipped`` writes them back unchanged
where they were.  Constraints (``--constraints``) are the one exception to
chunking: their records name sentences by their place in the whole input,
which is therefore parsed as one piece, in this process, whatever the engine.

Warnings from the chunks are shown once per kind; the long-sentence warning
comes once, at the end, with the count for the whole input.
"""
from __future__ import annotations

import functools
import itertools
import os
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterable, Iterator

from ..errors import KgparserError
from ..io.conllu import Sentence
from ..io.progress import Progress, parse_line
from ..io.reader import Input
from .decoding_constraints import ConstraintReport
from .tags import TagReport

#: parses a chunk's sentences in place with a model: :func:`~kgparser.inference.parsing.parse_sentences`
#: with the caller's options, which returns a :class:`~kgparser.inference.parsing.Parsed`
ParseFunction = Callable[[Any, list], Any]

#: what may parse the chunks (:class:`Engine`)
ENGINES = ("local", "ray")
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
    after 5M: docs/history/corpus-parsing.md, "Parsing a corpus"); 0 would compile every
    kernel again at each batch (9% slower)."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(KERNEL_CACHE_CAPACITY))




@dataclass
class ParseSummary:
    """What a streamed parse did: sentences and words parsed, the sentences a
    lenient read skipped (their :class:`~kgparser.io.conllu.ConlluError`), the
    tags (:class:`~kgparser.inference.tags.TagReport`), the constraints of
    an input parsed in one piece, and the sentences longer than the longest
    training sentence (their count, the longest one's length)."""

    sentences: int = 0
    words: int = 0
    skipped: list = field(default_factory=list)
    tag_report: TagReport | None = None
    constraint_report: ConstraintReport = field(default_factory=ConstraintReport)
    long_sentences: int = 0
    longest: int = 0

    def add(self, result: ChunkResult) -> None:
        parsed = result.parsed
        self.sentences += result.sentences
        self.words += result.words
        self.long_sentences += parsed.long_sentences
        self.longest = max(self.longest, parsed.longest)
        self.constraint_report = parsed.constraint_report
        self.tag_report = parsed.tag_report if self.tag_report is None else self.tag_report.merged(parsed.tag_report)

    @classmethod
    def of(cls, sentences, tag_report: TagReport) -> ParseSummary:
        """The summary of sentences parsed in one piece (a SentenceList keeps its skipped)."""
        return cls(len(sentences), sum(s.n for s in sentences), list(getattr(sentences, "skipped", [])), tag_report)


@dataclass
class ChunkResult:
    """A parsed chunk: its CoNLL-U text (``as_text``) or its parsed sentences,
    with its counts, what the parse sequence reported and the warnings raised."""

    output: str | list
    sentences: int
    words: int
    parsed: Any
    warnings: list


def parse_chunk(model, items: list, *, parse: ParseFunction, as_text: bool) -> ChunkResult:
    """Parse the sentences of ``items`` (Sentences, and SkippedBlocks kept in
    their place) with ``parse``; the warnings raised are recorded."""
    sentences = [item for item in items if isinstance(item, Sentence)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parsed = parse(model, sentences)
    output = "".join(item.to_conllu() for item in items) if as_text else items
    return ChunkResult(output, len(sentences), sum(s.n for s in sentences), parsed,
                       [(w.category, str(w.message)) for w in caught])


@dataclass(frozen=True)
class Engine:
    """What parses the chunks, one of :data:`ENGINES`: ``local``, this process
    or ``processes`` worker processes (:class:`~kgparser.inference.workers.ProcessPool`);
    ``ray``, ``processes`` actors (:class:`~kgparser.inference.ray_engine.RayPool`)
    on the Ray cluster at ``address`` (default: ``RAY_ADDRESS``, else a local
    instance for the run).  ``device``: where the workers hold the model
    (default: where the model is), so that a model loaded on this machine's
    CPU can be parsed with on the cluster's GPUs."""

    kind: str = "local"
    address: str | None = None
    device: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ENGINES:
            raise KgparserError(f"engine: expected one of {', '.join(ENGINES)}, got {self.kind!r}")

    @classmethod
    def of(cls, engine: str | Engine) -> Engine:
        """``engine``, or the engine of that kind with its defaults."""
        return engine if isinstance(engine, Engine) else cls(engine)

    def pool(self, model, processes: int, work: Callable):
        """The workers of this engine, as a context manager whose ``map(chunks)``
        gives ``work(model, chunk)`` of each chunk in order."""
        from .workers import ProcessPool, model_bytes

        device = self.device or str(next(model.network.parameters()).device)
        if self.kind == "ray":
            from .ray_engine import RayPool

            return RayPool(processes, model_bytes(model), device, work, address=self.address)
        return ProcessPool(processes, model_bytes(model), device, work)


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


def _results(model, chunks: Iterable[list], processes: int, parse: ParseFunction,
             as_text: bool, engine: Engine) -> Iterator[ChunkResult]:
    """The :class:`ChunkResult` of each chunk, in order, from this process or
    ``processes`` workers of ``engine``."""
    work = functools.partial(parse_chunk, parse=parse, as_text=as_text)
    if processes <= 1 and engine.kind == "local":
        yield from (work(model, chunk) for chunk in chunks)
        return
    with engine.pool(model, processes, work) as pool:
        yield from pool.map(chunks)


class _Warnings:
    """Shows the chunks' warnings, the first of each kind only."""

    def __init__(self) -> None:
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


def _streamed(model, source: Input, parse: ParseFunction, *, processes: int, chunk_size: int | None,
              as_text: bool, summary: ParseSummary, progress: Progress,
              engine: str | Engine = "local") -> Iterator[ChunkResult]:
    """The results of the chunks of ``source``, counted into ``summary`` and shown by ``progress``."""
    _check(processes, chunk_size)
    shown = _Warnings()
    try:
        for result in _results(model, chunked(source.items(), chunk_size), processes, parse, as_text,
                               Engine.of(engine)):
            summary.add(result)
            shown.show(result.warnings)
            progress.update()
            yield result
    finally:
        progress.close()


def parse_file(model, parse: ParseFunction, source: Input, target, *, processes: int = 1,
               chunk_size: int | None = DEFAULT_CHUNK_SIZE, progress: bool = False,
               engine: str | Engine = "local") -> ParseSummary:
    """Parse ``source`` into ``target`` (a path, ``.gz`` for gzip, ``-`` or an
    open text file) chunk by chunk (see the module docstring) with ``processes``
    workers of ``engine``; ``progress``: show the progress line on standard error."""
    summary = ParseSummary(skipped=source.skipped)
    shown = Progress(lambda seconds: parse_line(summary.sentences, summary.words, seconds, source.done_share()),
                     progress)
    with _output(target) as handle:
        for result in _streamed(model, source, parse, processes=processes, chunk_size=chunk_size, as_text=True,
                                summary=summary, progress=shown, engine=engine):
            assert isinstance(result.output, str)  # parsed as_text
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


def pipe(model, parse: ParseFunction, source: Input, summary: ParseSummary, *, processes: int = 1,
         chunk_size: int = DEFAULT_CHUNK_SIZE) -> Iterator[Sentence]:
    """The parsed sentences of ``source``, yielded as they are parsed,
    ``chunk_size`` at a time, counted into ``summary``."""
    for result in _streamed(model, source, parse, processes=processes, chunk_size=chunk_size, as_text=False,
                            summary=summary, progress=Progress(str, enabled=False)):
        assert isinstance(result.output, list)  # parsed not as_text
        yield from result.output
