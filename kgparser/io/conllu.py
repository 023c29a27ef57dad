"""Reading, validating and writing CoNLL-U (https://universaldependencies.org/format.html).

A :class:`Sentence` keeps the original lines of its block, so writing a sentence
back reproduces the input byte for byte (comments, multiword-token lines, empty
nodes, FEATS, DEPS, MISC...) except for the HEAD and DEPREL columns of the words
whose tree was replaced with :meth:`Sentence.set_tree`.  Only those columns are
ever rewritten; the enhanced DEPS column is left as it was.

Layout conventions (shared with :mod:`kgparser.transitions`): words are numbered
1..n and 0 is the root.  Word-level lists (``forms``, ``upos``, ``misc`` ...) have
length n, word i at index i-1; tree lists (``heads``, ``deprels``) have length
n+1 with a dummy entry at index 0 so that ``heads[d]`` is the head of word d
(-1 where HEAD is ``_``) and ``deprels[d]`` its label (None where ``_``).

Field grammar follows the :mod:`conllu` package (MISC is parsed with
``conllu.parser.parse_dict_value``, comments with
``conllu.parser.parse_comment_line``; FEATS is kept as its raw string); lines
are split on TAB only, because UD v2 allows spaces inside FORM and LEMMA.

Validation.  Every problem raises :class:`ConlluError` whose message reads
``FILE:LINE: reason``.  Checked: 10 TAB-separated non-empty columns; word IDs
1, 2, 3 ... without gaps or duplicates; multiword ranges ``a-b`` with a < b that
start at the next word and lie inside the sentence, not overlapping; empty nodes
``i.j`` placed after word i with j = 1, 2 ...; HEAD an integer in 0..n (or ``_``
when ``require_tree=False``); no word its own head and no cycle (reported as
"no word is attached to the root" when every word has a head but none is 0); a
sentence with at least one word; no control character in a word line but the
TABs between columns (:func:`control_character`); no white space in UPOS, XPOS,
FEATS, DEPREL and DEPS (UD allows it in FORM, LEMMA and MISC only), so that
every tag and label read can be written back.  With ``require_tree=True``
(the default, for treebanks) every word needs a HEAD and a DEPREL.  Several root children are
accepted because parser output may contain them.

Lenient reading.  With ``lenient=True`` a sentence with a problem is skipped
instead of raising: each skipped sentence is logged as a WARNING on the
``kgparser.io.conllu`` logger (printed on stderr when logging is not configured)
and its :class:`ConlluError` is appended to the ``skipped`` list of the result
(:class:`SentenceList`), so nothing is dropped silently; the error keeps the
sentence's lines and place, and :meth:`SentenceList.with_skipped` puts them
back for writing.  Lenience is per sentence: a file that cannot be read to its
end (a truncated or corrupt ``.gz``, invalid UTF-8) raises a
:class:`~kgparser.errors.KgparserError` naming it, in every mode, so that the
sentences before the damage are never taken for the whole file.

Files are UTF-8 (a leading byte-order mark is skipped); Windows line ends
(CRLF) are read as Unix ones, so the output has only LF; sentences are separated
by blank lines, so a file whose sentences are each followed by exactly one
blank line, as UD's are, is written back identically.
"""
from __future__ import annotations

import gzip
import io
import logging
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from conllu.parser import parse_comment_line, parse_dict_value

from ..errors import KgparserError
from ..transitions.trees import find_cycle

#: any character ``str.isspace`` counts (``\s`` of a str pattern is the same test), found
#: in one C call rather than a generator over the characters
_WHITESPACE = re.compile(r"\s")
#: C0 control characters but TAB, and the Unicode line separators: NUL ends a string in
#: C tools, the others break lines for Python's ``str.splitlines`` and other readers
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x85\u2028\u2029]")
#: what a LEMMA may not hold: a control character or a TAB
_CONTROL_OR_TAB = re.compile("[\x00-\x1f\x85\u2028\u2029]")
#: white space but the TABs between columns, which CoNLL-U allows in FORM, LEMMA and MISC only
_SPACE = re.compile(r"[^\S\t]")

