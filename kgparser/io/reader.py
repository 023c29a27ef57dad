"""The one reader: every input a parse takes becomes a stream of sentences here.

:class:`Input` reads a file (a path; ``-`` is standard input, ``.gz`` is
decompressed), an open text stream (read as a file's text: CoNLL-U text in
memory, ``io.StringIO(text)``) or data in memory, in one of the :data:`INPUT_FORMATS`:

``conllu``
    CoNLL-U (:mod:`~kgparser.io.conllu`); in memory, Sentences (copied, so
    the caller's stay as they were) or lists of forms or ``(form, upos)``
    pairs (:func:`~kgparser.io.conllu.sentences_from_tokens`).
``text``
    Pre-tokenized text, one sentence per line (:mod:`~kgparser.io.plaintext`);
    in memory, an iterable of lines.
``raw``
    Running text; in memory, the text itself (a str).  Raw text is tokenized
    by the function the caller hands down (``raw``: the model's tokenizer or
    spaCy's rules, :mod:`kgparser.tokenize.rules`), which reads an open text stream.

The sentences come as they are read, so a corpus of any size is read in
flat memory (:mod:`kgparser.inference.corpus` parses them chunk by chunk);
:func:`read` gives them all at once.  A lenient read of CoNLL-U skips the
sentences that cannot be read, listed in :attr:`Input.skipped` (each a
:class:`~kgparser.io.conllu.ConlluError` with its place), and with
``keep_skipped`` gives a :class:`~kgparser.io.conllu.SkippedBlock` for each
in its place.
"""
from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator, Sequence, TextIO, cast

from ..errors import KgparserError
from .conllu import (
    ConlluError,
    Sentence,
    SentenceList,
    SkippedBlock,
    TokenError,
    iter_sentences,
    opened_text,
    sentences_from_tokens,
)
from .plaintext import tokenized_sentences

INPUT_FORMATS = ("conllu", "text", "raw")

#: what tokenizes raw text: an open text stream and its name for messages in, sentences out
RawTokenizer = Callable[[IO[str], str], Iterator[Sentence]]
#: a file to read: a path, ``-`` for standard input
FilePath = str | os.PathLike[str]
#: a sentence given as a list of forms or of ``(form, upos)`` pairs (:func:`~kgparser.io.conllu.sentences_from_tokens`)
TokenList = Sequence[str] | Sequence[tuple[str, str]]
#: what :class:`Input` reads: a file, raw text (a str), lines of text, or Sentences and token lists
InputData = FilePath | Iterable[str] | Iterable[Sentence | TokenList]


def check_input_format(input_format: str) -> str:
    """``input_format`` if it is one of :data:`INPUT_FORMATS`, else a one-line error."""
    if input_format not in INPUT_FORMATS:
        raise KgparserError(f"input format: expected one of {', '.join(INPUT_FORMATS)}, got {input_format!r}")
    return input_format


class Input:
    """``data`` to parse, in ``input_format`` (see the module docstring).
    ``data`` names a file when it is a :class:`os.PathLike`, or a str in the
    formats but ``raw`` (where a str is the text itself).  ``raw``: the raw-text
    tokenizer, needed for ``raw`` input."""

    def __init__(self, data: InputData, input_format: str = "conllu", *, lenient: bool = False,
                 keep_skipped: bool = False, raw: RawTokenizer | None = None):
        self.data, self.input_format = data, check_input_format(input_format)
        self.lenient, self.keep_skipped = lenient or keep_skipped, keep_skipped
        self.raw = raw
        self.is_file = isinstance(data, os.PathLike) or (isinstance(data, str) and input_format != "raw")
        self.skipped: list[ConlluError] = []
        self.size = _file_size(cast(FilePath, data)) if self.is_file else None
        self._handle: IO[str] | None = None

    def items(self) -> Iterator[Sentence | SkippedBlock]:
        """The sentences, in order (and the skipped ones' blocks, with ``keep_skipped``)."""
        if not self.is_file:
            yield from self._in_memory()
            return
        # a file: an os.PathLike or a str (opened_text takes any os.PathLike, though it says str | Path)
        with opened_text(cast(str | Path, self.data)) as (handle, name):
            self._handle = handle
            yield from self._read(handle, name)

    def _read(self, handle: IO[str], name: str) -> Iterator[Sentence | SkippedBlock]:
        if self.input_format == "conllu":
            yield from self._conllu(handle, name)
        elif self.input_format == "text":
            yield from tokenized_sentences(handle, name)
        else:
            yield from self._raw_tokenizer()(handle, name)

    def _in_memory(self) -> Iterator[Sentence | SkippedBlock]:
        if isinstance(self.data, io.TextIOBase):  # an open text stream: read as a file is
            yield from self._read(cast(IO[str], self.data), getattr(self.data, "name", "<text>"))
        elif self.input_format == "raw":
            if not isinstance(self.data, str):
                raise KgparserError(f"raw text: expected the text (a str) or a file path, "
                                    f"got {type(self.data).__name__}")
            yield from self._raw_tokenizer()(io.StringIO(self.data), "<text>")
        elif self.input_format == "text":
            yield from tokenized_sentences(cast(Iterable[str], self.data), "<text>")  # lines, in this format
        else:
            yield from _given_sentences(self.data)

    def _raw_tokenizer(self) -> RawTokenizer:
        if self.raw is None:
            raise KgparserError("raw text: no tokenizer was given to read it")
        return self.raw

    def _conllu(self, handle: IO[str], name: str) -> Iterator[Sentence | SkippedBlock]:
        seen = 0
        for sentence in iter_sentences(handle, name, self.lenient, False, self.skipped):
            yield from self._skipped_since(seen)
            seen = len(self.skipped)
            yield sentence
        yield from self._skipped_since(seen)

    def _skipped_since(self, seen: int) -> Iterator[SkippedBlock]:
        if self.keep_skipped:
            for error in self.skipped[seen:]:
                yield SkippedBlock(cast(list[str], error.lines))  # a skipped sentence's error has its lines

    def done_share(self) -> float | None:
        """The share of the file read so far (of its bytes on disk, compressed
        for ``.gz``), or None when its size is unknown."""
        if not self.size or self._handle is None:
            return None
        buffer = cast(TextIO, self._handle).buffer  # opened_text's handle is a text wrapper (it says IO[str])
        raw: IO[bytes] = getattr(buffer, "fileobj", buffer)  # a .gz file's compressed bytes
        try:
            return raw.tell() / self.size
        except (OSError, ValueError):
            return None


def read(data: InputData, input_format: str = "conllu", *, lenient: bool = False,
         raw: RawTokenizer | None = None) -> SentenceList:
    """All the sentences of ``data`` (see :class:`Input`), with the ones a lenient read skipped."""
    source = Input(data, input_format, lenient=lenient, raw=raw)
    # without ``keep_skipped`` the items are Sentences only
    return SentenceList(cast(Iterator[Sentence], source.items()), source.skipped)


def _given_sentences(data: object) -> Iterator[Sentence]:
    """Copies of given Sentences, or sentences of token lists, numbered from 1 in messages."""
    if not isinstance(data, Iterable):
        raise TokenError(f"expected a CoNLL-U path, Sentences or lists of tokens, got {type(data).__name__}")
    for number, item in enumerate(data, start=1):
        yield item.copy() if isinstance(item, Sentence) else sentences_from_tokens([item], start=number)[0]


def _file_size(path: FilePath) -> int | None:
    if str(path) == "-":
        return None
    try:
        status = os.stat(path)
    except OSError:
        return None  # opening it will say why
    return status.st_size if stat.S_ISREG(status.st_mode) else None
