"""Training text and character labels from a treebank.

The text is the treebank's running text exactly as
:func:`kgparser.io.rawtext.text_of` rebuilds it (tokens, ``SpaceAfter`` /
``SpacesAfter``, a blank line before each ``# newpar`` / ``# newdoc``), so the
model learns from text as a reader gives it, sentences in their context, not
one sentence at a time.  Each character gets one label, as UDPipe's
tokenizer (Straka & Straková 2017) and Stanza's (Qi et al. 2020) label them:
white space between tokens is :data:`OUTSIDE`; a token's characters are
:data:`INSIDE` but its last, which says what ends there: a token, a
multiword token, a sentence, or both of the latter.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..io.conllu import Sentence
from ..io.rawtext import _after, _starts_paragraph, surface_tokens, unescape

#: the character labels: white space between tokens, a token's character but
#: its last, and the last character of a token, a multiword token, a
#: sentence's last token, a sentence's last token that is a multiword token
OUTSIDE, INSIDE, TOKEN_END, MWT_END, SENTENCE_END, MWT_SENTENCE_END = range(6)
#: the labels that end a token, and which of them end a multiword token or a sentence
ENDS = (TOKEN_END, MWT_END, SENTENCE_END, MWT_SENTENCE_END)
MWT_ENDS = (MWT_END, MWT_SENTENCE_END)
SENTENCE_ENDS = (SENTENCE_END, MWT_SENTENCE_END)


@dataclass(frozen=True)
class Token:
    """A token of the running text: ``text[start:end]``, the forms of its
    words (one for a plain token), and whether a sentence ends with it."""

    start: int
    end: int
    words: tuple[str, ...]
    sentence_end: bool


@dataclass
class LabelledText:
    """A treebank's running text, its tokens and one label per character."""

    text: str
    tokens: list[Token]
    labels: np.ndarray

    @property
    def forms_and_words(self) -> list[tuple[str, tuple[str, ...]]]:
        """``(form, words)`` of each token, in order."""
        return [(self.text[t.start:t.end], t.words) for t in self.tokens]


def token_words(sentence: Sentence) -> list[tuple[str, dict, tuple[str, ...]]]:
    """``(form, MISC, words)`` of each token of a sentence as written in the
    text (:func:`kgparser.io.rawtext.surface_tokens`), with the forms of its words."""
    ranges = {first: last for first, last, _ in sentence.multiword_tokens}
    tokens = []
    first = 1
    for form, misc in surface_tokens(sentence):
        last = ranges.get(first, first)
        tokens.append((form, misc, tuple(sentence.forms[first - 1:last])))
        first = last + 1
    return tokens


def labelled_text(sentences: Sequence[Sentence]) -> LabelledText:
    """The running text of ``sentences`` (exactly :func:`kgparser.io.rawtext.text_of`'s)
    with its tokens and character labels."""
    pieces: list[str] = []
    length = 0
    tokens: list[Token] = []
    for sentence in sentences:
        if pieces and _starts_paragraph(sentence) and pieces[-1] == " ":
            pieces[-1] = "\n\n"
            length += 1
        words = token_words(sentence)
        for index, (form, misc, forms) in enumerate(words):
            if index == 0 and "SpacesBefore" in misc and not pieces:
                pieces.append(unescape(misc["SpacesBefore"]))
                length += len(pieces[-1])
            tokens.append(Token(length, length + len(form), forms, index == len(words) - 1))
            after = _after(misc)
            pieces += [form, after]
            length += len(form) + len(after)
    text = "".join(pieces)
    return LabelledText(text, tokens, character_labels(len(text), tokens))


def character_labels(length: int, tokens: Sequence[Token]) -> np.ndarray:
    """The label of each of ``length`` characters (see the module docstring)."""
    labels = np.full(length, OUTSIDE, dtype=np.int64)
    for token in tokens:
        labels[token.start:token.end - 1] = INSIDE
        labels[token.end - 1] = end_label(len(token.words) > 1, token.sentence_end)
    return labels


def end_label(multiword: bool, sentence_end: bool) -> int:
    """The label of a token's last character."""
    return (MWT_SENTENCE_END if multiword else SENTENCE_END) if sentence_end else (
        MWT_END if multiword else TOKEN_END)
