"""The character model and the tokenizer that applies it.

Each character is read as its lower-cased form (a vocabulary of the
training text's characters, with an unknown entry) and its class (upper or
lower case letter, digit, punctuation, the space, other white space, ...),
so that case is one learned feature rather than a doubled vocabulary;
control characters and lone surrogates are white space, as
:mod:`kgparser.io.rawtext` has them (no token holds one).  A BiLSTM over the
characters and a linear layer give each character's label
(:mod:`kgparser.tokenize.data`), as in UDPipe's tokenizer (Straka &
Straková 2017: character embeddings, a bidirectional GRU, per-character
classes) and Stanza's (Qi et al. 2020: a BiLSTM over characters with
features such as case).

A paragraph is read in chunks of :attr:`TokenizerConfig.window` characters,
each with :attr:`TokenizerConfig.context` characters of the text on either
side (a boundary symbol where the paragraph begins or ends), so any text
length costs linear time and bounded memory; all chunks of all paragraphs
run as one packed batch, and each chunk's labels depend on its own
characters only, whatever else is in the batch.  Encoding the characters,
chunking and decoding the labels into tokens are array operations: there is
no Python loop over characters.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import numpy as np
import torch
from torch import nn

from ..config import TokenizerConfig
from ..io.rawtext import NONSPACE_CONTROL, Word
from .data import ENDS, INSIDE, MWT_ENDS, MWT_SENTENCE_END, OUTSIDE, SENTENCE_END, SENTENCE_ENDS
from .mwt import MultiwordExpander

#: input symbols: padding (none), a paragraph's edge, a character not in the vocabulary
PAD, BOUNDARY, UNKNOWN = 0, 1, 2
#: character classes (index 0 is padding, and a paragraph's edge)
CLASSES = ("pad", "space", "other white space", "upper", "lower", "other letter", "digit",
           "punctuation", "symbol", "mark", "other")
SPACE, OTHER_SPACE = 1, 2
_CATEGORY_CLASS = {"Lu": 3, "Lt": 3, "Ll": 4, "Lm": 5, "Lo": 5, "Nd": 6, "Nl": 6, "No": 6,
                   "P": 7, "S": 8, "M": 9}
#: the code points whose class and lower case are tabulated; the others are "other" and themselves
_TABULATED = 0x10000
N_LABELS = MWT_SENTENCE_END + 1


@lru_cache(maxsize=1)
def _tables() -> tuple[np.ndarray, np.ndarray]:
    """The class and the lower-cased code point of each tabulated code point."""
    classes = np.full(_TABULATED, len(CLASSES) - 1, dtype=np.int64)
    lower = np.arange(_TABULATED, dtype=np.int64)
    for code in range(_TABULATED):
        char = chr(code)
        category = unicodedata.category(char)
        classes[code] = (SPACE if char == " " else OTHER_SPACE if _unwritable(char, category)
                         else _CATEGORY_CLASS.get(category, _CATEGORY_CLASS.get(category[0], len(CLASSES) - 1)))
        low = char.lower()
        if len(low) == 1:
            lower[code] = ord(low)
    return classes, lower


def _unwritable(char: str, category: str) -> bool:
    """Whether a character is white space to the tokenizer: white space,
    control characters (as :func:`kgparser.io.rawtext.whitespace_view` has them)
    and lone surrogates, which no word may hold."""
    return char.isspace() or bool(NONSPACE_CONTROL.match(char)) or category == "Cs"


def code_points(text: str) -> np.ndarray:
    """The code points of ``text``, one array operation."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.int64)


def character_features(text: str) -> tuple[np.ndarray, np.ndarray]:
    """The lower-cased code point and the class of each character of ``text``."""
    points = code_points(text)
    classes, lower = _tables()
    tabulated = points < _TABULATED
    inside = np.where(tabulated, points, 0)
    return np.where(tabulated, lower[inside], points), np.where(tabulated, classes[inside], len(CLASSES) - 1)


