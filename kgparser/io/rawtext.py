"""Raw text into CoNLL-U sentences, whatever tokenizes it: the text read as
it comes (:class:`RawReader`), paragraphs (blank lines: lines of white space
only) and windows, and the white space around each token recorded so that the
text rebuilds exactly (:func:`text_of`).  What splits a paragraph into
sentences and tokens is handed down, a :class:`Segmenter`: spaCy's rules
(:mod:`kgparser.tokenize.rules`) or the learned tokenizer
(:mod:`kgparser.tokenize`).

The first sentence of each paragraph gets ``# newpar``.  Every sentence
gets ``# sent_id = N`` (counted from 1 over the text) and ``# text`` (its
words, a single space where the text has any white space between them).  The
white space after a word is written in MISC as UDPipe does: nothing for one
space, ``SpaceAfter=No`` for none, ``SpacesAfter=ESCAPED`` otherwise (``\\s``
space, ``\\t``, ``\\r``, ``\\n``, ``\\p`` for ``|``, ``\\\\`` for ``\\`` and
``\\uXXXX`` for any other white space), and ``SpacesBefore`` on the first word
for the white space that starts the text.  :func:`text_of` rebuilds the text
from these sentences, or a treebank's text from its tokens.

The text is read in bounded memory whatever its layout: a paragraph longer
than :data:`WINDOW` characters is read in windows that end at sentence ends.
Control characters that are not white space (NUL, BEL, ESC, DEL, C1
controls) are white space to the segmenter: no word holds one, and the MISC
spacing records them as ``\\uXXXX``, so the text still rebuilds exactly.  A
token of several words (:attr:`Word.words`, from the learned tokenizer) is
written as UD writes one: a range line ``1-2`` with the token's form and the
spacing in MISC, then its words.  Nothing here imports spaCy or torch.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import IO, Iterable, Iterator, Protocol, Sequence

from conllu.parser import parse_dict_value

from ..errors import KgparserError
from .conllu import Sentence, SentenceList

_ESCAPES = {" ": "\\s", "\t": "\\t", "\r": "\\r", "\n": "\\n", "|": "\\p", "\\": "\\\\"}
_UNESCAPES = {code[1]: char for char, code in _ESCAPES.items()}
_ESCAPED = re.compile(r"\\(u[0-9A-Fa-f]{4}|.)")
#: a line of white space only (a paragraph break), with its line end
_BLANK_LINE = re.compile(r"^[^\S\n]*(?:\n|$)", re.M)
#: the last white space of a text, and the first character that is not
_LAST_SPACE = re.compile(r"\s\S*\Z")
_NON_SPACE = re.compile(r"\S")
#: control characters that are not white space (C0 and C1 but TAB, LF, CR and
#: the like; DEL): the tokenizer sees each as a space (:func:`whitespace_view`)
NONSPACE_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")
_CONTROL_AS_SPACE = {code: " " for code in range(0xA0) if NONSPACE_CONTROL.match(chr(code))}
#: characters of raw text read at a time from a file
BLOCK = 1 << 16
#: the most characters of a paragraph spaCy reads at once (:class:`RawReader`); its own limit is 1,000,000
WINDOW = 20_000


class RawTextError(KgparserError):
    """Raw text cannot be tokenized (spaCy missing, unknown language, wrong input)."""


@dataclass(frozen=True)
class Word:
    """A token of the text: its form, where it lies (``text[start:end]``), and
    the tags it already has (``_`` where none); ``words``: the forms of the
    words of a multiword token (two or more, written as a CoNLL-U range line
    and its word lines), empty for a token that is one word, ``form``."""

    form: str
    start: int
    end: int
    upos: str = "_"
    xpos: str = "_"
    feats: str = "_"
    words: tuple[str, ...] = ()


class Segmenter(Protocol):
    """What splits paragraphs of raw text into sentences and tokens."""

    def segment(self, paragraphs: list[str], offsets: list[int]) -> list[list[list[Word]]]:
        """For each paragraph, its sentences, each a list of tokens whose
        ``start`` and ``end`` are offsets into the paragraph plus its offset."""
        ...


def stream_raw(handle: IO[str], source: str, segmenter: Segmenter) -> Iterator[Sentence]:
    """The sentences of the raw text of an open file, read :data:`BLOCK`
    characters at a time: memory stays bounded whatever the text's layout
    (no blank lines, one giant line, no line end at all)."""
    reader = RawReader(segmenter, source)
    while block := handle.read(BLOCK):
        yield from reader.feed(block)
    yield from reader.close()


class RawReader:
    """Raw text in, sentences out, as the text comes in pieces of any size
    (:meth:`feed` each, then :meth:`close`): the sentences are the same
    whatever the pieces.

    The text not yet tokenized is kept until its paragraph is complete (the
    next paragraph has begun, or the text has ended).  A paragraph longer
    than :data:`WINDOW` characters is read in windows, so that the segmenter
    never sees more than that at once: the sentences of a window but its last are
    taken and the next window starts at that last sentence, so each sentence
    is split with the text that follows it.  A sentence longer than a window
    ends at the window's last white space (at its end where it has none)."""

    def __init__(self, segmenter: Segmenter, source: str = "<text>"):
        self.segmenter = segmenter
        self.source = source
        self.pending = ""  # the text not yet tokenized: the rest of the text after the last sentence taken
        self.line = 1  # the line ``pending`` starts on
        self.taken = 0  # sentences taken so far
        self.in_paragraph = False  # ``pending`` starts inside a paragraph, after a window

    def feed(self, text: str) -> list[Sentence]:
        """The sentences that ``text``, after the text fed before it, completes."""
        self.pending += text
        return self._take(final=False)

    def close(self) -> list[Sentence]:
        """The sentences of the rest of the text."""
        sentences = self._take(final=True)
        self.pending = ""
        return sentences

    def _take(self, final: bool) -> list[Sentence]:
        sentences: list[Sentence] = []
        while True:
            view = whitespace_view(self.pending)
            spans = paragraph_spans(view)
            complete = len(spans) if final else len(spans) - 1
            if spans and spans[0][1] - spans[0][0] > WINDOW:
                sentences += self._window(view, spans[0][0])
            elif complete > 0:
                count = next((i for i in range(1, complete) if spans[i][1] - spans[i][0] > WINDOW), complete)
                end = spans[count][0] if count < len(spans) else len(view)
                sentences += self._paragraphs(view, spans[:count], end)
            else:
                return sentences

    def _paragraphs(self, view: str, spans: list[tuple[int, int]], end: int) -> SentenceList:
        """The sentences of the complete paragraphs ``spans`` of the pending
        text (seen as ``view``), whose text ends at ``end``."""
        sentences: list[list[Word]] = []
        first_of_paragraph = []
        for paragraph in self.segmenter.segment([view[start:stop] for start, stop in spans],
                                                [start for start, _ in spans]):
            first_of_paragraph.append(len(sentences))
            sentences += paragraph
        if self.in_paragraph:
            first_of_paragraph.pop(0)
        self.in_paragraph = False
        return self._give(sentences, end, first_of_paragraph)

    def _window(self, view: str, start: int) -> SentenceList:
        """The sentences of the next window of the long paragraph at ``start``."""
        space = _LAST_SPACE.search(view, start, start + WINDOW)
        cut = space.start() if space else start + WINDOW
        sentences = self.segmenter.segment([view[start:cut]], [start])[0]
        if len(sentences) > 1:
            end = sentences.pop()[0].start
        else:  # one sentence fills the window: it ends there
            word = _NON_SPACE.search(view, cut)
            assert word is not None  # the paragraph, longer than the window, ends in a word after the cut
            end = word.start()
        first_of_paragraph = [] if self.in_paragraph else [0]
        self.in_paragraph = True
        return self._give(sentences, end, first_of_paragraph)

    def _give(self, sentences: list[list[Word]], end: int, first_of_paragraph: list[int]) -> SentenceList:
        """CoNLL-U sentences of ``sentences``, the words of ``pending[:end]``, which is then taken."""
        text, self.pending = self.pending[:end], self.pending[end:]
        result = build_sentences(text, sentences, first_of_paragraph, self.source, self.taken, self.line)
        self.taken += len(result)
        self.line += text.count("\n")
        return result


