"""spaCy's rule-based tokenizer and sentencizer as the raw-text front end
(``kgparser parse --input-format raw``, ``Parser.parse(text,
input_format="raw")``): ``spacy.blank(LANG)`` plus its ``sentencizer``,
nothing to download, for the language a model was trained on
(:func:`model_language`) or the one given.  :class:`SpacyRules` is the
segmenter the raw reader (:class:`kgparser.io.rawtext.RawReader`) hands each
paragraph or window to.  spaCy's tokenizers split a token only into pieces of
its own text (``don't`` into ``do`` ``n't``), so every token is one word.
spaCy is an optional dependency (``pip install 'kgparser[spacy]'``).
"""
from __future__ import annotations

import io
import os
import re
from functools import lru_cache
from typing import IO, Iterator

from ..io.conllu import Sentence, SentenceList
from ..io.rawtext import RawTextError, Word, stream_raw

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
#: what no CoNLL-U FORM may hold, replaced by U+FFFD in the form of a spaCy token that has it
_UNWRITABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


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


class SpacyRules:
    """spaCy's tokenizer and sentencizer for ``lang`` as a raw-text segmenter."""

    def __init__(self, lang: str | None):
        if not lang:
            raise RawTextError("raw text: no language: the model records none; give one (--lang, e.g. --lang en)")
        self.nlp = blank_pipeline(lang)

    def segment(self, paragraphs: list[str], offsets: list[int]) -> list[list[list[Word]]]:
        """The sentences of each paragraph, as :func:`doc_words` gives them."""
        return [doc_words(doc, offset) for doc, offset in zip(self.nlp.pipe(paragraphs), offsets)]


def read_rules(handle: IO[str], source: str, lang: str | None) -> Iterator[Sentence]:
    """The sentences of the raw text of an open stream, by spaCy's rules for
    ``lang`` (the raw tokenizer :class:`kgparser.io.reader.Input` is handed);
    a missing language or spaCy is an error at the first sentence asked for."""
    yield from stream_raw(handle, source, SpacyRules(lang))


def raw_sentences(text: str, lang: str | None, source: str = "<text>") -> SentenceList:
    """Tokenize and sentence-split ``text`` (see the module docstring)."""
    return SentenceList(read_rules(io.StringIO(text), source, lang))


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
