"""Experiment reports: scores, comparisons, non-projective precision, training
times, learning curves, an end-to-end run through the command line (one tiny
model trained for real) and the shipped study grids against their committed
results.  Runs are faked as in test_experiments.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from fake_grid_runs import GRID, write_base, write_gold, write_grid

from kgparser.cli import main
from kgparser.evaluation.scores import PRF, NonProjective, evaluate, evaluate_files
from kgparser.experiments import collect, load_grid, run_grid, runners, write_report
from kgparser.experiments.collect import compare_predictions
from kgparser.experiments.grid import GridError, validate_runs
from kgparser.io.conllu import read_conllu, write_conllu
from kgparser.transitions.trees import nonprojective_arcs

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "kgparser" / "resources" / "en_ewt_sample"


# --- report -------------------------------------------------------------------

def test_report_from_a_tiny_fake_grid(tiny_grid, fake_runs, tmp_path):
    grid = load_grid(tiny_grid)
    run_grid(grid, log=lambda line: None)
    results = collect(grid, log=lambda line: None)
    path = write_report(grid, results)
    assert path == tmp_path / "runs" / "report" / "report.md"
    text = path.read_text()
    data = json.loads((path.parent / "results.json").read_text())
    # the scores agree with kgparser evaluate on the predictions
    gold = tmp_path / "gold.conllu"
    for config in data["configurations"]:
        for name, scores in config["runs"].items():
            expected = evaluate_files(gold, tmp_path / "runs" / name / runners.PREDICTIONS)
            assert scores["uas"] == pytest.approx(expected.uas)
            assert scores["las"] == pytest.approx(expected.las)
        values = [s["las"] for s in config["runs"].values()]
        assert config["las_mean"] == pytest.approx(np.mean(values))
        assert config["las_sd"] == pytest.approx(np.std(values, ddof=1))
    row = next(c for c in data["configurations"] if c["labels"] == {"system": "arc-hybrid", "oracle": "static"})
    assert f"| arc-hybrid | static | 2/2 | {100 * row['uas_mean']:.2f} ± {100 * row['uas_sd']:.2f} |" in text
    oracle, system = data["comparisons"]
    # dynamic (10% errors) against static (40%): significant in both systems
    assert [r["group"] for r in oracle["rows"]] == [{"system": "arc-hybrid"}, {"system": "arc-eager"}]
    assert all(r["las"][0]["p"] < 0.01 and r["las"][0]["b"] > r["las"][0]["a"] for r in oracle["rows"])
    # the fake parser ignores the system: identical predictions, p = 1
    assert all(r["uas"][0]["p"] == 1.0 for r in system["rows"])
    assert "### oracle" in text and "0.0010 *" in text and "| static | dynamic | 2 |" in text
    # non-projective arcs: gold count from the gold trees, once per seed
    gold_np = sum(len(nonprojective_arcs(s.heads)) for s in read_conllu(gold))
    assert gold_np > 0
    assert all(c["nonprojective"]["gold"] == 2 * gold_np for c in data["configurations"])
    # precision over the predicted non-projective arcs, tested in the comparisons
    for config in data["configurations"]:
        predicted = right = 0
        for name in config["runs"]:
            for g, p in zip(read_conllu(gold), read_conllu(tmp_path / "runs" / name / runners.PREDICTIONS)):
                arcs = nonprojective_arcs(p.heads)
                predicted, right = predicted + len(arcs), right + sum(g.heads[d] == h for h, d in arcs)
        assert (config["nonprojective"]["predicted"], config["nonprojective"]["right"]) == (predicted, right)
    row = oracle["rows"][0]
    static, dynamic = (next(c["nonprojective"] for c in data["configurations"] if c["labels"] == row[side])
                       for side in ("a", "b"))
    assert [(t["a"], t["b"]) for t in row["nonprojective_precision"]] == [
        (pytest.approx(static["right"] / static["predicted"]), pytest.approx(dynamic["right"] / dynamic["predicted"]))]
    assert "| A non-proj. precision | B non-proj. precision | Δ | p |" in text
    assert all(sum(b["gold"] for b in c["by_length"].values()) == 2 * 320 for c in data["configurations"])
    plots = sorted(p.name for p in (path.parent / "plots").iterdir())
    assert plots == ["learning-curve-arc-eager.svg", "learning-curve-arc-hybrid.svg",
                     "length-recall-arc-eager.svg", "length-recall-arc-hybrid.svg",
                     "nonprojective-arc-eager.svg", "nonprojective-arc-hybrid.svg"]
    assert "<polyline" in (path.parent / "plots" / plots[0]).read_text()
    # training time per configuration and where the runs ran
    environment = runners.run_environment()
    assert all(r["environment"] == environment for c in data["configurations"] for r in c["runs"].values())
    assert "| 2/2 | " in text and " | 1.0 |" in text  # every fake run trains 10 + 20 + 30 seconds
    assert "8 finished runs, 0.1 hours of training in all" in text
    assert f"| {environment['machine']} | {environment['python']} |" in text and text.rstrip().endswith("| 8 |")


def test_study_scores_are_kgparser_evaluate_scores(tmp_path, fake_runs):
    """One scorer: with the shipped sample treebank as gold and the fake
    parser's perturbed copies of it as predictions, a study's numbers are
    those of kgparser.evaluation.scores.evaluate: each run's UAS and LAS, the
    arc-length and non-projective counts summed over seeds, the scores its
    comparisons test, and those of ``kgparser evaluate --against``."""
    gold = SAMPLE / "test.conllu"
    write_base(tmp_path, gold)
    grid = load_grid(write_grid(tmp_path, GRID))
    run_grid(grid, log=lambda line: None)
    path = write_report(grid, collect(grid, log=lambda line: None))
    data = json.loads((path.parent / "results.json").read_text())
    evaluated = {}
    for config in data["configurations"]:
        runs = {name: evaluate_files(gold, tmp_path / "runs" / name / runners.PREDICTIONS) for name in config["runs"]}
        evaluated[tuple(config["labels"].values())] = runs.values()
        assert {name: (r["uas"], r["las"]) for name, r in config["runs"].items()} == {
            name: (scores.uas, scores.las) for name, scores in runs.items()}
        assert config["nonprojective"] == sum((s.nonprojective for s in runs.values()), NonProjective()).to_dict()
        assert config["by_length"] == {bucket: sum((s.per_distance.get(bucket, PRF()) for s in runs.values()),
                                                   PRF()).to_dict() for bucket in config["by_length"]}
        assert config["nonprojective"]["predicted"] > 0 and config["nonprojective"]["gold"] > 0
    row = data["comparisons"][0]["rows"][0]  # arc-hybrid, static against dynamic, seeds pooled
    for side in ("a", "b"):
        scores = evaluated[tuple(row[side].values())]
        assert row["las"][0][side] == pytest.approx(np.mean([s.las for s in scores]))
        assert row["uas"][0][side] == pytest.approx(np.mean([s.uas for s in scores]))
    runs = tmp_path / "runs" / "system=arc-hybrid"
    static, dynamic = (read_conllu(runs / f"oracle={oracle}" / "seed=1" / runners.PREDICTIONS, require_tree=False)
                       for oracle in ("static", "dynamic"))
    sentences = read_conllu(gold)
    comparison = compare_predictions(sentences, static, dynamic, samples=100)
    for prediction, side in ((static, "score_a"), (dynamic, "score_b")):
        scores = evaluate(sentences, prediction)
        assert (getattr(comparison["uas"], side), getattr(comparison["las"], side)) == pytest.approx(
            (scores.uas, scores.las))


def test_report_training_times_and_environments(tiny_grid, fake_runs, tmp_path):
    grid = load_grid(tiny_grid)
    run_grid(grid, log=lambda line: None)
    for index, run in enumerate(grid.runs):  # two machines; a run finished before markers recorded one
        marker = json.loads((run.output_dir / runners.MARKER).read_text())
        marker["finished_at"] = f"2026-01-0{1 + index % 3}T12:00:00+0100"
        marker["environment"] = ({"commit": "abc1234", "machine": "m1", "python": "3.12", "torch": "2.13.0"}
                                 if index < 5 else {} if index == 5 else
                                 {"commit": "def5678+modified", "machine": "m2", "python": "3.11", "torch": None})
        (run.output_dir / runners.MARKER).write_text(json.dumps(marker))
        # epochs of (index + 1) minutes; epoch 2 was written again by a resumed attempt and counts once
        records = [{"epoch": e, "epoch_seconds": 20.0 * (index + 1)} for e in (1, 2, 2, 3)]
        (run.output_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    text = write_report(grid, collect(grid, log=lambda line: None), tmp_path / "out").read_text()
    # runs are expanded system, oracle, seed: arc-hybrid static is runs 1 and 2, arc-eager dynamic 7 and 8
    assert "| arc-hybrid | static | 2/2 |" in text and "| 1.0–2.0 |" in text and "| 7.0–8.0 |" in text
    assert "8 finished runs, 0.6 hours of training in all" in text
    assert "finished between 2026-01-01 11:00 and 2026-01-03 11:00 UTC" in text
    assert "| `abc1234` | m1 | 3.12 | 2.13.0 | 5 |" in text
    assert "| `def5678+modified` | m2 | 3.11 | not recorded | 2 |" in text
    assert "| not recorded | not recorded | not recorded | not recorded | 1 |" in text


def test_per_seed_comparison_and_unfinished_runs(tiny_grid, fake_runs, tmp_path):
    body = yaml.safe_load(tiny_grid.read_text())
    body["report"] = {"samples": 500, "seeds": "per-seed", "test": "randomization"}
    tiny_grid.write_text(yaml.safe_dump(body, sort_keys=False))
    grid = load_grid(tiny_grid)
    run_grid(grid, only=lambda run: run.labels["system"] == "arc-hybrid", log=lambda line: None)
    path = write_report(grid, collect(grid, log=lambda line: None), tmp_path / "out")
    text = path.read_text()
    assert "4 of 8 runs finished" in text and "| arc-eager | static | 0/2 | – | – |" in text
    assert "2/2 (max p 0.0020)" in text
    data = json.loads((path.parent / "results.json").read_text())
    assert len(data["comparisons"][0]["rows"]) == 1 and len(data["comparisons"][0]["rows"][0]["las"]) == 2
    assert data["comparisons"][1]["rows"] == []


def test_ambiguous_comparison_names_the_axes(tmp_path, fake_runs):
    write_base(tmp_path, write_gold(tmp_path / "gold.conllu", sentences=5))
    body = dict(GRID, compare=[{"a": {"oracle": "static"}, "b": {"oracle": "dynamic"}, "over": []}])
    grid = load_grid(write_grid(tmp_path, body))
    run_grid(grid, log=lambda line: None)
    with pytest.raises(GridError, match="differ in system"):
        write_report(grid, collect(grid, log=lambda line: None))


def test_learning_curves_from_tensorboard_events(tmp_path):
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from kgparser.experiments.collect import read_curves

    writer = EventFileWriter(str(tmp_path / "tensorboard"))
    for epoch, value in ((1, 0.5), (2, 0.7), (3, 0.6)):
        summary = Summary(value=[Summary.Value(tag="dev/las", simple_value=value)])
        writer.add_event(Event(wall_time=0.0, step=epoch, summary=summary))
    writer.close()
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"epoch": 1, "dev_las": 0.1}) + "\n")
    curves = read_curves(tmp_path)
    assert [e for e, _ in curves["dev/las"]] == [1, 2, 3]
    assert [v for _, v in curves["dev/las"]] == pytest.approx([0.5, 0.7, 0.6])


# --- end to end ---------------------------------------------------------------

def test_command_line_end_to_end_with_a_tiny_model(tmp_path, capsys):
    """Trains one tiny model for real (1 epoch, 20 sentences) through the CLI."""
    test = tmp_path / "test.conllu"
    write_conllu(read_conllu(SAMPLE / "test.conllu")[:20], test)
    (tmp_path / "base.yaml").write_text(yaml.safe_dump({
        "data": {"train": str(SAMPLE / "train.conllu"), "dev": str(test), "test": str(test),
                 "max_train_sentences": 20},
        "model": {"word_dim": 8, "pos_dim": 4, "lstm_hidden": 8, "lstm_layers": 1, "mlp_hidden": 8},
        "training": {"epochs": 1, "tensorboard": False}}))
    grid = write_grid(tmp_path, {"axes": {"oracle": ["dynamic"]}})
    assert main(["experiment", "run", str(grid)]) == 0
    run_dir = tmp_path / "runs" / "oracle=dynamic"
    assert (run_dir / runners.MARKER).exists() and (run_dir / "best.pt").exists()
    capsys.readouterr()
    assert main(["experiment", "run", str(grid)]) == 0
    assert "1 already finished, 0 to run" in capsys.readouterr().err
    assert main(["experiment", "report", str(grid)]) == 0
    data = json.loads((tmp_path / "runs" / "report" / "results.json").read_text())
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    test_record = next(r for r in metrics if "test_las" in r)
    scores = data["configurations"][0]["runs"]["oracle=dynamic"]
    assert scores["las"] == pytest.approx(test_record["test_las"])
    assert scores["uas"] == pytest.approx(test_record["test_uas"])


def test_svg_ticks_cover_the_data():
    from kgparser.experiments.svg import nice_ticks

    assert nice_ticks(1, 3, integer=True) == [1, 2, 3]
    ticks = nice_ticks(55.3, 91.2)
    assert ticks[0] <= 55.3 and ticks[-1] >= 91.2 and len(ticks) <= 7


# --- the shipped studies --------------------------------------------------------

STUDIES = sorted((ROOT / "experiments").glob("*.yaml"))
UD = ROOT.parent / "shared" / "ud"


@pytest.mark.skipif(not UD.is_dir(), reason="../shared/ud treebanks not available")
@pytest.mark.parametrize("path", STUDIES, ids=[p.stem for p in STUDIES])
def test_shipped_study_grids_expand_to_their_committed_results(path):
    """Each study grid loads, every run's config is valid, and its runs are
    exactly those of the committed report, so `experiment run` followed by
    `report` regenerates that table."""
    grid = load_grid(path)
    validate_runs(grid)
    results = json.loads((ROOT / "experiments" / "results" / path.stem / "results.json").read_text())
    assert results["grid"] == path.name and results["name"] == grid.name
    reported = {name for configuration in results["configurations"] for name in configuration["runs"]}
    assert reported == {run.name for run in grid.runs}
    assert len(results["comparisons"]) == len(grid.comparisons)