class CharacterVocabulary:
    """Lower-cased code points -> input symbols (unknown for the others)."""

    def __init__(self, points: list[int]):
        self.points = np.array(sorted(points), dtype=np.int64)

    @classmethod
    def of(cls, text: str, min_count: int) -> CharacterVocabulary:
        lowered, _ = character_features(text)
        values, counts = np.unique(lowered, return_counts=True)
        return cls(values[counts >= min_count].tolist())

    def __len__(self) -> int:
        return len(self.points) + UNKNOWN + 1

    def symbols(self, lowered: np.ndarray) -> np.ndarray:
        where = np.searchsorted(self.points, lowered)
        found = where < len(self.points)
        found[found] = self.points[where[found]] == lowered[found]
        return np.where(found, where + UNKNOWN + 1, UNKNOWN)


class CharacterTagger(nn.Module):
    """Characters (symbol, class) -> label scores: embeddings, a BiLSTM, a linear layer."""

    def __init__(self, n_symbols: int, config: TokenizerConfig):
        super().__init__()
        self.chars = nn.Embedding(n_symbols, config.char_dim, padding_idx=PAD)
        self.classes = nn.Embedding(len(CLASSES), config.class_dim, padding_idx=PAD)
        self.dropout = nn.Dropout(config.dropout)
        self.lstm = nn.LSTM(config.char_dim + config.class_dim, config.hidden, num_layers=config.layers,
                            batch_first=True, bidirectional=True,
                            dropout=config.dropout if config.layers > 1 else 0.0)
        self.output = nn.Linear(2 * config.hidden, N_LABELS)

    def forward(self, symbols: torch.Tensor, classes: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Scores ``(chunks, length, labels)`` of padded chunks of the given lengths."""
        inputs = self.dropout(torch.cat([self.chars(symbols), self.classes(classes)], dim=-1))
        packed = nn.utils.rnn.pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
        states, _ = self.lstm(packed)
        states, _ = nn.utils.rnn.pad_packed_sequence(states, batch_first=True, total_length=symbols.shape[1])
        return self.output(self.dropout(states))


@dataclass
class Chunks:
    """Padded chunks of paragraphs: ``symbols`` and ``classes`` ``(chunks,
    length)``, ``lengths``; and where each chunk's labelled characters lie:
    in the chunk from ``first`` on, ``count`` of them, from ``source`` in the
    concatenated paragraphs."""

    symbols: np.ndarray
    classes: np.ndarray
    lengths: np.ndarray
    first: np.ndarray
    count: np.ndarray
    source: np.ndarray

    def batches(self, size: int, order: np.ndarray):
        """Tensors of ``size`` chunks at a time (in ``order``), and their indices."""
        for at in range(0, len(order), size):
            index = order[at:at + size]
            width = int(self.lengths[index].max())
            yield index, (torch.from_numpy(self.symbols[index, :width]), torch.from_numpy(self.classes[index, :width]),
                          torch.from_numpy(self.lengths[index]))


def make_chunks(symbols: np.ndarray, classes: np.ndarray, paragraph_lengths: list[int], window: int,
                context: int, shifts: np.ndarray | None = None) -> Chunks:
    """Chunks of the paragraphs whose characters (``symbols``, ``classes``)
    are concatenated: each labels ``window`` characters (fewer at a
    paragraph's end; the first chunk of paragraph i fewer by ``shifts[i]``,
    so that training sees other cuts each epoch) and reads ``context`` more
    on either side, a boundary symbol marking the paragraph's edges."""
    starts, stops, first, last = [], [], [], []
    offset = 0
    for index, length in enumerate(paragraph_lengths):
        if length:
            shift = 0 if shifts is None else int(shifts[index]) % window
            cuts = np.arange(-shift, length, window)
            cuts[0] = 0
            starts.append(offset + cuts)
            stops.append(offset + np.append(cuts[1:], length))
            first.append(np.full(len(cuts), offset))
            last.append(np.full(len(cuts), offset + length))
        offset += length
    if not starts:
        empty = np.zeros(0, dtype=np.int64)
        return Chunks(np.zeros((0, 0), np.int64), np.zeros((0, 0), np.int64), empty, empty, empty, empty)
    start_at, stop_at, first_at, last_at = map(np.concatenate, (starts, stops, first, last))
    return _gather(symbols, classes, start_at, stop_at, first_at, last_at, context)


def _gather(symbols, classes, starts, stops, para_starts, para_ends, context) -> Chunks:
    """The padded chunk arrays (see :func:`make_chunks`)."""
    read_from = np.maximum(starts - context, para_starts)
    read_to = np.minimum(stops + context, para_ends)
    opens = read_from == para_starts
    closes = read_to == para_ends
    lengths = read_to - read_from + opens + closes
    width = int(lengths.max())
    positions = read_from[:, None] - opens[:, None] + np.arange(width)[None, :]
    valid = np.arange(width)[None, :] < lengths[:, None]
    text_part = valid & (positions >= read_from[:, None]) & (positions < read_to[:, None])
    clipped = np.clip(positions, 0, len(symbols) - 1)
    chunk_symbols = np.where(text_part, symbols[clipped], np.where(valid, BOUNDARY, PAD))
    chunk_classes = np.where(text_part, classes[clipped], PAD)
    return Chunks(chunk_symbols.astype(np.int64), chunk_classes.astype(np.int64), lengths.astype(np.int64),
                  (starts - read_from + opens).astype(np.int64), (stops - starts).astype(np.int64), starts)


class Tokenizer:
    """Raw text -> sentences of tokens (see the module docstring)."""

    def __init__(self, config: TokenizerConfig, vocabulary: CharacterVocabulary, tagger: CharacterTagger,
                 expander: MultiwordExpander):
        self.config = config
        self.vocabulary = vocabulary
        self.tagger = tagger
        self.expander = expander

    def encode(self, paragraphs: list[str]) -> tuple[np.ndarray, np.ndarray, str]:
        """Symbols and classes of the concatenated paragraphs, and their text."""
        text = "".join(paragraphs)
        lowered, classes = character_features(text)
        return self.vocabulary.symbols(lowered), classes, text

    def scores(self, paragraphs: list[str], batch: int = 64) -> tuple[np.ndarray, np.ndarray, str]:
        """Label scores ``(characters, labels)`` of the concatenated paragraphs, their
        classes and text; ``batch`` chunks per BiLSTM call (64 keep its working set in
        the cache: 0.61 s for EWT's test text on one thread, against 0.86 s with 256)."""
        symbols, classes, text = self.encode(paragraphs)
        chunks = make_chunks(symbols, classes, [len(p) for p in paragraphs], self.config.window, self.config.context)
        result = np.zeros((len(text), N_LABELS), dtype=np.float32)
        self.tagger.eval()
        with torch.inference_mode():
            for index, tensors in chunks.batches(batch, np.argsort(-chunks.lengths, kind="stable")):
                out = self.tagger(*tensors).numpy()
                for row, chunk in zip(out, index):
                    first, count, source = chunks.first[chunk], chunks.count[chunk], chunks.source[chunk]
                    result[source:source + count] = row[first:first + count]
        return result, classes, text

    def labels(self, paragraphs: list[str]) -> tuple[np.ndarray, np.ndarray, str]:
        """The decoded label of each character of the concatenated paragraphs
        (:func:`decode_labels`, paragraph by paragraph), their classes and text."""
        scores, classes, text = self.scores(paragraphs)
        bounds = np.cumsum([0] + [len(p) for p in paragraphs])
        labels = [decode_labels(scores[a:b], classes[a:b]) for a, b in pairwise(bounds)]
        return np.concatenate(labels) if labels else np.zeros(0, dtype=np.int64), classes, text

    def segment(self, paragraphs: list[str], offsets: Sequence[int] | None = None) -> list[list[list[Word]]]:
        """For each paragraph text: its sentences, each a list of tokens
        (:class:`~kgparser.io.rawtext.Word`: form, ``start`` and ``end`` in the
        paragraph, plus its offset in ``offsets`` where given, and for a
        multiword token the forms of its ``words``).  Tokens hold no white
        space but single spaces where the training text has tokens with
        spaces; what lies between tokens is white space; the last token of a
        paragraph ends a sentence."""
        labels, classes, text = self.labels(paragraphs)
        result = []
        start = 0
        for index, paragraph in enumerate(paragraphs):
            stop = start + len(paragraph)
            result.append(self._sentences(text[start:stop], labels[start:stop], classes[start:stop],
                                          offsets[index] if offsets is not None else 0))
            start = stop
        return result

    def _sentences(self, text: str, labels: np.ndarray, classes: np.ndarray, offset: int) -> list[list[Word]]:
        """The sentences of one paragraph (placed ``offset`` on), from its characters' labels."""
        spans = token_spans(labels, classes)
        sentences: list[list[Word]] = []
        current: list[Word] = []
        for start, end in spans.tolist():
            label = labels[end - 1]
            form = text[start:end]
            words = self.expander.expand(form) if self.expander.is_multiword(form, label in MWT_ENDS) else ()
            current.append(Word(form, offset + start, offset + end, words=words if len(words) > 1 else ()))
            if label in SENTENCE_ENDS:
                sentences.append(current)
                current = []
        if current:
            sentences.append(current)
        return sentences

    def to_data(self) -> dict:
        """Plain data (tensors, lists, strings) for a checkpoint, which holds the
        config apart (the run's ``tokenizer`` block); see :meth:`from_data`."""
        return {"characters": self.vocabulary.points.tolist(),
                "weights": {name: tensor.detach().clone() for name, tensor in self.tagger.state_dict().items()},
                "multiword": self.expander.to_data()}

    @classmethod
    def from_data(cls, data: dict, config: TokenizerConfig) -> Tokenizer:
        """The tokenizer of :meth:`to_data`, built as ``config`` says."""
        vocabulary = CharacterVocabulary(data["characters"])
        tagger = CharacterTagger(len(vocabulary), config)
        tagger.load_state_dict(data["weights"])
        tagger.eval()
        return cls(config, vocabulary, tagger, MultiwordExpander.from_data(data["multiword"]))


def decode_labels(scores: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Each character's label: the best one it can have.  A space (U+0020)
    is inside a token only between two of its characters (a token with
    spaces), else outside, as other white space always is; any other
    character is inside or ends a token, and ends one where what follows
    is outside it; the last of the text ends a sentence."""
    if not len(scores):
        return np.zeros(0, dtype=np.int64)
    allowed = np.zeros((len(CLASSES), N_LABELS), dtype=bool)
    allowed[:, [INSIDE, *ENDS]] = True
    allowed[SPACE] = False
    allowed[SPACE, [OUTSIDE, INSIDE]] = True
    allowed[OTHER_SPACE] = False
    allowed[OTHER_SPACE, OUTSIDE] = True
    labels = np.where(allowed[classes], scores, -np.inf).argmax(axis=1)
    solid = classes > OTHER_SPACE
    continued = np.concatenate([[False], solid[:-1] & (labels[:-1] == INSIDE)])
    labels[(classes == SPACE) & ~(continued & np.append(solid[1:], False))] = OUTSIDE
    best_end = np.array(ENDS)[scores[:, list(ENDS)].argmax(axis=1)]
    cut = solid & (labels == INSIDE) & np.append(labels[1:] == OUTSIDE, True)
    labels[cut] = best_end[cut]
    if solid.any():
        last = np.flatnonzero(solid)[-1]
        labels[last] = MWT_SENTENCE_END if labels[last] in MWT_ENDS else SENTENCE_END
    return labels


def token_spans(labels: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """``(start, end)`` of each token of decoded ``labels``: from the first
    character that is not white space after a token's end to the next end."""
    ends = np.flatnonzero(np.isin(labels, ENDS)) + 1
    solid = np.flatnonzero(classes > OTHER_SPACE)
    starts = solid[np.searchsorted(solid, np.concatenate([[0], ends[:-1]]))] if len(ends) else ends
    return np.stack([starts, ends], axis=1)
