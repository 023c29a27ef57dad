"""A killed ``kgparser experiment run`` leaves no trainer behind, and a run
never gets two writers (issue 19).

Before the fix, ``kill -9`` of ``experiment run`` orphaned its trainer, which
trained on while the run's lock was gone; the next ``experiment run`` then
resumed the run with a second trainer, and both wrote ``metrics.jsonl`` and the
checkpoints.  These tests start real processes: the first trains a tiny model
for a few seconds, so it needs Linux (the death signal is prctl's, and
processes are found through /proc).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from kgparser.experiments import load_grid, runners
from kgparser.io.conllu import read_conllu, write_conllu
from kgparser.io.locking import TRAIN_LOCK

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="needs Linux: prctl(PR_SET_PDEATHSIG) and /proc")

SAMPLE = Path(__file__).resolve().parents[1] / "kgparser" / "resources" / "en_ewt_sample"
EPOCHS = 4
#: long enough that a kill lands while an epoch trains, short enough for a quick test
TRAIN_SENTENCES = 800


def write_tiny_grid(tmp_path: Path) -> Path:
    """One run of a tiny model, a second or two per epoch."""
    small = tmp_path / "small.conllu"
    write_conllu(read_conllu(SAMPLE / "dev.conllu")[:30], small)
    (tmp_path / "base.yaml").write_text(yaml.safe_dump({
        "data": {"train": str(SAMPLE / "train.conllu"), "dev": str(small), "test": str(small),
                 "max_train_sentences": TRAIN_SENTENCES},
        "model": {"word_dim": 8, "pos_dim": 4, "lstm_hidden": 8, "lstm_layers": 1, "mlp_hidden": 8},
        "training": {"epochs": EPOCHS, "tensorboard": False}}), encoding="utf-8")
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"base": "base.yaml", "output_root": "runs", "axes": {"seed": [1]}}),
                    encoding="utf-8")
    return grid


def experiment_run(grid: Path, log: Path) -> subprocess.Popen:
    with open(log, "ab") as handle:
        return subprocess.Popen([sys.executable, "-m", "kgparser.cli", "experiment", "run", str(grid)],
                                stdout=handle, stderr=subprocess.STDOUT)


def stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, ...);
    ``None`` once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for whoever adopted it to reap it."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = stat_fields(int(entry.name))
            if fields is not None and fields[1] == str(pid):
                found.append(int(entry.name))
    return found


def command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def wait_for(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {seconds} s waiting for {what}")


def metric_records(run_dir: Path) -> list[dict]:
    path = run_dir / "metrics.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.strip()]


def trainer_of(parent: subprocess.Popen) -> int | None:
    return next((pid for pid in children(parent.pid) if "train" in command_line(pid)[3:4]), None)


def test_kill_9_of_experiment_run_kills_its_trainer_and_the_run_then_resumes_cleanly(tmp_path):
    grid = write_tiny_grid(tmp_path)
    run_dir = tmp_path / "runs" / "seed=1"
    log = tmp_path / "experiment.log"
    parent, trainer = experiment_run(grid, log), None
    try:
        wait_for(lambda: (run_dir / runners.LAST).exists(), 90, "the first epoch's checkpoint")
        trainer = trainer_of(parent)
        assert trainer is not None, f"no trainer child of {parent.pid}; log:\n{log.read_text()}"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_for(lambda: not alive(trainer), 5, f"the trainer {trainer} to die with its parent")
    finally:
        for pid in (parent.pid, trainer):
            if pid is not None and alive(pid):
                os.kill(pid, signal.SIGKILL)
        parent.wait()
    resumed = subprocess.run([sys.executable, "-m", "kgparser.cli", "experiment", "run", str(grid)],
                             capture_output=True, text=True, timeout=240)
    assert resumed.returncode == 0, resumed.stderr
    records = metric_records(run_dir)
    assert [r.get("epoch") for r in records] == [*range(1, EPOCHS + 1), None], records
    assert records[-1]["final"] is True
    trainings = [line for line in (run_dir / runners.TRAIN_LOG).read_text().splitlines()
                 if line.startswith("$ ") and " train " in line]
    assert len(trainings) == 2 and trainings[1].endswith("--resume")
    assert (run_dir / runners.MARKER).exists()


def hold_training_lock(folder: Path) -> subprocess.Popen:
    """Another process holding ``folder``'s training lock until its stdin closes,
    as a trainer left running by a killed ``experiment run`` would."""
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys\nfrom kgparser.io.locking import training_lock\n"
                               "with training_lock(sys.argv[1]):\n"
                               "    print('locked', flush=True)\n    sys.stdin.read()\n", str(folder)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "locked\n"
    return holder


def test_a_run_whose_folder_a_trainer_still_writes_is_running_and_skipped(tmp_path, monkeypatch):
    grid = load_grid(write_tiny_grid(tmp_path))
    run = grid.runs[0]
    job = runners.make_job(grid, run)
    run.output_dir.mkdir(parents=True)
    (run.output_dir / runners.LAST).write_bytes(b"the orphan's checkpoint")
    calls = []
    monkeypatch.setattr(runners.subprocess, "call", lambda command, **options: calls.append(command) or 1)
    holder = hold_training_lock(run.output_dir)
    try:
        assert runners.statuses(grid) == [(run, "running")]
        lines = []
        assert runners.run_local([job], 1, log=lines.append) == []
    finally:
        holder.communicate("")
    assert lines == [f"[1/1] skipped {job.name}: a kgparser train process still writes the run in "
                     f"{run.output_dir} (it holds {TRAIN_LOCK}; perhaps left by a killed experiment run)"]
    assert calls == [] and (run.output_dir / runners.LAST).read_bytes() == b"the orphan's checkpoint"
    assert runners.statuses(grid) == [(run, "partial")]
