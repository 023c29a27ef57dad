"""Collecting what the runs of a grid wrote: test scores sentence by sentence
(from the predictions of the best checkpoint against the gold test file),
breakdowns by arc length and for non-projective arcs, and learning curves.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..conllu_io import read_conllu
from ..evaluation import DISTANCE_BUCKETS, distance_bucket, nonprojective_counts
from .grid import Grid, Run, run_config
from .runners import MARKER, run_status
from .significance import PairedResult, paired_test

METRICS_FILE, TENSORBOARD_DIR = "metrics.jsonl", "tensorboard"
#: learning-curve series: TensorBoard tag -> metrics.jsonl key
CURVES = {"dev/las": "dev_las", "dev/uas": "dev_uas", "train/loss": "loss"}


@dataclass
class Counts:
    """Arcs of one category: ``gold`` arcs in it and ``correct`` ones among them
    (the predicted head is the gold head: recall), ``predicted`` arcs in it and
    ``predicted_correct`` ones among them (precision).  The two numerators
    differ where the category depends on the rest of the tree: an arc is
    non-projective in the prediction and not in the gold tree, or the other
    way round."""

    gold: int = 0
    predicted: int = 0
    correct: int = 0
    predicted_correct: int = 0

    def add(self, other: "Counts") -> None:
        self.gold += other.gold
        self.predicted += other.predicted
        self.correct += other.correct
        self.predicted_correct += other.predicted_correct

    @property
    def precision(self) -> float | None:
        return self.predicted_correct / self.predicted if self.predicted else None

    @property
    def recall(self) -> float | None:
        return self.correct / self.gold if self.gold else None


@dataclass
class RunResult:
    run: Run
    status: str
    #: per test sentence: scored words, words with the right head, right head and label
    words: np.ndarray | None = None
    heads: np.ndarray | None = None
    labeled: np.ndarray | None = None
    #: arc-length bucket -> counts (unlabeled; precision by predicted length, recall by gold length)
    by_length: dict[str, Counts] = field(default_factory=dict)
    nonprojective: Counts = field(default_factory=Counts)
    #: per test sentence: non-projective arcs predicted, and those with the gold head (precision's terms)
    nonprojective_predicted: np.ndarray | None = None
    nonprojective_right: np.ndarray | None = None
    #: series name (see CURVES) -> [(epoch, value), ...]
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    test_file: str | None = None
    #: see :func:`training_seconds`
    training_seconds: float | None = None
    #: from the run's marker: wall time of its last attempt (training and parsing), when it finished, where it ran
    seconds: float | None = None
    finished_at: str | None = None
    environment: dict = field(default_factory=dict)

    @property
    def scored(self) -> bool:
        return self.words is not None

    @property
    def uas(self) -> float:
        return float(self.heads.sum() / self.words.sum())

    @property
    def las(self) -> float:
        return float(self.labeled.sum() / self.words.sum())


def score_sentences(gold_sentences, pred_sentences, punct: bool = True) -> dict:
    """Per-sentence arrays and breakdown counts of predicted against gold trees
    (same words; with ``punct=False`` words whose gold UPOS is PUNCT are not scored).
    Non-projective arcs: :func:`kgparser.evaluation.nonprojective_counts`."""
    from ..evaluation import EvaluationError, check_sentence_counts

    check_sentence_counts(gold_sentences, pred_sentences)
    words, heads, labeled = [], [], []
    by_length = {bucket: Counts() for bucket in DISTANCE_BUCKETS}
    nonprojective = Counts()
    nonprojective_predicted, nonprojective_right = [], []
    for index, (gold, pred) in enumerate(zip(gold_sentences, pred_sentences), start=1):
        if gold.forms != pred.forms:
            raise EvaluationError(f"sentence {index} (gold {gold.source}:{gold.line}): the prediction has "
                                  "other words")
        scored = [d for d in range(1, gold.n + 1) if punct or gold.upos[d - 1] != "PUNCT"]
        right = [d for d in scored if pred.heads[d] == gold.heads[d]]
        words.append(len(scored))
        heads.append(len(right))
        labeled.append(sum(pred.deprels[d] == gold.deprels[d] for d in right))
        for d in scored:
            by_length[distance_bucket(gold.heads[d], d)].gold += 1
            if pred.heads[d] >= 0:
                by_length[distance_bucket(pred.heads[d], d)].predicted += 1
        for d in right:
            by_length[distance_bucket(gold.heads[d], d)].correct += 1
            by_length[distance_bucket(gold.heads[d], d)].predicted_correct += 1
        gold_np, found, predicted_np, predicted_right = nonprojective_counts(gold, pred, set(scored))
        nonprojective.add(Counts(gold_np, predicted_np, found, predicted_right))
        nonprojective_predicted.append(predicted_np)
        nonprojective_right.append(predicted_right)
    return {"words": np.array(words), "heads": np.array(heads), "labeled": np.array(labeled),
            "by_length": by_length, "nonprojective": nonprojective,
            "nonprojective_predicted": np.array(nonprojective_predicted),
            "nonprojective_right": np.array(nonprojective_right)}


def compare_predictions(gold_sentences, pred_a, pred_b, *, punct: bool = True, test: str = "bootstrap",
                        samples: int = 10_000) -> dict[str, PairedResult]:
    """UAS and LAS (full labels) of two predictions of the same gold sentences, each
    difference (``b - a``) with a paired significance test over the sentences."""
    a = score_sentences(gold_sentences, pred_a, punct)
    b = score_sentences(gold_sentences, pred_b, punct)
    return {metric: paired_test(test, a[key], b[key], a["words"], samples=samples)
            for metric, key in (("uas", "heads"), ("las", "labeled"))}


def read_curves(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """Learning curves from the run's TensorBoard event files, or from its metrics
    file when it has no events (``training.tensorboard: false``)."""
    curves = _tensorboard_curves(run_dir / TENSORBOARD_DIR)
    return curves or _metrics_curves(run_dir / METRICS_FILE)


def _tensorboard_curves(log_dir: Path) -> dict[str, list[tuple[int, float]]]:
    if not log_dir.is_dir() or not any(log_dir.glob("events.out.tfevents.*")):
        return {}
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    accumulator.Reload()
    tags = set(accumulator.Tags().get("scalars", ()))
    curves = {}
    for tag in CURVES:
        if tag in tags:
            by_step = {event.step: event.value for event in accumulator.Scalars(tag)}  # the last write wins
            curves[tag] = sorted(by_step.items())
    return curves


def _metrics_records(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def training_seconds(run_dir: Path) -> float | None:
    """The time a run spent training: the sum of its epochs' ``epoch_seconds`` in
    ``metrics.jsonl`` (an epoch written again after ``--resume`` counts once), so
    a run resumed from a checkpoint counts in full; dev evaluation excluded."""
    by_epoch = {record["epoch"]: record["epoch_seconds"] for record in _metrics_records(run_dir / METRICS_FILE)
                if "epoch" in record and record.get("epoch_seconds") is not None}
    return float(sum(by_epoch.values())) if by_epoch else None


def _metrics_curves(path: Path) -> dict[str, list[tuple[int, float]]]:
    curves: dict[str, dict[int, float]] = {}
    for record in _metrics_records(path):
        for tag, key in CURVES.items():
            if record.get(key) is not None and "epoch" in record:
                curves.setdefault(tag, {})[int(record["epoch"])] = float(record[key])
    return {tag: sorted(points.items()) for tag, points in curves.items()}


def collect(grid: Grid, log=print) -> list[RunResult]:
    """One result per run of the grid; unfinished runs are listed without scores."""
    gold_cache: dict[str, list] = {}
    results = []
    for run in grid.runs:
        config = run_config(grid, run)
        status = run_status(run, config)
        result = RunResult(run, status)
        if status == "finished":
            marker = json.loads((run.output_dir / MARKER).read_text(encoding="utf-8"))
            result.seconds, result.finished_at = marker.get("seconds"), marker.get("finished_at")
            result.environment = marker.get("environment") or {}
            result.test_file = config.data.test
            if marker.get("predictions") and result.test_file:
                if result.test_file not in gold_cache:
                    gold_cache[result.test_file] = read_conllu(result.test_file)
                predicted = read_conllu(run.output_dir / marker["predictions"], require_tree=False)
                scores = score_sentences(gold_cache[result.test_file], predicted, grid.report.punct)
                result.words, result.heads, result.labeled = scores["words"], scores["heads"], scores["labeled"]
                result.by_length, result.nonprojective = scores["by_length"], scores["nonprojective"]
                result.nonprojective_predicted = scores["nonprojective_predicted"]
                result.nonprojective_right = scores["nonprojective_right"]
            else:
                log(f"{run.name}: no test predictions (no data.test); left out of the tables")
            result.curves = read_curves(run.output_dir)
            result.training_seconds = training_seconds(run.output_dir)
        results.append(result)
    return results