__all__ = [
    "ConlluError",
    "Sentence",
    "SentenceList",
    "SkippedBlock",
    "TokenError",
    "control_character",
    "find_cycle",
    "iter_conllu",
    "iter_sentences",
    "parse_conllu",
    "read_conllu",
    "sample_data_path",
    "sentences_from_tokens",
    "write_conllu",
]

logger = logging.getLogger(__name__)

ID, FORM, LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL, DEPS, MISC = range(10)
COLUMN_NAMES = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
#: the columns without white space besides ID and HEAD (numbers, checked as such): the tags
#: and labels the parser writes back must be read as they can be written
_UNSPACED = (UPOS, XPOS, FEATS, DEPREL, DEPS)
DEFAULT_DEPREL = "dep"
SAMPLE_SPLITS = ("train", "dev", "test")


class ConlluError(KgparserError):
    """A CoNLL-U problem, located as ``source:line``."""

    def __init__(self, source: str, line: int, reason: str):
        super().__init__(f"{source}:{line}: {reason}")
        self.source = source
        self.line = line
        self.reason = reason
        #: for a sentence skipped by a lenient read: its original lines, and how
        #: many sentences were read before it (its place among them)
        self.lines: list[str] | None = None
        self.position: int | None = None


class TokenError(KgparserError, ValueError, TypeError):
    """A token list given to :func:`sentences_from_tokens` is not made of forms
    or ``(form, upos)`` pairs of text; a ValueError (and a TypeError, as a
    sentence given as one string always was)."""


def control_character(text: str) -> str | None:
    """The first character of ``text`` that no CoNLL-U field may hold (a
    control character but TAB, a Unicode line separator) as ``U+XXXX``, or None."""
    found = _CONTROL.search(text)
    return None if found is None else f"U+{ord(found.group()):04X}"


def _nullable(value: str) -> str | None:
    return None if value == "_" else value


def _is_number(text: str) -> bool:
    """A non-negative decimal integer without leading zeros, in ASCII digits."""
    return text.isascii() and text.isdigit() and (text[0] != "0" or len(text) == 1)


#: digits of the longest number read exactly; a longer one exceeds any sentence
_MAX_DIGITS = 18


def _number(text: str) -> int:
    """The value of a text :func:`_is_number` accepts, capped at 10**18: every
    check that compares it (a word ID, a HEAD within 0..n) then fails as for
    the exact value, without int()'s cost on thousands of digits and its
    ValueError beyond 4300."""
    return int(text) if len(text) <= _MAX_DIGITS else 10 ** _MAX_DIGITS


def _shown(text: str) -> str:
    """A column value for a message: a long one is cut, with its length."""
    return text if len(text) <= 2 * _MAX_DIGITS else f"{text[:_MAX_DIGITS]}... ({len(text)} characters)"


