"""Collecting what the runs of a grid wrote: test scores (those of
``kgparser evaluate``, :func:`kgparser.evaluation.scores.evaluate`, of the best
checkpoint's predictions against the gold test file, with their breakdowns
and their counts sentence by sentence for the significance tests) and
learning curves.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..evaluation.scores import Scores, evaluate
from ..io.conllu import read_conllu
from .grid import Grid, Run, run_config
from .runners import MARKER, run_status
from .significance import PairedResult, paired_test

METRICS_FILE, TENSORBOARD_DIR = "metrics.jsonl", "tensorboard"
#: learning-curve series: TensorBoard tag -> metrics.jsonl key
CURVES = {"dev/las": "dev_las", "dev/uas": "dev_uas", "train/loss": "loss"}


@dataclass
class RunResult:
    run: Run
    status: str
    #: the test scores (:func:`kgparser.evaluation.scores.evaluate`, non-projective arcs counted); None where not scored
    scores: Scores | None = None
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
        return self.scores is not None

    @property
    def test_scores(self) -> Scores:
        """:attr:`scores` of a run that was scored."""
        assert self.scores is not None, "the run was not scored"
        return self.scores

    @property
    def uas(self) -> float:
        return self.test_scores.uas

    @property
    def las(self) -> float:
        return self.test_scores.las

    def by_sentence(self, count: str) -> np.ndarray:
        """One of :attr:`Scores.by_sentence`'s counts, test sentence by test sentence."""
        return np.array(self.test_scores.by_sentence[count])


def compare_predictions(gold_sentences, pred_a, pred_b, *, punct: bool = True, test: str = "bootstrap",
                        samples: int = 10_000) -> dict[str, PairedResult]:
    """UAS and LAS (full labels) of two predictions of the same gold sentences, and
    UPOS where either predicted its tags (both copying the gold UPOS would compare
    nothing), each difference (``b - a``) with a paired significance test over the
    sentences."""
    a = evaluate(gold_sentences, pred_a, punct=punct, nonprojective=False).by_sentence
    b = evaluate(gold_sentences, pred_b, punct=punct, nonprojective=False).by_sentence
    metrics = [("uas", "correct_heads", "words"), ("las", "correct_labeled", "words")]
    if a["correct_upos"] != a["upos_words"] or b["correct_upos"] != b["upos_words"]:
        metrics.append(("upos", "correct_upos", "upos_words"))
    return {metric: paired_test(test, a[count], b[count], a[words], samples=samples)
            for metric, count, words in metrics}


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
                result.scores = evaluate(gold_cache[result.test_file], predicted, punct=grid.report.punct)
            else:
                log(f"{run.name}: no test predictions (no data.test); left out of the tables")
            result.curves = read_curves(run.output_dir)
            result.training_seconds = training_seconds(run.output_dir)
        results.append(result)
    return results
