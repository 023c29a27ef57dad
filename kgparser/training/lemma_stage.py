"""The lemmatizer's stage of a training run (``lemmatizer.enabled``): after the
parser's last epoch, the lemmatizer of unseen words (:mod:`kgparser.model.lemmatizer`)
is trained on the finished network of the best checkpoint and stored in it.

The network is frozen then, so what the lemmatizer reads of each training word
(:meth:`~kgparser.model.network.Network.lemma_inputs`, in evaluation mode, as
at parse time) is computed once; the epochs train the small model alone.  Its
classes are the LEMMA head's, its targets each word's edit script
(:mod:`kgparser.lemma`).  The dictionary decides the seen words at parse time,
so each epoch is judged by the lemma accuracy of the development words the
dictionary does not know, and the best epoch is kept.

Its epochs are logged, written to ``metrics.jsonl`` (records with a
``lemmatizer_epoch``) and shown on TensorBoard (``lemmatizer/...``).  The parser
is unchanged, so a finished run can be given a lemmatizer by resuming it with
``lemmatizer.enabled: true`` (``kgparser train --resume``); a best checkpoint
that has one is not trained again.
"""
from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..config import Config, LemmatizerConfig
from ..io.conllu import Sentence
from ..lemma import LemmaLexicon, lemma_class
from ..model import Model
from ..model.checkpoint import load_checkpoint, save_checkpoint
from ..model.lemmatizer import Lemmatizer
from ..model.tagger import IGNORED, LEMMA_CANDIDATES, TAG_CLASS_OFFSET
from .monitor import MetricsFile, TensorBoard

#: sentences per batch when reading the network's vectors
BATCH_SENTENCES = 64


@dataclass
class LemmaWords:
    """Words with what the lemmatizer reads of each (``inputs`` ``[words, in_dim]``),
    their forms, gold classes (:data:`IGNORED` where the class is not one of the
    model's) and gold lemmas."""

    inputs: torch.Tensor
    forms: list[str]
    targets: torch.Tensor
    lemmas: list[str]


@dataclass
class LemmatizerEpoch:
    """One epoch of the stage: its loss and the development words' score."""

    epoch: int
    loss: float
    dev_unseen: float | None
    seconds: float

    def line(self) -> str:
        dev = "" if self.dev_unseen is None else f", dev lemma of unseen words {100 * self.dev_unseen:.2f}"
        return f"lemmatizer epoch {self.epoch}: loss {self.loss:.4f}{dev} ({self.seconds:.0f}s)"


def learn_lemmatizer(path: Path, config: Config, train: Sequence[Sentence], dev: Sequence[Sentence] | None,
                     metrics: MetricsFile | None, board: TensorBoard, log: Callable[[str], None],
                     encoder: str | None = None) -> None:
    """Train the lemmatizer of checkpoint ``path`` as ``config.lemmatizer`` says
    and store it there (and ``config.lemmatizer`` in its config), unless the
    stage is off, the checkpoint has one, or its model predicts no LEMMA."""
    if not config.lemmatizer.enabled:
        return
    data = load_checkpoint(path)
    if "lemmatizer" in data["model"]:
        return
    model = Model.from_data(data["model"], encoder=encoder).to(config.device)
    if "lemma" not in model.tag_columns:
        log("note: no lemmatizer: the model predicts no LEMMA (the training data has none)")
        return
    if model.vocabs.lexicon is None:  # a checkpoint from before the lexicon
        model.vocabs.lexicon = LemmaLexicon.from_sentences(train)
    log(f"training the lemmatizer on the network of {path.name}")

    def report(epoch: LemmatizerEpoch) -> None:
        log(epoch.line())
        if metrics is not None:
            metrics.write({"lemmatizer_epoch": epoch.epoch, "loss": epoch.loss, "epoch_seconds": epoch.seconds,
                           "dev_unseen_lemma": epoch.dev_unseen})
        board.scalars({"lemmatizer/loss": epoch.loss, "lemmatizer/dev_unseen_lemma": epoch.dev_unseen},
                      epoch.epoch)

    model.lemmatizer = train_lemmatizer(model, train, dev, config.lemmatizer, report, seed=config.seed)
    model.config.lemmatizer = config.lemmatizer
    data["model"] = model.to_data()
    save_checkpoint(data, path)


