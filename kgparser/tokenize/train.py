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

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..config import TokenizerConfig
from ..errors import KgparserError
from ..io.conllu import Sentence
from ..io.rawtext import paragraph_spans
from .data import ENDS, MWT_ENDS, SENTENCE_ENDS, LabelledText, labelled_text
from .model import CharacterTagger, CharacterVocabulary, Chunks, Tokenizer, make_chunks
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


@dataclass
class TokenizerEpoch:
    """What one epoch of :func:`train_tokenizer` did: the mean loss per
    character, the development text's F1 of each kind of end (none without
    development text) and the seconds it took."""

    epoch: int
    loss: float
    dev: dict[str, float]
    seconds: float

    def line(self) -> str:
        return (f"tokenizer epoch {self.epoch}: loss {self.loss:.4f}"
                + "".join(f", dev {name} F1 {100 * value:.2f}" for name, value in self.dev.items())
                + f" ({self.seconds:.0f}s)")


def _print_line(epoch: TokenizerEpoch) -> None:
    print(epoch.line())


def train_tokenizer(train: Sequence[Sentence], dev: Sequence[Sentence] | None = None,
                    config: TokenizerConfig | None = None, report: Callable[[TokenizerEpoch], None] = _print_line,
                    seed: int = 1) -> Tokenizer:
    """A tokenizer trained on the running text of ``train``, the epoch that
    scores best on ``dev`` kept (the last one without ``dev``); each epoch is
    ``report``-ed; ``seed`` seeds initialization, dropout and the chunks' cuts."""
    config = config or TokenizerConfig()
    if config.epochs < 1:
        raise KgparserError(f"tokenizer epochs: must be at least 1, got {config.epochs}")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
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
        report(TokenizerEpoch(epoch, loss, scores, time.perf_counter() - began))
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
    """One epoch: passes over the paragraphs, in chunks cut at random places
    and in random order, until :attr:`TokenizerConfig.epoch_characters` are
    read (one pass where the text is longer); the mean loss per character."""
    config = tokenizer.config
    symbols, classes, _ = tokenizer.encode(paragraphs.texts)
    lengths = [len(t) for t in paragraphs.texts]
    passes = max(1, math.ceil(config.epoch_characters / max(sum(lengths), 1)))
    tokenizer.tagger.train()
    total, characters = 0.0, 0
    for _ in range(passes):
        chunks = make_chunks(symbols, classes, lengths, config.window, config.context,
                             rng.integers(0, config.window, len(lengths)))
        targets = chunk_targets(chunks, paragraphs.labels)
        for index, tensors in chunks.batches(config.batch, rng.permutation(len(chunks.lengths))):
            loss, count = _step(tokenizer, optimizer, tensors, torch.from_numpy(targets[index]))
            total += loss
            characters += count
    return total / max(characters, 1)


def _step(tokenizer: Tokenizer, optimizer: torch.optim.Optimizer, tensors: tuple, target: torch.Tensor
          ) -> tuple[float, int]:
    """One update on a batch of chunks; the summed loss and the characters scored."""
    scores = tokenizer.tagger(*tensors)
    target = target[:, :scores.shape[1]]
    loss = nn.functional.cross_entropy(scores.reshape(-1, scores.shape[-1]), target.reshape(-1),
                                       ignore_index=IGNORED, reduction="sum")
    count = int((target != IGNORED).sum())
    optimizer.zero_grad()
    (loss / count).backward()
    nn.utils.clip_grad_norm_(tokenizer.tagger.parameters(), 5.0)
    optimizer.step()
    return loss.item(), count


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