class Sentence:
    """One CoNLL-U sentence: its words' columns plus the original lines."""

    __slots__ = ("_lines", "_word_rows", "_misc", "source", "line", "n", "forms", "lemmas",
                 "upos", "xpos", "feats", "heads", "deprels")

    def __init__(self, lines: list[str], source: str = "<string>", line: int = 1, *,
                 require_tree: bool = True):
        """Parse and validate the lines of one block (no blank lines, no newlines);
        ``line`` is the file line number of ``lines[0]``."""
        self._lines = lines
        self.source = source
        self.line = line
        self._misc: list[dict | None] | None = None
        self._parse(require_tree)

    def _error(self, row: int, reason: str) -> ConlluError:
        return ConlluError(self.source, self.line + row, reason)

    def _parse(self, require_tree: bool) -> None:
        rows, words = self._word_lines()
        self.n = len(words)
        self._word_rows = [-1] + rows
        self.forms = [cols[FORM] for cols in words]
        self.lemmas = [cols[LEMMA] for cols in words]
        self.upos = [_nullable(cols[UPOS]) for cols in words]
        self.xpos = [_nullable(cols[XPOS]) for cols in words]
        self.feats = [_nullable(cols[FEATS]) for cols in words]
        deprels: list[str | None] = [None]
        deprels.extend(_nullable(cols[DEPREL]) for cols in words)
        self.deprels = deprels
        self.heads = self._parse_heads([cols[HEAD] for cols in words], require_tree)
        self._check_acyclic()

    def _word_lines(self) -> tuple[list[int], list[list[str]]]:
        """Rows and columns of the word lines, after checking every ID line's
        shape and the sequence of word, multiword-token and empty-node IDs."""
        rows: list[int] = []
        words: list[list[str]] = []
        range_end = 0          # last word covered by the latest multiword token
        last_range = (0, "")   # (row, ID) of the latest multiword token
        empty_index = 0        # j of the last empty node i.j after the current word
        for row, text in enumerate(self._lines):
            if text[:1] == "#":
                continue
            cols = self._columns(row, text)
            word_id = cols[ID]
            expected = len(words) + 1
            if _is_number(word_id):
                if _number(word_id) != expected:
                    raise self._error(row, self._bad_word_id(word_id, expected))
                rows.append(row)
                words.append(cols)
                empty_index = 0
            elif "-" in word_id:
                range_end = self._multiword_range(row, word_id, expected, range_end)
                last_range = (row, word_id)
            elif "." in word_id:
                empty_index = self._empty_node(row, word_id, expected - 1, empty_index)
            else:
                raise self._error(row, f"malformed ID {_shown(word_id)!r}")
        if not words:
            raise self._error(0, "sentence has no words")
        if range_end > len(words):
            row, word_id = last_range
            raise self._error(row, f"multiword token {_shown(word_id)} extends past the last word {len(words)}")
        return rows, words

    def _columns(self, row: int, text: str) -> list[str]:
        cols = text.split("\t")
        if len(cols) != 10:
            raise self._error(row, f"expected 10 TAB-separated columns, found {len(cols)}")
        if _CONTROL.search(text):  # one C call on every word line: the message is built only here
            column = next(name for name, col in zip(COLUMN_NAMES, cols) if control_character(col))
            raise self._error(row, f"{column} holds the control character {control_character(text)} "
                                   f"(not allowed in CoNLL-U)")
        if "" in cols:
            raise self._error(row, f"empty {COLUMN_NAMES[cols.index('')]} column (use '_')")
        # one C call on every word line; the columns are looked at only when it finds white
        # space, mostly in FORM, LEMMA or MISC, where it is allowed
        if _SPACE.search(text):
            for index in _UNSPACED:
                if _SPACE.search(cols[index]):
                    raise self._error(row, f"{COLUMN_NAMES[index]} {_shown(cols[index])!r} holds white space "
                                           f"(CoNLL-U allows it in FORM, LEMMA and MISC only)")
        return cols

    @staticmethod
    def _bad_word_id(word_id: str, expected: int) -> str:
        if _number(word_id) < expected:
            return f"duplicate or decreasing word ID {word_id}, expected {expected}"
        return f"word ID {_shown(word_id)} skips ahead, expected {expected}"

    def _multiword_range(self, row: int, word_id: str, next_word: int, previous_end: int) -> int:
        """Check a multiword-token ID ``a-b``; returns b."""
        start, _, end = word_id.partition("-")
        shown = _shown(word_id)
        if not (_is_number(start) and _is_number(end)) or start == "0" or _number(end) <= _number(start):
            raise self._error(row, f"malformed multiword token range {shown!r} (need a-b with 1 <= a < b)")
        if _number(start) != next_word:
            raise self._error(row, f"multiword token {shown} must start at the next word ID {next_word}")
        if _number(start) <= previous_end:
            raise self._error(row, f"multiword token {shown} overlaps the previous one ending at {previous_end}")
        return _number(end)

    def _empty_node(self, row: int, word_id: str, last_word: int, previous_index: int) -> int:
        """Check an empty-node ID ``i.j`` (i = last word read, j = previous j + 1); returns j."""
        major, _, minor = word_id.partition(".")
        if not (_is_number(major) and _is_number(minor)) or minor == "0":
            raise self._error(row, f"malformed empty node ID {_shown(word_id)!r} (need i.j with j >= 1)")
        if _number(major) != last_word or _number(minor) != previous_index + 1:
            raise self._error(row, f"empty node {_shown(word_id)} out of sequence, "
                                   f"expected {last_word}.{previous_index + 1}")
        return _number(minor)

    def _parse_heads(self, head_texts: list[str], require_tree: bool) -> list[int]:
        heads = [-1]
        n = self.n
        for dep, text in enumerate(head_texts, start=1):
            if text == "_":
                if require_tree:
                    raise self._error(self._word_rows[dep], "HEAD is '_' (a tree is required)")
                heads.append(-1)
                continue
            if not _is_number(text):
                raise self._error(self._word_rows[dep], f"HEAD {_shown(text)!r} is not a non-negative integer")
            head = _number(text)
            if head > n:
                raise self._error(self._word_rows[dep], f"HEAD {_shown(text)} out of range 0..{n}")
            if head == dep:
                raise self._error(self._word_rows[dep], f"word {dep} is its own head")
            if require_tree and self.deprels[dep] is None:
                raise self._error(self._word_rows[dep], "DEPREL is '_' (a tree is required)")
            heads.append(head)
        return heads

    def _check_acyclic(self) -> None:
        cycle = find_cycle(self.heads)
        if cycle:
            path = " -> ".join(map(str, cycle + [cycle[0]]))
            # Fully attached words without a root child always form a cycle; say both.
            reason = (f"no word is attached to the root 0: cycle {path}" if -1 not in self.heads[1:]
                      and 0 not in self.heads else f"cycle in the tree: {path}")
            raise self._error(self._word_rows[min(cycle)], reason)

    # --- derived views ------------------------------------------------------

    @property
    def lemma(self) -> list[str | None]:
        """LEMMA of each word (length n), None for ``_``, as ``upos``, ``xpos`` and
        ``feats`` hold theirs (``lemmas`` holds the column as written)."""
        return [_nullable(lemma) for lemma in self.lemmas]

    @property
    def misc(self) -> list[dict | None]:
        """MISC of each word (length n) as a dict (``conllu`` semantics), None for ``_``."""
        if self._misc is None:
            self._misc = [parse_dict_value(self._lines[row].split("\t")[MISC])
                          for row in self._word_rows[1:]]
        return self._misc

    @property
    def comments(self) -> list[str]:
        """The comment lines, as written (with their ``#``)."""
        return [text for text in self._lines if text[:1] == "#"]

    @property
    def metadata(self) -> dict[str, str | None]:
        """``# key = value`` comments as a dict (``conllu`` semantics)."""
        metadata: dict[str, str | None] = {}
        for text in self.comments:
            metadata.update(parse_comment_line(text))
        return metadata

    @property
    def sent_id(self) -> str | None:
        return self.metadata.get("sent_id")

    @property
    def text(self) -> str:
        """``# text`` when present, else the forms joined by spaces."""
        text = self.metadata.get("text")
        return text if text is not None else " ".join(self.forms)

    @property
    def multiword_tokens(self) -> list[tuple[int, int, str]]:
        """``(first word, last word, surface form)`` of each multiword token."""
        tokens = []
        for text in self._lines:
            cols = text.split("\t", 2)
            if text[:1] != "#" and "-" in cols[ID]:
                start, _, end = cols[ID].partition("-")
                tokens.append((int(start), int(end), cols[FORM]))
        return tokens

    # --- writing ------------------------------------------------------------

    def set_tree(self, heads: Sequence[int], deprels: Sequence[str | None] | None = None) -> None:
        """Replace HEAD and DEPREL of every word (nothing else changes).

        ``heads`` and ``deprels`` have length n+1 (index 0 ignored).  A head of -1
        writes ``_`` in both columns; a word with a head but a None label gets
        ``dep``.  Raises ValueError on wrong lengths or out-of-range heads.
        """
        n = self.n
        if len(heads) != n + 1:
            raise ValueError(f"heads has length {len(heads)}, expected n+1 = {n + 1}")
        if deprels is None:
            deprels = [None] * (n + 1)
        elif len(deprels) != n + 1:
            raise ValueError(f"deprels has length {len(deprels)}, expected n+1 = {n + 1}")
        new_heads = [-1]
        new_deprels: list[str | None] = [None]
        for dep in range(1, n + 1):
            head, label = int(heads[dep]), deprels[dep]
            if head == -1:
                label = None
            elif not 0 <= head <= n or head == dep:
                raise ValueError(f"word {dep}: head {head} is not in 0..{n} or is the word itself")
            elif label is None:
                label = DEFAULT_DEPREL
            elif not label or _WHITESPACE.search(label):
                raise ValueError(f"word {dep}: label {label!r} is empty or contains whitespace")
            new_heads.append(head)
            new_deprels.append(label)
        for dep in range(1, n + 1):
            row = self._word_rows[dep]
            cols = self._lines[row].split("\t")
            cols[HEAD] = "_" if new_heads[dep] == -1 else str(new_heads[dep])
            cols[DEPREL] = new_deprels[dep] or "_"
            self._lines[row] = "\t".join(cols)
        self.heads, self.deprels = new_heads, new_deprels

    def set_tags(self, columns: dict[str, Sequence[str | None]]) -> None:
        """Replace whole ``upos``, ``xpos``, ``feats`` or ``lemma`` columns: ``columns`` maps
        each to its n new values (None or ``_`` writes ``_``); nothing else changes."""
        indices = {"lemma": LEMMA, "upos": UPOS, "xpos": XPOS, "feats": FEATS}
        columns = {name: [None if not v or v == "_" else v for v in values] for name, values in columns.items()}
        for name, values in columns.items():
            if len(values) != self.n:
                raise ValueError(f"{name} has length {len(values)}, expected n = {self.n}")
            # CoNLL-U allows spaces in LEMMA, never a TAB or a line break
            unwritable = _CONTROL_OR_TAB if name == "lemma" else _WHITESPACE
            for dep, value in enumerate(values, start=1):
                if value is not None and unwritable.search(value):
                    raise ValueError(f"word {dep}: {name} {value!r} contains "
                                     f"{'a control character' if name == 'lemma' else 'whitespace'}")
        for dep in range(1, self.n + 1):
            row = self._word_rows[dep]
            cols = self._lines[row].split("\t")
            for name, values in columns.items():
                cols[indices[name]] = values[dep - 1] or "_"
            self._lines[row] = "\t".join(cols)
        for name, values in columns.items():
            if name == "lemma":
                self.lemmas = [value or "_" for value in values]
            else:
                setattr(self, name, values)

    def to_conllu(self) -> str:
        """The sentence block, ending with the blank line that separates sentences."""
        return "\n".join(self._lines) + "\n\n"

    def copy(self) -> Sentence:
        """An independent copy (set_tree on it leaves this one unchanged)."""
        other = object.__new__(Sentence)
        for name in self.__slots__:
            value = getattr(self, name)
            setattr(other, name, value.copy() if isinstance(value, list) else value)
        return other

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"<Sentence {self.source}:{self.line} n={self.n} {self.text[:40]!r}>"