def train_lemmatizer(model: Model, train: Sequence[Sentence], dev: Sequence[Sentence] | None,
                     config: LemmatizerConfig, report: Callable[[LemmatizerEpoch], None], seed: int) -> Lemmatizer:
    """A lemmatizer for ``model`` trained on the words of ``train``; the epoch best
    on the words of ``dev`` the lexicon does not know, else the last.  (Training
    on the rare words alone, those most like the unseen ones, was tried: on
    Hungarian-Szeged it was worse, docs/history/model-tokenizer.md.)"""
    lexicon = model.vocabs.lexicon
    assert lexicon is not None  # learn_lemmatizer builds one where the checkpoint has none
    torch.manual_seed(seed)
    shuffle = random.Random(seed)
    words = lemma_words(model, train)
    unseen = lemma_words(model, dev, keep=lambda form: lexicon.known(form, None) is None) \
        if dev else None
    items = model.vocabs.tag_columns["lemma"].items
    classes = len(items) - TAG_CLASS_OFFSET
    lemmatizer = Lemmatizer.for_forms(config, words.forms, words.inputs.shape[1], classes).to(model.device)
    optimizer = torch.optim.Adam(lemmatizer.parameters(), lr=config.learning_rate)
    best: tuple[float, dict] | None = None
    for epoch in range(1, config.epochs + 1):
        start = time.perf_counter()
        loss = _epoch(lemmatizer, optimizer, words, config.batch, shuffle)
        score = lemma_accuracy(lexicon, items, lemmatizer, unseen) if unseen is not None and unseen.forms else None
        report(LemmatizerEpoch(epoch, loss, score, time.perf_counter() - start))
        if score is not None and (best is None or score > best[0]):
            best = (score, {name: tensor.clone() for name, tensor in lemmatizer.state_dict().items()})
    if best is not None:
        lemmatizer.load_state_dict(best[1])
    return lemmatizer.eval()


def lemma_words(model: Model, sentences: Sequence[Sentence], keep: Callable[[str], bool] | None = None) -> LemmaWords:
    """The words of ``sentences`` with a gold lemma (whose form ``keep`` accepts,
    where given), and what the lemmatizer reads of each (the network in evaluation mode)."""
    index = model.vocabs.tag_columns["lemma"].index
    parts, forms, targets, lemmas = [], [], [], []
    model.network.eval()
    ordered = sorted(sentences, key=lambda sentence: sentence.n)  # batches of like lengths pad little
    with torch.no_grad():
        for start in range(0, len(ordered), BATCH_SENTENCES):
            batch = ordered[start:start + BATCH_SENTENCES]
            inputs = model.network.lemma_inputs(model.inputs(batch))
            rows, offset = [], 0
            for sentence in batch:
                for i, (form, lemma) in enumerate(zip(sentence.forms, sentence.lemma)):
                    if lemma is not None and (keep is None or keep(form)):
                        rows.append(offset + 1 + i)  # row ``offset`` is ROOT
                        forms.append(form)
                        lemmas.append(lemma)
                        known = index.get(lemma_class(form, lemma))
                        targets.append(IGNORED if known is None else known - TAG_CLASS_OFFSET)
                offset += sentence.n + 1
            parts.append(inputs[rows])
    return LemmaWords(torch.cat(parts), forms, torch.tensor(targets, dtype=torch.int64), lemmas)


def _epoch(lemmatizer: Lemmatizer, optimizer: torch.optim.Optimizer, words: LemmaWords, batch: int,
           shuffle: random.Random) -> float:
    """One pass over ``words`` in shuffled batches; the mean loss per word."""
    lemmatizer.train()
    order = list(range(len(words.forms)))
    shuffle.shuffle(order)
    device = next(lemmatizer.parameters()).device
    total = 0.0
    for start in range(0, len(order), batch):
        chosen = order[start:start + batch]
        rows = torch.tensor(chosen, dtype=torch.int64)
        scores = lemmatizer(words.inputs[rows].to(device), [words.forms[i] for i in chosen])
        loss = nn.functional.cross_entropy(scores, words.targets[rows].to(device), ignore_index=IGNORED,
                                           reduction="sum")
        optimizer.zero_grad()
        (loss / len(chosen)).backward()
        optimizer.step()
        total += loss.item()
    return total / max(1, len(order))


def lemma_accuracy(lexicon: LemmaLexicon, items: list[str], lemmatizer: Lemmatizer, words: LemmaWords) -> float:
    """The share of ``words`` whose lemma the lemmatizer gets right as parsing
    decides it: the best of its :data:`LEMMA_CANDIDATES` classes that fits the
    form (:meth:`LemmaLexicon.decided`), else its best class; ``items``: the LEMMA
    column's vocabulary."""
    lemmatizer.eval()
    device = next(lemmatizer.parameters()).device
    right = 0
    with torch.no_grad():
        for start in range(0, len(words.forms), 1024):
            forms = words.forms[start:start + 1024]
            scores = lemmatizer(words.inputs[start:start + 1024].to(device), forms)
            ranked = scores.topk(min(LEMMA_CANDIDATES, scores.shape[1]), dim=1).indices.tolist()
            for form, gold, classes in zip(forms, words.lemmas[start:start + 1024], ranked):
                right += lexicon.decided(form, [items[c + TAG_CLASS_OFFSET] for c in classes]) == gold
    return right / len(words.forms)
