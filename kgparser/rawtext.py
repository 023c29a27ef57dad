"""Raw text as parser input (``kgparser parse --input-format raw``,
``Parser.parse(text, input_format="raw")``): paragraphs, sentences and tokens
by spaCy's rule-based tokenizer and sentencizer for the language
(``spacy.blank(LANG)``: nothing to download), each sentence a CoNLL-U
:class:`~kgparser.conllu_io.Sentence` from which the text is rebuilt exactly.

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

spaCy's tokenizers split a token only into pieces of its own text (``don't``
into ``do`` ``n't``), so every token is one word: no multiword-token lines.
spaCy is an optional dependency (``pip install 'kgparser[spacy]'``).
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from conllu.parser import parse_dict_value

from .conllu_io import Sentence, SentenceList, opened_text
from .errors import KgparserError

INSTALL_HINT = "raw text needs spaCy: pip install 'kgparser[spacy]' (or pip install spacy)"
#: a UD treebank file name: the language code before the first ``_`` (``en_ewt-ud-train.conllu``)
_UD_FILE = re.compile(r"^(?P<lang>[a-z]{2,3})_[a-z0-9]+-ud-")
_ESCAPES = {" ": "\\s", "\t": "\\t", "\r": "\\r", "\n": "\\n", "|": "\\p", "\\": "\\\\"}
_UNESCAPES = {code[1]: char for char, code in _ESCAPES.items()}
_ESCAPED = re.compile(r"\\(u[0-9A-Fa-f]{4}|.)")
#: a line of white space only (a paragraph break), with its line end
_BLANK_LINE = re.compile(r"^[^\S\n]*(?:\n|$)", re.M)


class RawTextError(KgparserError):
    """Raw text cannot be tokenized (spaCy missing, unknown language, wrong input)."""


@dataclass(frozen=True)
class Word:
    """A word of the text: its form, where it lies (``text[start:end]``), and
    the tags it already has (``_`` where none)."""

    form: str
    start: int
    end: int
    upos: str = "_"
    xpos: str = "_"
    feats: str = "_"


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
        nlp = spacy.blank(lang)
    except ImportError:
        raise RawTextError(f"spaCy has no tokenizer for the language {lang!r}; give another code "
                           f"(--lang xx is spaCy's multi-language tokenizer)") from None
    nlp.add_pipe("sentencizer")
    return nlp


def model_language(config) -> str | None:
    """The language of a model: its config's ``data.lang``, else the code a UD
    training file's name starts with (``en_ewt-ud-train.conllu``: ``en``), else None."""
    if config.data.lang:
        return config.data.lang
    match = _UD_FILE.match(os.path.basename(config.data.train or ""))
    return match["lang"] if match else None


def read_raw(source, lang: str | None) -> SentenceList:
    """The sentences of raw text: ``source`` is the text itself (a str) or a
    file (a :class:`os.PathLike`; ``Path("-")`` is standard input, ``.gz`` is
    decompressed)."""
    if not lang:
        raise RawTextError("raw text: no language: the model records none; give one (--lang, e.g. --lang en)")
    if isinstance(source, os.PathLike):
        with opened_text(source) as (handle, name):
            return raw_sentences(handle.read(), lang, name)
    if not isinstance(source, str):
        raise RawTextError(f"raw text: expected the text (a str) or a file path, got {type(source).__name__}")
    return raw_sentences(source, lang, "<text>")


def raw_sentences(text: str, lang: str, source: str = "<text>", *, first_sentence: int = 0,
                  first_line: int = 1) -> SentenceList:
    """Tokenize and sentence-split ``text`` (see the module docstring);
    ``first_sentence``, ``first_line``: where ``text`` starts in a longer text
    (the sentences before it, its line there), for the sent_ids and lines."""
    nlp = blank_pipeline(lang)
    paragraphs = paragraph_spans(text)
    docs = nlp.pipe(text[start:end] for start, end in paragraphs)
    sentences: list[list[Word]] = []
    first_of_paragraph = set()
    for (start, _), doc in zip(paragraphs, docs):
        first_of_paragraph.add(len(sentences))
        sentences += doc_words(doc, start)
    return build_sentences(text, sentences, first_of_paragraph, source, first_sentence, first_line)


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each paragraph: the runs of text between blank
    lines, without the white space around them."""
    spans = []
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
    word = Word(token.text, start, start + len(token.text))
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
    for index, (word, after) in enumerate(zip(words, afters), start=1):
        misc = ([f"SpacesBefore={escape(before)}"] if before and index == 1 else []) + _spacing(after)
        rows.append(f"{index}\t{word.form}\t_\t{word.upos}\t{word.xpos}\t{word.feats}\t_\t_\t_\t"
                    f"{'|'.join(misc) or '_'}")
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