class SentenceList(list):
    """A list of sentences that also records the sentences skipped while reading."""

    def __init__(self, sentences: Iterable[Sentence] = (), skipped: list[ConlluError] | None = None):
        super().__init__(sentences)
        self.skipped: list[ConlluError] = skipped if skipped is not None else []

    @property
    def n_skipped(self) -> int:
        return len(self.skipped)

    @property
    def n_words(self) -> int:
        return sum(sentence.n for sentence in self)

    def with_skipped(self) -> list:
        """The sentences with each skipped one back in its place as a
        :class:`SkippedBlock` (its original lines), so that writing them gives
        as many sentences as the input had."""
        merged: list = list(self)
        for error in reversed(self.skipped):
            assert error.position is not None and error.lines is not None  # set on every skipped sentence
            merged.insert(error.position, SkippedBlock(error.lines))
        return merged


class SkippedBlock:
    """The original lines of a sentence that could not be read; written back
    unchanged by :func:`write_conllu`."""

    __slots__ = ("lines",)

    def __init__(self, lines: list[str]):
        self.lines = lines

    def to_conllu(self) -> str:
        return "\n".join(self.lines) + "\n\n"


def _blocks(lines: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """(line number of the first line, lines) of each blank-line separated block."""
    block: list[str] = []
    start = 1
    for number, text in enumerate(lines, start=1):
        text = text.removesuffix("\n").removesuffix("\r")  # LF or CRLF: the output has LF only
        if text.strip():
            if not block:
                start = number
            block.append(text)
        elif block:
            yield start, block
            block = []
    if block:
        yield start, block


def iter_sentences(lines: Iterable[str], source: str, lenient: bool = False, require_tree: bool = True,
                   skipped: list[ConlluError] | None = None) -> Iterator[Sentence]:
    """Stream the sentences of CoNLL-U ``lines`` (an open file, line numbers
    counted from 1), as :func:`iter_conllu` does."""
    read = 0
    for start, block in _blocks(lines):
        try:
            sentence = Sentence(block, source, start, require_tree=require_tree)
        except ConlluError as error:
            if not lenient:
                raise
            logger.warning("skipped sentence: %s", error)
            error.lines, error.position = block, read
            if skipped is not None:
                skipped.append(error)
            continue
        read += 1
        yield sentence


def _open_text(path: str | Path) -> io.TextIOWrapper:
    if str(path) == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8-sig", newline="\n")
    path = Path(path)
    try:
        if path.suffix == ".gz":
            return gzip.open(path, "rt", encoding="utf-8-sig", newline="\n")
        return open(path, encoding="utf-8-sig", newline="\n")
    except OSError as error:
        raise KgparserError(f"{path}: cannot open: {error.strerror or error}") from error


def _source_name(path: str | Path) -> str:
    return "<stdin>" if str(path) == "-" else str(path)


def iter_conllu(path: str | Path, *, lenient: bool = False, require_tree: bool = True,
                skipped: list[ConlluError] | None = None) -> Iterator[Sentence]:
    """Stream the sentences of a CoNLL-U file (``-`` = stdin, ``.gz`` decompressed).

    In lenient mode the errors of skipped sentences are appended to ``skipped``
    (when given) and logged.
    """
    with opened_text(path) as (handle, source):
        yield from iter_sentences(handle, source, lenient, require_tree, skipped)


@contextmanager
def opened_text(path: str | Path) -> Iterator[tuple[IO[str], str]]:
    """The text of ``path`` (``-`` = stdin, ``.gz`` decompressed) and its name for
    messages; what goes wrong while it is read (not UTF-8, a damaged or
    truncated ``.gz``) becomes a one-line :class:`KgparserError` naming it."""
    source = _source_name(path)
    handle = _open_text(path)
    try:
        yield handle, source
    except UnicodeDecodeError as error:
        raise KgparserError(f"{source}: not valid UTF-8 ({error.reason})") from error
    except (OSError, EOFError) as error:  # a corrupt .gz file (OSError) or a truncated one (EOFError)
        raise KgparserError(f"{source}: cannot read: {error} (the file is damaged or incomplete)") from error
    finally:
        if str(path) == "-":
            handle.detach()  # closing the wrapper would close the process's stdin
        else:
            handle.close()


def read_conllu(path: str | Path, *, lenient: bool = False, require_tree: bool = True) -> SentenceList:
    """All sentences of a CoNLL-U file; see :func:`iter_conllu`."""
    skipped: list[ConlluError] = []
    sentences = iter_conllu(path, lenient=lenient, require_tree=require_tree, skipped=skipped)
    return SentenceList(sentences, skipped)


def parse_conllu(text: str, source: str = "<string>", *, lenient: bool = False,
                 require_tree: bool = True) -> SentenceList:
    """All sentences of CoNLL-U ``text`` (a leading byte-order mark is skipped, as
    in files); errors are located in ``source``."""
    skipped: list[ConlluError] = []
    sentences = iter_sentences(text.removeprefix("\ufeff").split("\n"), source, lenient, require_tree, skipped)
    return SentenceList(sentences, skipped)


def write_conllu(sentences: Iterable[Sentence], path_or_file: str | Path | IO[str]) -> None:
    """Write sentences (``-`` = stdout; an open text file is written to, not closed).
    A path (``.gz`` for gzip) is replaced atomically: a failure leaves it as it was."""
    if hasattr(path_or_file, "write"):
        for sentence in sentences:
            path_or_file.write(sentence.to_conllu())
        return
    from .atomic import atomic_open  # ``-`` is standard output there, as every stream target

    with atomic_open(path_or_file) as handle:
        write_conllu(sentences, handle)


def sentences_from_tokens(token_lists: Iterable[Sequence[str] | Sequence[tuple[str, str]]],
                          source: str = "<tokens>", start: int = 1) -> list[Sentence]:
    """Sentences without trees from lists of forms or of ``(form, upos)`` pairs
    (``upos`` may be None); ``start``: the number of the first (in messages).

    Each sentence gets a ``# text`` comment (forms joined by spaces) and ``_`` in
    every other column.  Anything else -- a token that is a number, bytes, None or
    a tuple of another length, a form with a TAB or a control character, a UPOS
    with white space -- is a :class:`TokenError` naming the sentence and the
    token (both 1-based).
    """
    sentences = []
    for number, tokens in enumerate(token_lists, start=start):
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable):
            raise TokenError(f"sentence {number}: expected a list of tokens, got {_described(tokens)}")
        pairs = [_form_and_upos(token, number, index) for index, token in enumerate(tokens, start=1)]
        rows = [f"# text = {' '.join(form for form, _ in pairs)}"]
        rows += [f"{index}\t{form}\t_\t{upos}\t_\t_\t_\t_\t_\t_" for index, (form, upos) in enumerate(pairs, 1)]
        sentences.append(Sentence(rows, source, number, require_tree=False))
    return sentences


