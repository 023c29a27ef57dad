"""The joint tagger: one softmax head per predicted column (UPOS, XPOS, FEATS,
LEMMA) on the BiLSTM the parser reads, trained together with the parser.

This is the multi-task design of UDPipe 2 (Straka 2018, "UDPipe 2.0 Prototype at
CoNLL 2018 UD Shared Task", section 3.2: taggers and parser share the BiLSTM and
are trained with the sum of their losses), which lets one checkpoint tag and
parse text without gold tags.  FEATS is predicted as one class per distinct
whole string, as UDPipe 1 does (Straka, Hajič & Straková 2016): simple, and
the feature combinations of a treebank are few.  LEMMA is predicted as the edit
script that turns the word's form into its lemma (:mod:`kgparser.lemma`),
as UDPipe does: a few hundred classes on a treebank (625 on English EWT).

Class ``c`` of a column is item ``c + TAG_CLASS_OFFSET`` of its vocabulary: the
padding, unknown and ROOT entries are never predicted.  For the column the
parser reads (``model.pos``) the vocabulary is the tag embedding's, so a
predicted class indexes the embedding table directly (see
:meth:`kgparser.model.network.Network.encode_all`).
"""
from __future__ import annotations

from typing import Sequence, cast

import torch
from torch import nn

from .vocab import ROOT_ID, column_value, column_values

#: the columns the tagger can predict, in the order they are reported
TAG_COLUMNS = ("upos", "xpos", "feats", "lemma")
#: vocabulary id of class 0: padding, unknown and ROOT come first
TAG_CLASS_OFFSET = ROOT_ID + 1
#: target of a row the loss skips (ROOT, a word without a gold tag)
IGNORED = -100


