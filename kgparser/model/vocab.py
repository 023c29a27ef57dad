"""Vocabularies: string <-> index maps stored as plain lists in checkpoints.

Index 0 is padding and index 1 the unknown item in every vocabulary that has
them; the word and tag vocabularies also reserve index 2 for the artificial
ROOT token the model prepends to every sentence.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

from ..lemma import LemmaLexicon, apply_class, lemma_class

PAD, UNK, ROOT_TOKEN = "<pad>", "<unk>", "<root>"
PAD_ID, UNK_ID, ROOT_ID = 0, 1, 2

_DIGITS = re.compile(r"\d")


def normalize_form(form: str) -> str:
    """Lower-cased form with every digit replaced by 0 (second lookup key)."""
    return _DIGITS.sub("0", form.lower())


class Vocab:
    """An ordered list of items with counts; unknown items map to :data:`UNK_ID`."""

    def __init__(self, items: Sequence[str], counts: Sequence[int] | None = None,
                 specials: Sequence[str] = (PAD, UNK, ROOT_TOKEN)):
        self.specials = list(specials)
        self.items = list(specials) + [i for i in items if i not in set(specials)]
        self.index = {item: i for i, item in enumerate(self.items)}
        if len(self.index) != len(self.items):
            raise ValueError("duplicate vocabulary items")
        counts = list(counts) if counts is not None else [0] * (len(self.items) - len(self.specials))
        self.counts = [0] * len(self.specials) + counts

    @classmethod
    def build(cls, values: Iterable[str], min_count: int = 1,
              specials: Sequence[str] = (PAD, UNK, ROOT_TOKEN)) -> Vocab:
        """Items seen at least ``min_count`` times, most frequent first (ties by name)."""
        counter = Counter(values)
        for special in specials:
            counter.pop(special, None)
        kept = sorted((item for item, c in counter.items() if c >= min_count), key=lambda i: (-counter[i], i))
        return cls(kept, [counter[i] for i in kept], specials)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, item: str) -> bool:
        return item in self.index

    def get(self, item: str) -> int:
        return self.index.get(item, UNK_ID if UNK in self.index else -1)

    def to_data(self) -> dict:
        return {"items": self.items[len(self.specials):], "counts": self.counts[len(self.specials):],
                "specials": self.specials}

    @classmethod
    def from_data(cls, data: dict) -> Vocab:
        return cls(data["items"], data["counts"], data["specials"])


class Vocabularies:
    """Everything the model maps to indices: words, tags, characters, labels, and the
    classes of every column the joint tagger predicts (``tag_columns``: column name ->
    Vocab; empty without a tagger, and absent from older checkpoints), and with a
    LEMMA column the training words' :class:`~kgparser.lemma.LemmaLexicon` (absent
    from checkpoints before it: the tagger's best class is then taken as it is)."""

    def __init__(self, words: Vocab, tags: Vocab, chars: Vocab, labels: Vocab,
                 tag_columns: dict[str, Vocab] | None = None, lexicon: LemmaLexicon | None = None):
        self.words, self.tags, self.chars, self.labels = words, tags, chars, labels
        self.tag_columns = dict(tag_columns or {})
        self.lexicon = lexicon

    @classmethod
    def from_sentences(cls, sentences, pos: str = "upos", normalize_words: bool = False,
                       tag_columns: Sequence[str] = ()) -> Vocabularies:
        """Vocabularies of a training set; ``normalize_words``: the word vocabulary holds
        normalized forms (:func:`normalize_form`), the character vocabulary the forms' own.
        ``tag_columns``: the columns to predict; one the data never fills gets no vocabulary."""
        forms = [f for s in sentences for f in s.forms]
        tags = [t for s in sentences for t in getattr(s, pos) if t is not None]
        labels = [d for s in sentences for d in s.deprels[1:] if d is not None]
        columns = {column: _column_vocab(sentences, column) for column in tag_columns}
        columns = {column: vocab for column, vocab in columns.items() if len(vocab) > len(vocab.specials)}
        lexicon = LemmaLexicon.from_sentences(sentences) if "lemma" in columns else None
        return cls(
            Vocab.build(map(normalize_form, forms) if normalize_words else forms),
            Vocab.build(tags),
            Vocab.build((c for f in forms for c in f), specials=(PAD, UNK, ROOT_TOKEN)),
            Vocab.build(labels, specials=()),
            columns,
            lexicon,
        )

    def to_data(self) -> dict:
        data = {name: getattr(self, name).to_data() for name in ("words", "tags", "chars", "labels")}
        if self.tag_columns:  # checkpoints without a tagger stay as they were
            data["tag_columns"] = {column: vocab.to_data() for column, vocab in self.tag_columns.items()}
        if self.lexicon is not None:
            data["lemma_lexicon"] = self.lexicon.to_data()
        return data

    @classmethod
    def from_data(cls, data: dict) -> Vocabularies:
        columns = {column: Vocab.from_data(d) for column, d in data.get("tag_columns", {}).items()}
        words, tags, chars, labels = (Vocab.from_data(data[name]) for name in ("words", "tags", "chars", "labels"))
        lexicon = LemmaLexicon.from_data(data["lemma_lexicon"]) if "lemma_lexicon" in data else None
        return cls(words, tags, chars, labels, columns, lexicon)


#: FEATS of a word without features: in UD an empty set, written ``_``
EMPTY_FEATS = "_"


def column_values(sentence, column: str) -> list:
    """Word ``column`` values of a sentence as the tagger learns them: UPOS and XPOS
    with None for ``_`` (unknown), FEATS with ``_`` kept as a class (no features),
    LEMMA as the edit script of the word's form (:mod:`kgparser.lemma`), None for ``_``."""
    values = getattr(sentence, column)
    if column == "lemma":
        return [None if lemma is None else lemma_class(form, lemma) for form, lemma in zip(sentence.forms, values)]
    return [v or EMPTY_FEATS for v in values] if column == "feats" else values


def column_value(column: str, item: str, form: str) -> str:
    """The value a word of ``form`` gets from the tagger's class ``item`` of
    ``column`` (:func:`column_values` the other way): the lemma the edit script
    gives the form, for the other columns the class itself."""
    return apply_class(item, form) if column == "lemma" else item


def _column_vocab(sentences, column: str) -> Vocab:
    """Classes of one predicted column; FEATS only if some training word has features
    (a treebank without FEATS would otherwise teach the tagger that every word has none)."""
    if column == "feats" and not any(f for s in sentences for f in s.feats):
        return Vocab.build(())
    return Vocab.build(t for s in sentences for t in column_values(s, column) if t is not None)
