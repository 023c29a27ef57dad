"""The raw-text front end of a training run (``tokenizer.enabled``): the
learned tokenizer, sentence splitter and multiword-token expander
(:mod:`kgparser.tokenize`) trained on the running text of ``data.train``
before the parser's first epoch, so that every checkpoint of the run holds
it; and, at the end, the test file parsed from its raw text, as users'
text comes, scored as the CoNLL 2018 shared task scores raw-text systems
(Zeman et al. 2018: words aligned through the characters,
:mod:`kgparser.evaluation.aligned`).

Its epochs are logged, written to ``metrics.jsonl`` (records with a
``tokenizer_epoch``) and shown on TensorBoard (``tokenizer/...``); a
resumed run finds the tokenizer in ``last.pt`` and does not train it again.
"""
from __future__ import annotations

import io
from collections.abc import Callable, Sequence

from ..config import Config
from ..io.conllu import Sentence
from .monitor import MetricsFile, TensorBoard

#: the aligned scores of the test file's raw text a run reports, by the scorer's names
RAW_TEXT_METRICS = ("tokens", "sentences", "words", "upos", "lemma", "uas", "las")


def learn_tokenizer(model, config: Config, train: Sequence[Sentence], dev: Sequence[Sentence] | None,
                    metrics: MetricsFile | None, board: TensorBoard, log: Callable[[str], None]) -> None:
    """Train ``model``'s tokenizer as ``config.tokenizer`` says, unless it is
    off or the model has one (resumed from ``last.pt``).  Under ``torchrun``
    every process trains it (the same seed and data give the same tokenizer
    in each), so that none waits at a collective for the main process for
    longer than the peers' timeout; the main one alone writes ``metrics``."""
    if not config.tokenizer.enabled or model.tokenizer is not None:
        return
    from ..tokenize.train import TokenizerEpoch, train_tokenizer

    def report(epoch: TokenizerEpoch) -> None:
        log(epoch.line())
        scores = {name.replace(" ", "_"): value for name, value in epoch.dev.items()}
        if metrics is not None:
            metrics.write({"tokenizer_epoch": epoch.epoch, "loss": epoch.loss, "epoch_seconds": epoch.seconds,
                           **{f"dev_{name}_f1": value for name, value in scores.items()}})
        board.scalars({"tokenizer/loss": epoch.loss, **{f"tokenizer/dev_{name}_f1": value
                                                        for name, value in scores.items()}}, epoch.epoch)

    log(f"training the tokenizer on the running text of {len(train)} sentences")
    model.tokenizer = train_tokenizer(train, dev, config.tokenizer, report, seed=config.seed)


def raw_text_scores(model, test: Sequence[Sentence], batch_size: int) -> dict[str, float]:
    """F1 of :data:`RAW_TEXT_METRICS` (those the test file has) of ``model``
    parsing the running text of ``test`` (:func:`kgparser.io.rawtext.text_of`)
    with its own tokenizer, tags predicted."""
    from ..evaluation.aligned import evaluate_aligned
    from ..inference.parsing import parse_sentences
    from ..io.rawtext import stream_raw, text_of

    sentences = list(stream_raw(io.StringIO(text_of(test)), "<test text>", model.tokenizer))
    parse_sentences(model, sentences, batch_size=batch_size)
    scores = evaluate_aligned(test, sentences).scores
    return {name: scores[name].f1 for name in RAW_TEXT_METRICS if name in scores}
