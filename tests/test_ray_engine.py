"""The Ray engine of ``kgparser experiment run`` against a real local Ray
instance (skipped where the ``ray`` extra is not installed): a 4-run grid end
to end, stopped half-way and resumed, then reported."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_grids import write_tiny_grid

pytest.importorskip("ray")

RUNS = ["oracle=static/seed=1", "oracle=static/seed=2", "oracle=dynamic/seed=1", "oracle=dynamic/seed=2"]


def _grid(tmp_path: Path) -> Path:
    return write_tiny_grid(tmp_path, {"oracle": ["static", "dynamic"], "seed": [1, 2]},
                           {"kind": "ray", "threads_per_run": 1,
                            "ray": {"address": "local", "init": {"num_cpus": 2, "include_dashboard": False}}},
                           compare=[{"name": "oracle", "a": {"oracle": "static"}, "b": {"oracle": "dynamic"}}])


def _experiment(*arguments: str, **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kgparser.cli", "experiment", *arguments],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **options)


def _wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.5)
    return False


def test_a_grid_runs_on_a_local_ray_instance_stops_and_resumes(tmp_path):
    grid = _grid(tmp_path)
    markers = [tmp_path / "runs" / run / "experiment.json" for run in RUNS]
    first = _experiment("run", str(grid))
    try:
        assert _wait_for(lambda: any(m.exists() for m in markers) or first.poll() is not None, timeout=240)
        assert first.poll() is None, first.communicate()[0]
    finally:
        first.send_signal(signal.SIGTERM)
        output, _ = first.communicate(timeout=120)
    finished_before = sum(m.exists() for m in markers)
    assert 1 <= finished_before < len(RUNS), output  # stopped half-way

    second = _experiment("run", str(grid))
    output, _ = second.communicate(timeout=400)
    assert second.returncode == 0, output
    assert f"{finished_before} already finished" in output
    assert all(m.exists() for m in markers)
    for run in RUNS:
        epochs = [json.loads(line).get("epoch")
                  for line in (tmp_path / "runs" / run / "metrics.jsonl").read_text().splitlines()]
        assert epochs == [1, 2, None], (run, epochs)  # each epoch once, then the test scores

    report = _experiment("report", str(grid))
    output, _ = report.communicate(timeout=120)
    assert report.returncode == 0, output
    data = json.loads((tmp_path / "runs" / "report" / "results.json").read_text())
    assert sum(len(c["runs"]) for c in data["configurations"]) == 4
