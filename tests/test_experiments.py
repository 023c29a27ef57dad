"""Experiment grids: expansion, resuming, reports (the significance tests
themselves: test_significance.py).

Runs are faked (the two subprocess commands of a run are replaced by a
function that writes what training and parsing would write), so these tests
need no training; one end-to-end test trains a tiny model for real.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from kgparser.cli import main
from kgparser.config import load_config
from kgparser.conllu_io import read_conllu, write_conllu
from kgparser.errors import KgparserError
from kgparser.evaluation import evaluate_files
from kgparser.experiments import collect, load_grid, run_grid, write_report
from kgparser.experiments import runners
from kgparser.experiments.grid import GridError, run_config, system_options, validate_runs
from kgparser.experiments.collect import score_sentences
from kgparser.transitions.trees import nonprojective_arcs, random_tree

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "kgparser" / "resources" / "en_ewt_sample"


# --- fixtures -----------------------------------------------------------------

def write_gold(path: Path, sentences: int = 40, words: int = 8, seed: int = 7) -> Path:
    """Random trees (many of them non-projective) as CoNLL-U."""
    rng = random.Random(seed)
    blocks = []
    for s in range(sentences):
        heads = random_tree(words, rng, single_root=True)
        lines = [f"# sent_id = s{s}"]
        for d in range(1, words + 1):
            label = "root" if heads[d] == 0 else rng.choice(["nsubj", "obj", "amod"])
            lines.append(f"{d}\tw{s}_{d}\tw\tNOUN\t_\t_\t{heads[d]}\t{label}\t_\t_")
        blocks.append("\n".join(lines) + "\n\n")
    path.write_text("".join(blocks), encoding="utf-8")
    return path


def write_base(tmp_path: Path, gold: Path) -> Path:
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump({"data": {"train": str(gold), "dev": str(gold), "test": str(gold)},
                                    "training": {"epochs": 3}}), encoding="utf-8")
    return base


def write_grid(tmp_path: Path, body: dict, name: str = "grid.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"base": "base.yaml", "output_root": "runs", **body}, sort_keys=False),
                    encoding="utf-8")
    return path


#: error rate of the fake parser by oracle (the system makes no difference)
ERROR_RATE = {"static": 0.4, "dynamic": 0.1}


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def _settings(command: list[str]) -> dict:
    return dict(command[i + 1].split("=", 1) for i, a in enumerate(command) if a == "--set")


def fake_call(calls: list):
    """Stands for ``subprocess.call`` of a run's ``train`` / ``parse`` commands."""
    def call(command, stdout=None, stderr=None, env=None, **options):
        calls.append(command)
        action = command[3]
        if action == "train":
            settings = _settings(command)
            out = Path(settings["output_dir"])
            load_config(command[4], [f"{k}={v}" for k, v in settings.items()]).save(out / "config.yaml")
            (out / "last.pt").write_bytes(b"fake")
            (out / "best.pt").write_bytes(b"fake")
            records = [{"epoch": e, "loss": 1.0 / e, "dev_las": 0.5 + 0.1 * e, "dev_uas": 0.6 + 0.1 * e,
                        "epoch_seconds": 10.0 * e} for e in (1, 2, 3)]
            (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        elif action == "parse":
            out = Path(_option(command, "--output"))
            settings = dict(part.split("=", 1) for part in out.parent.relative_to(out.parents[3]).parts)
            rate = ERROR_RATE[settings["oracle"]]
            rng = random.Random(int(settings["seed"]))
            sentences = read_conllu(command[4])
            for sentence in sentences:
                heads = list(sentence.heads)
                labels = list(sentence.deprels)
                for d in range(1, sentence.n + 1):
                    if rng.random() < rate and heads[d] != 0:  # attach to the root: wrong, never a cycle
                        heads[d] = 0
                    elif rng.random() < 0.1:
                        labels[d] = "dep"
                sentence.set_tree(heads, labels)
            write_conllu(sentences, out)
        return 0
    return call


@pytest.fixture
def fake_runs(monkeypatch):
    calls: list = []
    monkeypatch.setattr(runners.subprocess, "call", fake_call(calls))
    return calls


GRID = {
    "name": "tiny",
    "set": {"training.epochs": 2},
    "axes": {"system": ["arc-hybrid", "arc-eager"], "oracle": ["static", "dynamic"], "seed": [1, 2]},
    "compare": [{"name": "oracle", "a": {"oracle": "static"}, "b": {"oracle": "dynamic"}},
                {"name": "system", "a": {"system": "arc-hybrid"}, "b": {"system": "arc-eager"}}],
    "engine": {"max_parallel": 2},
    "report": {"samples": 1000},
}


@pytest.fixture
def tiny_grid(tmp_path):
    write_base(tmp_path, write_gold(tmp_path / "gold.conllu"))
    return write_grid(tmp_path, GRID)


# --- grid expansion ---------------------------------------------------------

def test_expansion_is_the_product_of_the_axes_in_order(tiny_grid, tmp_path):
    grid = load_grid(tiny_grid)
    assert len(grid.runs) == 8
    assert [run.name for run in grid.runs[:3]] == [
        "system=arc-hybrid/oracle=static/seed=1", "system=arc-hybrid/oracle=static/seed=2",
        "system=arc-hybrid/oracle=dynamic/seed=1"]
    run = grid.runs[2]
    assert run.output_dir == (tmp_path / "runs" / "system=arc-hybrid" / "oracle=dynamic" / "seed=1").resolve()
    assert run.set_arguments() == ["training.epochs=2", "system.name=arc-hybrid", "training.oracle=dynamic",
                                   "seed=1"]
    config = run_config(grid, run)
    assert (config.system.name, config.training.oracle, config.seed, config.training.epochs) == \
        ("arc-hybrid", "dynamic", 1, 2)
    assert grid.comparisons[0].over == ("system",)
    assert grid.comparisons[1].over == ("oracle",)
    assert grid.engine.parallel() == 2


def test_mapping_key_and_treebank_axes_with_exclusions(tmp_path):
    gold = write_gold(tmp_path / "gold.conllu", sentences=2)
    write_base(tmp_path, gold)
    for name in ("UD_Toy-A", "UD_Toy-B"):
        directory = tmp_path / "ud" / name
        directory.mkdir(parents=True)
        for split in ("train", "dev", "test"):
            (directory / f"toy-ud-{split}.conllu").write_text(gold.read_text())
    path = write_grid(tmp_path, {"axes": {
        "treebank": {"ud": "ud", "values": ["UD_Toy-A", {"UD_Toy-B": {"data.max_train_sentences": 1}}]},
        "parser": {"2p": {"system.name": "two-planar", "training.oracle": "dynamic"},
                   "swap": {"system.name": "arc-hybrid-swap", "training.oracle": "static-dynamic"}},
        "switch": {"key": "system.options.regularize_switch", "values": [True, False]}},
        "exclude": [{"parser": "swap", "switch": False}]})
    grid = load_grid(path)
    assert [run.name for run in grid.runs][:3] == ["treebank=Toy-A/parser=2p/switch=true",
                                                  "treebank=Toy-A/parser=2p/switch=false",
                                                  "treebank=Toy-A/parser=swap/switch=true"]
    assert len(grid.runs) == 6
    overrides = dict(grid.runs[1].overrides)
    assert overrides["data.test"] == str((tmp_path / "ud/UD_Toy-A/toy-ud-test.conllu").resolve())
    assert overrides["system.options.regularize_switch"] is False
    assert run_config(grid, grid.runs[1]).system.options == {"regularize_switch": False}
    assert [dict(run.overrides).get("data.max_train_sentences") for run in grid.runs] == [None] * 3 + [1] * 3
    assert run_config(grid, grid.runs[4]).data.max_train_sentences == 1
    assert grid.runs[3].name == "treebank=Toy-B/parser=2p/switch=true"


@pytest.mark.parametrize("body, message", [
    ({"axes": {"system": ["arc-hybrid"]}, "colour": 1}, "unknown key 'colour'"),
    ({"axes": {"sistem": ["arc-hybrid"]}}, "axes.sistem: a plain list needs a known axis name"),
    ({"axes": {"oracle": ["static"]}, "compare": [{"a": {"oracle": "static"}, "b": {"oracle": "nope"}}]},
     "compare[0].b.oracle: 'nope' is not one of static"),
    ({"axes": {"oracle": ["static"]}, "engine": {"kind": "kubernetes"}}, "engine.kind"),
    ({"axes": {"oracle": ["static", "static"]}}, "repeated value label"),
    ({"axes": {"oracle": ["static"]}, "set": {"output_dir": "x"}}, "set.output_dir"),
    ({"axes": {"treebank": {"ud": ".", "values": [{"A": {}, "B": {}}]}}}, "axes.treebank.values: expected a "
                                                                         "treebank directory or"),
])
def test_grid_errors_name_file_and_key(tmp_path, body, message):
    write_base(tmp_path, write_gold(tmp_path / "gold.conllu", sentences=1))
    path = write_grid(tmp_path, body)
    with pytest.raises(GridError, match=".*".join(map(__import__("re").escape, [str(path.name), message]))):
        load_grid(path)


def test_invalid_run_config_is_reported_before_running(tmp_path):
    from kgparser.experiments.grid import validate_runs

    write_base(tmp_path, write_gold(tmp_path / "gold.conllu", sentences=1))
    grid = load_grid(write_grid(tmp_path, {"axes": {"system": ["arc-hybrid", "arc-hybird"]}}))
    with pytest.raises(GridError, match="run system=arc-hybird: .*system.name"):
        validate_runs(grid)


# --- running and resuming -----------------------------------------------------

def test_runs_are_skipped_once_finished_and_rerun_when_the_grid_changes(tiny_grid, fake_runs):
    grid = load_grid(tiny_grid)
    assert run_grid(grid, log=lambda line: None) == []
    assert sum(c[3] == "train" for c in fake_runs) == 8 and sum(c[3] == "parse" for c in fake_runs) == 8
    assert all(runners.run_status(r, run_config(grid, r)) == "finished" for r in grid.runs)
    fake_runs.clear()
    assert run_grid(load_grid(tiny_grid), log=lambda line: None) == []
    assert fake_runs == []
    # one run's marker lost after training: it is resumed from last.pt
    (grid.runs[0].output_dir / runners.MARKER).unlink()
    run_grid(load_grid(tiny_grid), log=lambda line: None)
    assert [c[3] for c in fake_runs] == ["train", "parse"] and "--resume" in fake_runs[0]
    assert f"output_dir={grid.runs[0].output_dir}" in fake_runs[0]
    # a changed setting makes every run stale: trained again from scratch
    fake_runs.clear()
    changed = yaml.safe_load(tiny_grid.read_text())
    changed["set"]["training.epochs"] = 3
    tiny_grid.write_text(yaml.safe_dump(changed, sort_keys=False))
    run_grid(load_grid(tiny_grid), log=lambda line: None)
    trains = [c for c in fake_runs if c[3] == "train"]
    assert len(trains) == 8 and not any("--resume" in c for c in trains)
    # interrupted (no marker, a last.pt) under an older config: started over, not resumed
    fake_runs.clear()
    (grid.runs[1].output_dir / runners.MARKER).unlink()
    changed["set"]["training.epochs"] = 4
    tiny_grid.write_text(yaml.safe_dump(changed, sort_keys=False))
    grid = load_grid(tiny_grid)
    assert dict(runners.statuses(grid))[grid.runs[1]] == "partial"
    run_grid(grid, only=lambda run: run is grid.runs[1], log=lambda line: None)
    assert [c[3] for c in fake_runs] == ["train", "parse"] and "--resume" not in fake_runs[0]


def test_runs_stay_finished_when_an_option_is_added_with_its_old_behaviour(tiny_grid, fake_runs):
    grid = load_grid(tiny_grid)
    run_grid(grid, log=lambda line: None)
    first, second = grid.runs[0].output_dir, grid.runs[1].output_dir
    for out in (first, second):  # as if trained before model.input_dropout existed
        saved = yaml.safe_load((out / "config.yaml").read_text())
        del saved["model"]["input_dropout"]
        (out / "config.yaml").write_text(yaml.safe_dump(saved))
        marker = json.loads((out / runners.MARKER).read_text())
        (out / runners.MARKER).write_text(json.dumps({**marker, "fingerprint": "from-an-older-kgparser"}))
    saved["model"]["word_dim"] += 1  # the second run recorded another value: it is stale
    (second / "config.yaml").write_text(yaml.safe_dump(saved))
    status = dict(runners.statuses(load_grid(tiny_grid)))
    assert status[grid.runs[0]] == "finished" and status[grid.runs[1]] == "stale"
    assert sum(s == "finished" for s in status.values()) == len(grid.runs) - 1


def test_runs_turn_stale_when_a_system_default_changes(tiny_grid, fake_runs):
    """A finished run records its system's resolved options: when a code
    default changes (as Attardi's work_limit once did), its config and
    fingerprint stay the same, but the run is stale; markers written before
    the options were recorded keep their runs finished."""
    grid = load_grid(tiny_grid)
    run_grid(grid, log=lambda line: None)
    first, second = grid.runs[0].output_dir, grid.runs[1].output_dir
    marker = json.loads((first / runners.MARKER).read_text())
    assert marker["system_options"] == system_options(run_config(grid, grid.runs[0]))
    changed = {**marker["system_options"], "an_old_default": 5000}
    (first / runners.MARKER).write_text(json.dumps({**marker, "system_options": changed}))
    old = json.loads((second / runners.MARKER).read_text())
    del old["system_options"]
    (second / runners.MARKER).write_text(json.dumps(old))
    status = dict(runners.statuses(load_grid(tiny_grid)))
    assert status[grid.runs[0]] == "stale" and status[grid.runs[1]] == "finished"


def test_only_filter_and_threads(tiny_grid, fake_runs):
    grid = load_grid(tiny_grid)
    run_grid(grid, only=lambda run: run.labels["oracle"] == "dynamic", log=lambda line: None)
    trained = {_settings(c)["output_dir"] for c in fake_runs if c[3] == "train"}
    assert trained == {str(r.output_dir) for r in grid.runs if r.labels["oracle"] == "dynamic"}
    assert all(_settings(c)["threads"] == "1" for c in fake_runs if c[3] == "train")


def test_a_failed_run_has_no_marker_and_others_go_on(tiny_grid, monkeypatch):
    calls: list = []
    succeed = fake_call(calls)

    def call(command, **kwargs):
        if command[3] == "train" and "seed=2" in command:
            return 3
        return succeed(command, **kwargs)

    monkeypatch.setattr(runners.subprocess, "call", call)
    grid = load_grid(tiny_grid)
    failures = run_grid(grid, log=lambda line: None)
    assert len(failures) == 4 and all("training failed with exit code 3" in f for f in failures)
    done = [r for r in grid.runs if (r.output_dir / runners.MARKER).exists()]
    assert {r.labels["seed"] for r in done} == {"1"} and len(done) == 4


def test_a_run_another_process_is_executing_is_skipped(tiny_grid, fake_runs):
    grid = load_grid(tiny_grid)
    busy = grid.runs[0].output_dir
    busy.mkdir(parents=True)
    lines = []
    with runners.run_lock(busy):
        assert runners.statuses(grid)[0][1] == "running"
        failures = run_grid(load_grid(tiny_grid), log=lines.append)
    assert failures == []
    assert f"tiny: {len(grid.runs)} runs, 0 already finished, 1 running in another process, " \
           f"{len(grid.runs) - 1} to run (local)" in lines
    trained = {Path(_settings(c)["output_dir"]) for c in fake_runs if c[3] == "train"}
    assert busy not in trained and len(trained) == len(grid.runs) - 1
    assert [run.name for run, status in runners.statuses(grid) if status != "finished"] == [grid.runs[0].name]


def test_a_run_finished_meanwhile_by_another_process_is_not_trained_again(tiny_grid, fake_runs):
    grid = load_grid(tiny_grid)
    job = runners.make_job(grid, grid.runs[0])
    first = runners.execute(job)
    calls = len(fake_runs)
    assert runners.execute(job) == first  # listed as pending before the other process finished it
    assert len(fake_runs) == calls


def test_a_run_that_starts_after_the_listing_is_skipped_by_the_worker(tiny_grid, fake_runs):
    grid = load_grid(tiny_grid)
    job = runners.make_job(grid, grid.runs[0])
    Path(job.output_dir).mkdir(parents=True)
    lines = []
    with runners.run_lock(Path(job.output_dir)):
        failures = runners.run_local([job], 1, log=lines.append)
    assert failures == [] and fake_runs == []
    assert lines == [f"[1/1] skipped {job.name}: another process is executing the run in {job.output_dir}"]


class FakeRay:
    """The parts of the ``ray`` API the Ray engine uses; tasks run at once, in this process."""

    def __init__(self):
        self.init_arguments, self.resources = None, None

    def init(self, **arguments):
        self.init_arguments = arguments

    def remote(self, **resources):
        self.resources = resources

        def wrap(function):
            class Remote:
                @staticmethod
                def remote(job):
                    ref = FakeRay.Ref()
                    try:
                        ref.value = function(job)
                    except Exception as exc:
                        ref.error = exc
                    return ref
            return Remote
        return wrap

    @staticmethod
    def wait(refs, num_returns):
        return refs[:num_returns], refs[num_returns:]

    @staticmethod
    def get(ref):
        if ref.error is not None:
            raise ref.error
        return ref.value

    class Ref:
        value, error = None, None


class FakeSubmitit:
    """The parts of the ``submitit`` API the SLURM engine uses."""

    def __init__(self):
        self.folder, self.parameters = None, None
        fake = self

        class AutoExecutor:
            def __init__(self, folder):
                fake.folder = folder

            def update_parameters(self, **parameters):
                fake.parameters = parameters

            def map_array(self, function, jobs):
                return [FakeSubmitit.Handle(function, job, f"77_{i}") for i, job in enumerate(jobs)]

        self.AutoExecutor = AutoExecutor

    class Handle:
        def __init__(self, function, job, job_id):
            self.function, self.job, self.job_id = function, job, job_id

        def result(self):
            return self.function(self.job)


def test_ray_and_slurm_engines_send_every_unfinished_run(tiny_grid, fake_runs, monkeypatch):
    ray, submitit = FakeRay(), FakeSubmitit()
    monkeypatch.setitem(sys.modules, "ray", ray)
    monkeypatch.setitem(sys.modules, "submitit", submitit)
    body = yaml.safe_load(tiny_grid.read_text())
    body["engine"] = {"kind": "ray", "threads_per_run": 2, "ray": {"address": "head:6379", "num_gpus_per_run": 1},
                      "slurm": {"slurm_partition": "cpu", "timeout_min": 60}}
    tiny_grid.write_text(yaml.safe_dump(body, sort_keys=False))
    grid = load_grid(tiny_grid)
    assert run_grid(grid, only=lambda run: run.labels["seed"] == "1", log=lambda line: None) == []
    assert ray.init_arguments == {"address": "head:6379"} and ray.resources == {"num_cpus": 2, "num_gpus": 1}
    assert sum(c[3] == "train" for c in fake_runs) == 4
    fake_runs.clear()
    assert run_grid(grid, engine="slurm", log=lambda line: None) == []
    assert sum(c[3] == "train" for c in fake_runs) == 4
    assert submitit.parameters == {"cpus_per_task": 2, "name": "kgparser", "slurm_partition": "cpu",
                                   "timeout_min": 60}
    assert submitit.folder == str(grid.output_root / "_submitit")
    assert all((run.output_dir / runners.MARKER).exists() for run in grid.runs)


def test_cluster_engine_without_its_package_says_what_to_install(tiny_grid, fake_runs, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes "import ray" fail
    with pytest.raises(KgparserError, match=r"pip install 'kgparser\[ray\]'"):
        run_grid(load_grid(tiny_grid), engine="ray", log=lambda line: None)


# --- report -------------------------------------------------------------------

def _sentence_file(path: Path, heads: list[int]) -> list:
    path.write_text("".join(f"{d}\tw{d}\t_\tX\t_\t_\t{h}\t{'root' if h == 0 else 'dep'}\t_\t_\n"
                            for d, h in enumerate(heads[1:], start=1)) + "\n")
    return read_conllu(path, require_tree=False)


def test_nonprojective_precision_counts_the_predicted_arcs_with_the_gold_head(tmp_path):
    """Gold: 1 is the root, 1 -> 2, 3, 4 and 2 -> 5 (non-projective over 3, 4).
    Predicted: 2 is the root, 2 -> 1, 5 and 1 -> 3, 4.  Both arcs 1 -> 3 and
    1 -> 4 are gold arcs and non-projective in the prediction only (over 2),
    and the gold non-projective arc 2 -> 5 is found but projective there:
    recall 1/1, precision 2/2 (not 1/2)."""
    gold = _sentence_file(tmp_path / "gold.conllu", [-1, 0, 1, 1, 1, 2])
    predicted = _sentence_file(tmp_path / "pred.conllu", [-1, 2, 0, 1, 1, 2])
    scores = score_sentences(gold, predicted)
    counts = scores["nonprojective"]
    assert (counts.gold, counts.correct, counts.predicted, counts.predicted_correct) == (1, 1, 2, 2)
    assert (counts.precision, counts.recall) == (1.0, 1.0)
    assert list(scores["nonprojective_predicted"]) == [2] and list(scores["nonprojective_right"]) == [2]

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
        assert (config["nonprojective"]["predicted"], config["nonprojective"]["predicted_correct"]) == (predicted,
                                                                                                        right)
    row = oracle["rows"][0]
    static, dynamic = (next(c["nonprojective"] for c in data["configurations"] if c["labels"] == row[side])
                       for side in ("a", "b"))
    assert [(t["a"], t["b"]) for t in row["nonprojective_precision"]] == [
        (pytest.approx(static["predicted_correct"] / static["predicted"]),
         pytest.approx(dynamic["predicted_correct"] / dynamic["predicted"]))]
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