class TagHeads(nn.Module):
    """One classifier per column over BiLSTM vectors: a linear layer, or with
    ``hidden`` > 0 a tanh hidden layer of that size first.  The columns of
    ``char_columns`` also read each word's character vector of ``char_dim``."""

    def __init__(self, dim: int, classes: dict[str, int], hidden: int, char_columns: Sequence[str] = (),
                 char_dim: int = 0, detached: Sequence[str] = ()):
        super().__init__()
        self.char_columns = frozenset(char_columns) & set(classes)
        #: the columns whose loss does not reach the shared layers below the head
        self.detached = frozenset(detached) & set(classes)
        self.heads = nn.ModuleDict({column: _head(dim + (char_dim if column in self.char_columns else 0), n, hidden)
                                    for column, n in classes.items()})

    def forward(self, vectors: torch.Tensor, chars: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Scores ``[..., classes]`` of each column for vectors ``[..., dim]`` (and the
        character vectors ``[..., char_dim]`` of the same words, for the columns that read them)."""
        both = torch.cat([vectors, chars], dim=-1) if chars is not None and self.char_columns else vectors
        scores = {}
        for column, head in self.heads.items():
            read = both if column in self.char_columns else vectors
            scores[column] = head(read.detach() if column in self.detached else read)
        return scores


def _head(dim: int, classes: int, hidden: int) -> nn.Module:
    if not hidden:
        return nn.Linear(dim, classes)
    return nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, classes))


def tag_targets(model, sentences: Sequence) -> dict[str, torch.Tensor]:
    """Gold class of every token row of :meth:`Network.encode_all` (ROOT first in each
    sentence), per predicted column; :data:`IGNORED` for ROOT and for words whose
    tag is ``_`` or unknown to the vocabulary."""
    targets = {}
    for column, vocab in model.vocabs.tag_columns.items():
        index = vocab.index
        rows: list[int] = []
        for sentence in sentences:
            rows.append(IGNORED)
            rows.extend(index[v] - TAG_CLASS_OFFSET if v in index else IGNORED
                        for v in column_values(sentence, column))
        targets[column] = torch.tensor(rows, dtype=torch.int64, device=model.device)
    return targets


def tagging_loss(scores: dict[str, torch.Tensor], targets: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
    """Cross-entropy summed over the words and columns, and the number of words scored."""
    total = sum(nn.functional.cross_entropy(scores[column], target, ignore_index=IGNORED, reduction="sum")
                for column, target in targets.items())
    # a tensor: a model with a tagger predicts at least one column
    return cast(torch.Tensor, total), sum(int((target != IGNORED).sum()) for target in targets.values())


def best_tags(model, scores: dict[str, torch.Tensor], sentences: Sequence,
              lemma_inputs: torch.Tensor | None = None) -> list[dict[str, list[str]]]:
    """Per sentence, the best tag of each of its words in every predicted column
    (``scores``: :meth:`Network.tag_scores` of the batch ``sentences``); a
    lemma is its best edit script applied to the word's form, or with the
    vocabularies' lexicon what :meth:`~kgparser.lemma.LemmaLexicon.lemma` gives,
    the classes of unseen words ranked by the model's lemmatizer where it has
    one (``lemma_inputs``: :meth:`Network.lemma_inputs` of the batch)."""
    columns = {column: (vocab.items, scores[column].argmax(1).tolist())
               for column, vocab in model.vocabs.tag_columns.items()}
    result, start = [], 0
    for sentence in sentences:
        words = range(start + 1, start + sentence.n + 1)  # row ``start`` is ROOT
        result.append({column: [column_value(column, items[best[row] + TAG_CLASS_OFFSET], form)
                                for row, form in zip(words, sentence.forms)]
                       for column, (items, best) in columns.items()})
        start += sentence.n + 1
    lexicon = model.vocabs.lexicon
    if lexicon is not None and "lemma" in columns:
        ranker = _lemma_ranker(model, scores["lemma"], lemma_inputs)
        _lexicon_lemmas(lexicon, columns["lemma"][0], ranker, sentences, result)
    return result


#: how many of the tagger's best lemma classes the lexicon looks through for an unseen word
LEMMA_CANDIDATES = 32


def _lemma_ranker(model, scores: torch.Tensor, lemma_inputs: torch.Tensor | None):
    """A function of the score rows and forms of unseen words giving each one's
    :data:`LEMMA_CANDIDATES` best classes: the lemmatizer's where the model has one, else the LEMMA head's."""
    count = min(LEMMA_CANDIDATES, scores.shape[1])
    if model.lemmatizer is not None and lemma_inputs is not None:
        lemmatizer = model.lemmatizer

        def ranked(rows: torch.Tensor, forms: list[str]) -> list[list[int]]:
            with torch.no_grad():
                return lemmatizer(lemma_inputs.index_select(0, rows), forms).topk(count, dim=1).indices.tolist()
    else:
        def ranked(rows: torch.Tensor, forms: list[str]) -> list[list[int]]:
            return scores.index_select(0, rows).topk(count, dim=1).indices.tolist()
    return ranked


def _lexicon_lemmas(lexicon, items: list[str], ranked, sentences: Sequence,
                    result: list[dict[str, list[str]]]) -> None:
    """Replace each word's lemma in ``result`` by the lexicon's: a seen word's
    training lemma (by its predicted UPOS where the tagger predicts it), else the
    best of its :data:`LEMMA_CANDIDATES` classes (``ranked``) that fits the form,
    else the best class (:meth:`~kgparser.lemma.LemmaLexicon.decided`)."""
    unseen: list[tuple[list[str], int, str, int]] = []  # (lemmas, word, form, score row)
    start = 0
    for sentence, tags in zip(sentences, result):
        lemmas, upos = tags["lemma"], tags.get("upos", [None] * sentence.n)
        for i, form in enumerate(sentence.forms):
            known = lexicon.known(form, upos[i])
            if known is not None:
                lemmas[i] = known
            else:
                unseen.append((lemmas, i, form, start + 1 + i))
        start += sentence.n + 1
    if not unseen:
        return
    rows = torch.tensor([row for *_, row in unseen], dtype=torch.int64)
    for (lemmas, i, form, _), classes in zip(unseen, ranked(rows, [form for _, _, form, _ in unseen])):
        lemmas[i] = lexicon.decided(form, [items[c + TAG_CLASS_OFFSET] for c in classes])
