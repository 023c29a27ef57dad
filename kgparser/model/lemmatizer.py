"""The lemmatizer: the LEMMA class of each word the lemma dictionary does not know.

The joint tagger's LEMMA head (:mod:`kgparser.model.tagger`) is one linear
layer on vectors the parser's loss trains: with its gradient stopped there
(``model.tagger.lemma_gradient: false``) it cannot cost the parse, and it has
no capacity of its own to spell out an unseen word's ending.  Seen words take
their training lemma from the dictionary (:class:`kgparser.lemma.LemmaLexicon`),
so the words left to a classifier are the unseen ones, where UDPipe 2's
lemmatizer reads character embeddings of the word beside the shared BiLSTM
(Straka 2018, "UDPipe 2.0 Prototype at CoNLL 2018 UD Shared Task", section
3.2) and Stanza's has a character model of its own (Qi et al. 2020, section
2.3).  This one reads what the LEMMA head reads (the lower BiLSTM vector and
the parser's character vector of the word, detached) and the final states of
its own character BiLSTM over the word, through a tanh hidden layer; its
classes are the LEMMA head's (edit scripts, :mod:`kgparser.lemma`).

It is trained as a stage of its own after the parser (:mod:`kgparser.training.lemma_stage`),
on the finished network's vectors, and applied only to the words the
dictionary does not know (:func:`kgparser.model.tagger.best_tags`).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from ..config import LemmatizerConfig

#: character ids: padding, a character not in the vocabulary
PAD, UNKNOWN = 0, 1


class Lemmatizer(nn.Module):
    """Scores ``[words, classes]`` of the LEMMA classes from each word's
    tagger-input vector (``in_dim``) and its characters."""

    def __init__(self, config: LemmatizerConfig, characters: Sequence[str], in_dim: int, classes: int):
        super().__init__()
        self.characters = list(characters)
        self.index = {char: i + UNKNOWN + 1 for i, char in enumerate(self.characters)}
        self.in_dim, self.classes = in_dim, classes
        self.char_emb = nn.Embedding(len(self.characters) + UNKNOWN + 1, config.char_dim, padding_idx=PAD)
        self.char_lstm = nn.LSTM(config.char_dim, config.char_hidden, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(config.dropout)
        self.hidden = nn.Linear(in_dim + 2 * config.char_hidden, config.hidden)
        self.out = nn.Linear(config.hidden, classes)

    @classmethod
    def for_forms(cls, config: LemmatizerConfig, forms: Iterable[str], in_dim: int, classes: int) -> Lemmatizer:
        """A new lemmatizer whose characters are those of ``forms`` (the training words)."""
        return cls(config, sorted({char for form in forms for char in form}), in_dim, classes)

    def forward(self, vectors: torch.Tensor, forms: Sequence[str]) -> torch.Tensor:
        """Scores of the words ``forms`` whose tagger-input vectors are ``vectors``
        ``[words, in_dim]``; each distinct form's characters are read once."""
        rows: dict[str, int] = {}
        which = torch.tensor([rows.setdefault(form, len(rows)) for form in forms], dtype=torch.int64,
                             device=vectors.device)
        chars = self.char_vectors(list(rows))[which]
        hidden = torch.tanh(self.hidden(self.dropout(torch.cat([vectors, chars], dim=1))))
        return self.out(self.dropout(hidden))

    def char_vectors(self, forms: Sequence[str]) -> torch.Tensor:
        """Final states of the character BiLSTM, forward and backward, ``[forms, 2 * char_hidden]``."""
        ids = [[self.index.get(char, UNKNOWN) for char in form] or [UNKNOWN] for form in forms]
        lengths = torch.tensor([len(word) for word in ids], dtype=torch.int64)
        padded = torch.zeros(len(ids), int(lengths.max()), dtype=torch.int64)
        for i, word in enumerate(ids):
            padded[i, :len(word)] = torch.tensor(word, dtype=torch.int64)
        device = self.char_emb.weight.device
        packed = pack_padded_sequence(self.char_emb(padded.to(device)), lengths, batch_first=True,
                                      enforce_sorted=False)
        _, (h_n, _) = self.char_lstm(packed)
        return torch.cat([h_n[0], h_n[1]], dim=1)

    def to_data(self) -> dict:
        """Plain data for a checkpoint, which holds the config apart (the run's ``lemmatizer`` block)."""
        return {"characters": self.characters, "in_dim": self.in_dim, "classes": self.classes,
                "weights": {name: tensor.detach().cpu().clone() for name, tensor in self.state_dict().items()}}

    @classmethod
    def from_data(cls, data: dict, config: LemmatizerConfig) -> Lemmatizer:
        """The lemmatizer of :meth:`to_data`, built as ``config`` says, in evaluation mode."""
        lemmatizer = cls(config, data["characters"], data["in_dim"], data["classes"])
        lemmatizer.load_state_dict(data["weights"])
        return lemmatizer.eval()
