"""Raw text as parser input (``kgparser parse --input-format raw``,
``Parser.parse(text, input_format="raw")``): paragraphs, sentences and tokens
by spaCy's rule-based tokenizer and sentencizer for the language
(``spacy.blank(LANG)``: nothing to download), each sentence a CoNLL-U
:class:`~kgparser.io.conllu.Sentence` from which the text is rebuilt exactly.

Paragraphs are separated by blank lines (lines of white space only); the
first sentence of each gets ``# newpar``.  Every sentence gets ``# sent_id =
N`` (counted from 1 over the text) and ``# text`` (its words, a single space
where the text has any white space between them).  The white space after a
word is written in MISC as UDPipe does: nothing for one space,
``SpaceAfter=No`` for none, ``SpacesAfter=ESCAPED`` otherwise (``\\s`` space,
``\\t``, ``\\r``, ``\\n``, ``\\p`` for ``|``, ``\\\\`` for ``\\`` and ``\\uXXXX``
for any other white space), and ``SpacesBefore`` on the first word for the
white space that starts the text.  :func:`text_of` rebuilds the text from
these sentences, or a treebank's text from its tokens.

The text is read as it comes, in bounded memory whatever its layout
(:class:`RawReader`): a paragraph longer than :data:`WINDOW` characters is
read in windows that end at sentence ends.  Control characters that are not
white space (NUL, BEL, ESC, DEL, C1 controls) are white space to the
tokenizer: no word holds one, and the MISC spacing records them as
``\\uXXXX``, so the text still rebuilds exactly.

spaCy's tokenizers split a token only into pieces of its own text (``don't``
into ``do`` ``n't``), so every token is one word: no multiword-token lines.
A token of several words (:attr:`Word.words`, from a learned tokenizer) is
written as UD writes one: a range line ``1-2`` with the token's form and the
spacing in MISC, then its words.
spaCy is an optional dependency (``pip install 'kgparser[spacy]'``).
"""
from __future__ import annotations

import bisect
import io
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import IO, Iterable, Iterator, Sequence

from conllu.parser import parse_dict_value

from .errors import KgparserError
from .io.conllu import Sentence, SentenceList

INSTALL_HINT = "raw text needs spaCy: pip install 'kgparser[spacy]' (or pip install spacy)"
#: what spaCy's tokenizers for some languages need installed beside spaCy
_TOKENIZER_PACKAGES = {
    "ja": "pip install sudachipy sudachidict_core",
    "ko": "pip install natto-py, with the MeCab library mecab-ko and its dictionary mecab-ko-dic",
    "th": "pip install pythainlp",
    "vi": "pip install pyvi",
}
#: a UD treebank file name: the language code before the first ``_`` (``en_ewt-ud-train.conllu``)
_UD_FILE = re.compile(r"^(?P<lang>[a-z]{2,3})_[a-z0-9]+-ud-")
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
_NONSPACE_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")
_CONTROL_AS_SPACE = {code: " " for code in range(0xA0) if _NONSPACE_CONTROL.match(chr(code))}
#: what no CoNLL-U FORM may hold, replaced by U+FFFD in the form of a spaCy token that has it
_UNWRITABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
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


def require_spacy():
    """The ``spacy`` module, or a one-line :class:`RawTextError` saying what to install."""
    try:
        import spacy
    except ImportError:
        raise RawTextError(INSTALL_HINT) from None
    return spacy


@lru_cache(maxsize=8)
def blank_pipeline(lang: str):
    """spaCy's tokenizer and rule-based sentencizer for ``lang`` (a blank pipeline)."""
    spacy = require_spacy()
    try:
        spacy.util.get_lang_class(lang)
    except ImportError:
        raise RawTextError(f"spaCy has no tokenizer for the language {lang!r}; give another code "
                           f"(--lang xx is spaCy's multi-language tokenizer)") from None
    try:
        nlp = spacy.blank(lang)
    except ImportError as error:
        raise RawTextError(f"spaCy's tokenizer for {lang!r} needs another package: "
                           f"{_TOKENIZER_PACKAGES.get(lang) or str(error).split('. ')[0]}; "
                           f"or give --lang xx for spaCy's multi-language rules") from None
    nlp.add_pipe("sentencizer")
    return nlp