def _form_and_upos(token: object, number: int, index: int) -> tuple[str, str]:
    """The form and UPOS (``_`` where not given) of token ``index`` of sentence ``number``."""
    form, upos = (token, None) if isinstance(token, str) else _pair(token) or (None, None)
    if form is None:
        raise TokenError(f"sentence {number}, token {index}: expected a form or a (form, upos) pair of "
                         f"strings, got {_described(token)}")
    for name, value, spaced in (("form", form, True), ("UPOS", upos, False)):
        problem = value is not None and _field_problem(value, spaced)
        if problem:
            raise TokenError(f"sentence {number}, token {index}: {name} {value!r} {problem}")
    return form, upos or "_"


def _pair(token: object) -> tuple[str, str | None] | None:
    """``token`` as ``(form, upos)`` if it is a pair of strings (``upos`` may be None)."""
    if isinstance(token, Sequence) and not isinstance(token, (str, bytes)) and len(token) == 2:
        form, upos = token
        if isinstance(form, str) and (upos is None or isinstance(upos, str)):
            return form, upos
    return None


def _field_problem(value: str, spaced: bool) -> str | None:
    """Why ``value`` cannot be a CoNLL-U column of a token (``spaced``: one
    that may hold spaces, as FORM), or None."""
    if not value:
        return "is empty"
    if "\t" in value:
        return "contains a TAB"
    control = control_character(value)
    if control:
        return f"contains the control character {control}"
    return "contains white space" if not spaced and _SPACE.search(value) else None


def _described(value: object) -> str:
    """A value and its type for a message, cut when long."""
    shown = repr(value)
    return f"{shown if len(shown) <= 40 else shown[:40] + '...'} ({type(value).__name__})"


def sample_data_path(split: str = "train") -> Path:
    """Path of the shipped UD English-EWT excerpt (``train``, ``dev`` or ``test``);
    see ``kgparser/resources/en_ewt_sample/README.md`` for its source and license."""
    if split not in SAMPLE_SPLITS:
        raise KgparserError(f"unknown sample split {split!r}; choose one of {', '.join(SAMPLE_SPLITS)}")
    return Path(__file__).parent.parent / "resources" / "en_ewt_sample" / f"{split}.conllu"
