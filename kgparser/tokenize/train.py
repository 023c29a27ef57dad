"""Training the tokenizer on a treebank's running text
(:func:`train_tokenizer`), as UDPipe's and Stanza's tokenizers are trained
(Straka & Straková 2017; Qi et al. 2020): the characters of chunks of the
text's paragraphs, cut at other places each epoch, against their labels
(:mod:`kgparser.tokenize.data`), cross-entropy and Adam; after each epoch
the development text's token, sentence and multiword-token ends are
scored and the best epoch is kept (early stopping after
:attr:`TokenizerConfig.patience` epochs without a better one).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..errors import KgparserError
from ..io.conllu import Sentence
from ..io.rawtext import paragraph_spans
from .data import ENDS, MWT_ENDS, SENTENCE_ENDS, LabelledText, labelled_text
from .model import CharacterTagger, CharacterVocabulary, Chunks, Tokenizer, TokenizerConfig, make_chunks
from .mwt import MultiwordExpander

#: a target the loss leaves out (context characters, padding)
IGNORED = -100


@dataclass
class Paragraphs:
    """The paragraphs of a labelled text (as :class:`~kgparser.io.rawtext.RawReader`
    cuts raw text: at blank lines, white space around them left out): their
    texts and their characters' labels, concatenated."""

    texts: list[str]
    labels: np.ndarray

    @classmethod
    def of(cls, data: LabelledText) -> Paragraphs:
        spans = paragraph_spans(data.text)
        labels = [data.labels[start:end] for start, end in spans]
        return cls([data.text[start:end] for start, end in spans],
                   np.concatenate(labels) if labels else np.zeros(0, dtype=np.int64))


def train_tokenizer(train: Sequence[Sentence], dev: Sequence[Sentence] | None = None,
                    config: TokenizerConfig | None = None, log: Callable[[str], None] = print) -> Tokenizer:
    """A tokenizer trained on the running text of ``train``, the epoch that
    scores best on ``dev`` kept (the last one without ``dev``)."""
    config = config or TokenizerConfig()
    if config.epochs < 1:
        raise KgparserError(f"tokenizer epochs: must be at least 1, got {config.epochs}")
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    data = labelled_text(train)
    vocabulary = CharacterVocabulary.of(data.text, config.min_char_count)
    tokenizer = Tokenizer(config, vocabulary, CharacterTagger(len(vocabulary), config),
                          MultiwordExpander.learn(data.forms_and_words))
    paragraphs = Paragraphs.of(data)
    development = Paragraphs.of(labelled_text(dev)) if dev else None
    optimizer = torch.optim.Adam(tokenizer.tagger.parameters(), lr=config.learning_rate)
    best, best_state, stale = -1.0, None, 0
    for epoch in range(1, config.epochs + 1):
        began = time.perf_counter()
        loss = train_epoch(tokenizer, paragraphs, optimizer, rng)
        scores = end_scores(tokenizer, development) if development else {}
        log(f"tokenizer epoch {epoch}: loss {loss:.4f}"
            + "".join(f", dev {name} F1 {100 * value:.2f}" for name, value in scores.items())
            + f" ({time.perf_counter() - began:.0f}s)")
        score = sum(scores.values())
        if score > best or not development:
            best, stale = score, 0
            best_state = {name: tensor.clone() for name, tensor in tokenizer.tagger.state_dict().items()}
        else:
            stale += 1
            if stale >= config.patience:
                break
    assert best_state is not None  # the first epoch is always kept
    tokenizer.tagger.load_state_dict(best_state)
    tokenizer.tagger.eval()
    return tokenizer


def train_epoch(tokenizer: Tokenizer, paragraphs: Paragraphs, optimizer: torch.optim.Optimizer,
                rng: np.random.Generator) -> float:
    """One pass over the paragraphs in chunks cut at random places, in random
    order; the mean loss per character."""
    config = tokenizer.config
    symbols, classes, _ = tokenizer.encode(paragraphs.texts)
    shifts = rng.integers(0, config.window, len(paragraphs.texts))
    chunks = make_chunks(symbols, classes, [len(t) for t in paragraphs.texts], config.window, config.context,
                         shifts)
    targets = chunk_targets(chunks, paragraphs.labels)
    tokenizer.tagger.train()
    total, characters = 0.0, 0
    for index, tensors in chunks.batches(config.batch, rng.permutation(len(chunks.lengths))):
        scores = tokenizer.tagger(*tensors)
        target = torch.from_numpy(targets[index, :scores.shape[1]])
        loss = nn.functional.cross_entropy(scores.reshape(-1, scores.shape[-1]), target.reshape(-1),
                                           ignore_index=IGNORED, reduction="sum")
        count = int((target != IGNORED).sum())
        optimizer.zero_grad()
        (loss / count).backward()
        nn.utils.clip_grad_norm_(tokenizer.tagger.parameters(), 5.0)
        optimizer.step()
        total += loss.item()
        characters += count
    return total / max(characters, 1)


def chunk_targets(chunks: Chunks, labels: np.ndarray) -> np.ndarray:
    """The label of each chunk position the chunk labels (:data:`IGNORED` elsewhere)."""
    width = chunks.symbols.shape[1]
    column = np.arange(width)[None, :]
    labelled = (column >= chunks.first[:, None]) & (column < (chunks.first + chunks.count)[:, None])
    positions = chunks.source[:, None] - chunks.first[:, None] + column
    targets = np.full(chunks.symbols.shape, IGNORED, dtype=np.int64)
    targets[labelled] = labels[positions[labelled]]
    return targets


def end_scores(tokenizer: Tokenizer, paragraphs: Paragraphs) -> dict[str, float]:
    """F1 of the predicted token, sentence and multiword-token ends (the
    latter where the text has any) against the labels of ``paragraphs``."""
    predicted, _, _ = tokenizer.labels(paragraphs.texts)
    result = {}
    for name, kinds in (("token end", ENDS), ("sentence end", SENTENCE_ENDS), ("multiword end", MWT_ENDS)):
        gold, guess = np.isin(paragraphs.labels, kinds), np.isin(predicted, kinds)
        if name != "multiword end" or gold.any():
            result[name] = 2 * float((gold & guess).sum()) / max(int(gold.sum() + guess.sum()), 1)
    return result