def whitespace_view(text: str) -> str:
    """``text`` with each control character that is not white space (NUL, BEL,
    ESC, ...) replaced by a space, as the tokenizer sees it: no word holds
    one (CoNLL-U forbids them), and the text around it rebuilds exactly, since
    the white space recorded after a word is taken from the text itself."""
    return text.translate(_CONTROL_AS_SPACE) if NONSPACE_CONTROL.search(text) else text


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each paragraph: the runs of text between blank
    lines, without the white space around them."""
    spans: list[tuple[int, int]] = []
    start = 0
    for blank in _BLANK_LINE.finditer(text):
        _add_trimmed(spans, text, start, blank.start())
        start = blank.end()
        if blank.end() == len(text):
            break
    _add_trimmed(spans, text, start, len(text))
    return spans


def _add_trimmed(spans: list, text: str, start: int, end: int) -> None:
    chunk = text[start:end]
    stripped = chunk.strip()
    if stripped:
        first = start + chunk.index(stripped)
        spans.append((first, first + len(stripped)))


def build_sentences(text: str, sentences: Sequence[Sequence[Word]], first_of_paragraph: Iterable[int] = (),
                    source: str = "<text>", first_sentence: int = 0, first_line: int = 1) -> SentenceList:
    """CoNLL-U sentences of the ``sentences`` of words of ``text`` (in order),
    with the white space around them recorded so that :func:`text_of` gives
    ``text`` back; ``first_of_paragraph``: indices of the sentences to mark ``# newpar``;
    ``first_sentence``, ``first_line``: as :func:`raw_sentences`'s."""
    words = [word for sentence in sentences for word in sentence]
    afters = [text[word.end:following.start] for word, following in zip(words, words[1:])]
    afters.append(text[words[-1].end:] if words else "")
    before = text[:words[0].start] if words else ""
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    paragraphs = set(first_of_paragraph)
    result = SentenceList()
    position = 0
    for index, sentence in enumerate(sentences):
        spacing = afters[position:position + len(sentence)]
        comments = ["# newpar"] if index in paragraphs else []
        comments += [f"# sent_id = {first_sentence + index + 1}", f"# text = {_sentence_text(sentence, spacing)}"]
        line = first_line - 1 + bisect.bisect_right(line_starts, sentence[0].start)
        result.append(_sentence(sentence, spacing, before if index == 0 else "", comments, source, line))
        position += len(sentence)
    return result