def model_language(config) -> str | None:
    """The language of a model: its config's ``data.lang``, else the code a UD
    training file's name starts with (``en_ewt-ud-train.conllu``: ``en``), else None."""
    if config.data.lang:
        return config.data.lang
    match = _UD_FILE.match(os.path.basename(config.data.train or ""))
    return match["lang"] if match else None


def raw_sentences(text: str, lang: str | None, source: str = "<text>") -> SentenceList:
    """Tokenize and sentence-split ``text`` (see the module docstring)."""
    return SentenceList(stream_raw(io.StringIO(text), source, lang))


def stream_raw(handle: IO[str], source: str, lang: str | None) -> Iterator[Sentence]:
    """The sentences of the raw text of an open file, read :data:`BLOCK`
    characters at a time: memory stays bounded whatever the text's layout
    (no blank lines, one giant line, no line end at all)."""
    reader = RawReader(lang, source)
    while block := handle.read(BLOCK):
        yield from reader.feed(block)
    yield from reader.close()


class RawReader:
    """Raw text in, sentences out, as the text comes in pieces of any size
    (:meth:`feed` each, then :meth:`close`): the sentences are the same
    whatever the pieces.

    The text not yet tokenized is kept until its paragraph is complete (the
    next paragraph has begun, or the text has ended).  A paragraph longer
    than :data:`WINDOW` characters is read in windows, so that spaCy never
    sees more than that at once: the sentences of a window but its last are
    taken and the next window starts at that last sentence, so each sentence
    is split with the text that follows it.  A sentence longer than a window
    ends at the window's last white space (at its end where it has none)."""

    def __init__(self, lang: str | None, source: str = "<text>"):
        if not lang:
            raise RawTextError("raw text: no language: the model records none; give one (--lang, e.g. --lang en)")
        self.nlp = blank_pipeline(lang)
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
        for (start, _), doc in zip(spans, self.nlp.pipe(view[start:stop] for start, stop in spans)):
            first_of_paragraph.append(len(sentences))
            sentences += doc_words(doc, start)
        if self.in_paragraph:
            first_of_paragraph.pop(0)
        self.in_paragraph = False
        return self._give(sentences, end, first_of_paragraph)

    def _window(self, view: str, start: int) -> SentenceList:
        """The sentences of the next window of the long paragraph at ``start``."""
        space = _LAST_SPACE.search(view, start, start + WINDOW)
        cut = space.start() if space else start + WINDOW
        sentences = doc_words(self.nlp(view[start:cut]), start)
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
    return text.translate(_CONTROL_AS_SPACE) if _NONSPACE_CONTROL.search(text) else text


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


def doc_words(doc, offset: int = 0, tags: bool = False) -> list[list[Word]]:
    """The words of each sentence of a spaCy ``doc`` (white-space tokens left
    out; sentences of white space only dropped), placed ``offset`` characters
    into the text; with ``tags``, the tags its tokens have."""
    sentences = []
    for sentence in doc.sents:
        words = [_word(token, offset, tags) for token in sentence if not token.is_space]
        if words:
            sentences.append(words)
    return sentences


def _word(token, offset: int, tags: bool) -> Word:
    start = offset + token.idx
    word = Word(_UNWRITABLE.sub("\ufffd", token.text), start, start + len(token.text))
    if not tags:
        return word
    return Word(word.form, word.start, word.end, _tag(token.pos_), _tag(token.tag_), _tag(str(token.morph)))


def _tag(value: str) -> str:
    return value if value and not value.isspace() else "_"


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
    pieces: list[str] = []
    for sentence in sentences:
        if pieces and _starts_paragraph(sentence) and pieces[-1] == " ":
            pieces[-1] = "\n\n"
        for index, (form, misc) in enumerate(surface_tokens(sentence)):
            if index == 0 and "SpacesBefore" in misc and not pieces:
                pieces.append(unescape(misc["SpacesBefore"]))
            pieces += [form, _after(misc)]
    return "".join(pieces)


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