def _sentence_text(words: Sequence[Word], afters: Sequence[str]) -> str:
    """The words with one space where the text has any white space between them."""
    return "".join(word.form + (" " if after else "") for word, after in zip(words, afters)).rstrip(" ")


def _sentence(words: Sequence[Word], afters: Sequence[str], before: str, comments: list[str],
              source: str, line: int) -> Sentence:
    rows = list(comments)
    index = 1
    for position, (word, after) in enumerate(zip(words, afters)):
        misc = ([f"SpacesBefore={escape(before)}"] if before and position == 0 else []) + _spacing(after)
        misc_column = "|".join(misc) or "_"
        if len(word.words) > 1:  # UD's layout: the range line holds the form and the spacing
            last = index + len(word.words) - 1
            rows.append(f"{index}-{last}\t{word.form}\t_\t_\t_\t_\t_\t_\t_\t{misc_column}")
            rows += [f"{number}\t{form}\t_\t_\t_\t_\t_\t_\t_\t_"
                     for number, form in enumerate(word.words, start=index)]
            index = last + 1
            continue
        rows.append(f"{index}\t{word.form}\t_\t{word.upos}\t{word.xpos}\t{word.feats}\t_\t_\t_\t{misc_column}")
        index += 1
    return Sentence(rows, source, line, require_tree=False)


def _spacing(after: str) -> list[str]:
    """The MISC attributes that record the white space after a word."""
    if after == " ":
        return []
    return ["SpaceAfter=No"] if not after else [f"SpacesAfter={escape(after)}"]


def escape(spaces: str) -> str:
    """White space as a MISC value (see the module docstring)."""
    return "".join(_ESCAPES.get(char) or f"\\u{ord(char):04X}" for char in spaces)


def unescape(value: str) -> str:
    """The inverse of :func:`escape`."""
    return _ESCAPED.sub(lambda m: chr(int(m[1][1:], 16)) if len(m[1]) == 5 else _UNESCAPES.get(m[1], m[1]), value)


def text_of(sentences: Iterable[Sentence]) -> str:
    """The text the sentences' tokens (multiword tokens as written) and their
    MISC spacing give: ``SpacesBefore``/``SpacesAfter`` where given, else one
    space after a token, none with ``SpaceAfter=No``, and a blank line before
    each ``# newpar`` sentence but the first.  Exactly the text
    :func:`raw_sentences` read; for a treebank, its text as UD's
    ``# text`` and ``# newpar`` lines give it."""
    before, layout = token_layout(sentences)
    return before + "".join(form + after for tokens in layout for form, after in tokens)


def token_layout(sentences: Iterable[Sentence]) -> tuple[str, list[list[tuple[str, str]]]]:
    """How :func:`text_of` lays the sentences out: the white space before the
    first token, and per sentence the form of each token as written with the
    white space after it."""
    before = ""
    layout: list[list[tuple[str, str]]] = []
    for sentence in sentences:
        if layout and layout[-1] and _starts_paragraph(sentence) and layout[-1][-1][1] == " ":
            layout[-1][-1] = (layout[-1][-1][0], "\n\n")
        tokens = surface_tokens(sentence)
        if tokens and not any(layout) and "SpacesBefore" in tokens[0][1]:
            before = unescape(tokens[0][1]["SpacesBefore"])
        layout.append([(form, _after(misc)) for form, misc in tokens])
    return before, layout


def _starts_paragraph(sentence: Sentence) -> bool:
    """Whether a ``# newpar`` or ``# newdoc`` comment (with or without an id) opens the sentence."""
    return any(key.split()[0] in ("newpar", "newdoc") for key in sentence.metadata if key)


def _after(misc: dict) -> str:
    if "SpacesAfter" in misc:
        return unescape(misc["SpacesAfter"])
    return "" if misc.get("SpaceAfter") == "No" else " "


def surface_tokens(sentence: Sentence) -> list[tuple[str, dict]]:
    """``(form, MISC)`` of each token of a sentence as written in the text: a
    multiword token's line, not its words'; empty nodes left out."""
    tokens = []
    covered = 0
    for line in sentence.to_conllu().split("\n"):
        cols = line.split("\t")
        if len(cols) != 10 or "." in cols[0]:
            continue
        first, _, last = cols[0].partition("-")
        if int(first) <= covered:
            continue
        covered = int(last or first)
        tokens.append((cols[1], parse_dict_value(cols[9]) or {}))
    return tokens
