"""The SLURM engine of ``kgparser experiment run`` against a real single-node
SLURM cluster that ``experiments/slurm_single_node.sh`` starts on this machine
(munged + slurmctld + slurmd, all as root, from a temporary folder): a 2-run
grid submitted as a job array through submitit, then run again (nothing left
to submit) and reported.

Skipped unless submitit is installed (``pip install 'kgparser[slurm]'``), the
SLURM and munge daemons are on PATH (``apt-get install slurm-wlm munge``) and
the test runs as root (the daemons run as root, ``SlurmUser=root``).  Most
machines, CI included, skip it."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from cluster_grids import write_tiny_grid

pytest.importorskip("submitit", reason="submitit is not installed: pip install 'kgparser[slurm]'")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "experiments" / "slurm_single_node.sh"
RUNS = ["seed=1", "seed=2"]
DAEMONS = ["munged", "slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scancel"]

_missing = [name for name in DAEMONS if shutil.which(name) is None]
pytestmark = [
    pytest.mark.skipif(bool(_missing), reason=f"SLURM / munge not installed (no {', '.join(_missing)} on PATH): "
                                               "apt-get install slurm-wlm munge"),
    pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                       reason="the single-node SLURM cluster runs its daemons as root: run the test as root"),
]


def _free_port_pair() -> int:
    """A port P such that P and P + 1 (SlurmctldPort, SlurmdPort) are free now."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port >= 65535:
            continue
        try:
            with socket.socket() as first, socket.socket() as second:
                first.bind(("127.0.0.1", port))
                second.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two consecutive free ports")


@pytest.fixture
def slurm_cluster():
    """Starts the cluster (a short folder under the system's temp folder: the munge
    socket's path must fit in 108 bytes), yields its environment, stops it."""
    folder = Path(tempfile.mkdtemp(prefix="kgslurm-"))
    environment = {**os.environ, "KGPARSER_SLURM_PORT": str(_free_port_pair()),
                   "SLURM_CONF": str(folder / "slurm.conf")}
    for name in list(environment):  # a surrounding SLURM job's settings must not leak into the grid's jobs
        if name.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and name != "SLURM_CONF":
            del environment[name]
    started = time.monotonic()
    try:
        start = subprocess.run(["bash", str(SCRIPT), "start", str(folder)], env=environment,
                               capture_output=True, text=True, timeout=120)
        assert start.returncode == 0, start.stdout + start.stderr
        print(f"single-node SLURM cluster started in {time.monotonic() - started:.1f} s")
        yield environment
    finally:
        stop = subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], env=environment,
                              capture_output=True, text=True, timeout=120)
        assert stop.returncode == 0, stop.stdout + stop.stderr
        shutil.rmtree(folder, ignore_errors=True)


def _grid(tmp_path: Path) -> Path:
    return write_tiny_grid(tmp_path, {"seed": [1, 2]},
                           {"kind": "slurm", "threads_per_run": 1,
                            "slurm": {"slurm_partition": "debug", "timeout_min": 10, "mem_gb": 1}})


def _experiment(environment: dict, *arguments: str, timeout: float) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "kgparser.cli", "experiment", *arguments], env=environment,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return done.returncode, done.stdout


def test_a_grid_runs_as_a_job_array_on_a_single_node_slurm_cluster(tmp_path, slurm_cluster):
    grid = _grid(tmp_path)
    started = time.monotonic()
    code, output = _experiment(slurm_cluster, "run", str(grid), timeout=500)
    print(f"2-run grid through SLURM in {time.monotonic() - started:.1f} s")
    logs = "\n".join(f"--- {log}\n{log.read_text(errors='replace')[-2000:]}"
                     for log in sorted((tmp_path / "runs" / "_submitit").glob("*")) if log.is_file())
    assert code == 0, output + logs
    assert "0 already finished, 2 to run (slurm)" in output, output
    assert "submitted 2 SLURM jobs (array " in output, output
    assert output.count("finished seed=") == 2, output
    for run in RUNS:
        out = tmp_path / "runs" / run
        marker = json.loads((out / "experiment.json").read_text())
        assert marker["fingerprint"], marker
        assert (out / "test.pred.conllu").stat().st_size > 0
        epochs = [json.loads(line).get("epoch") for line in (out / "metrics.jsonl").read_text().splitlines()]
        assert epochs == [1, 2, None], (run, epochs)  # each epoch once, then the test scores
    # the runs were the two tasks of one SLURM job array: submitit's logs are ARRAY_TASK_STEPTASK_log.out
    array = re.search(r"submitted 2 SLURM jobs \(array (\d+)\)", output).group(1)
    assert {log.name for log in (tmp_path / "runs" / "_submitit").glob("*_log.out")} == \
        {f"{array}_0_0_log.out", f"{array}_1_0_log.out"}, logs

    code, output = _experiment(slurm_cluster, "run", str(grid), timeout=120)
    assert code == 0, output
    assert "2 already finished, 0 to run" in output and "submitted" not in output, output

    code, output = _experiment(slurm_cluster, "report", str(grid), timeout=120)
    assert code == 0, output
    data = json.loads((tmp_path / "runs" / "report" / "results.json").read_text())
    assert sum(len(c["runs"]) for c in data["configurations"]) == 2
    assert (tmp_path / "runs" / "report" / "report.md").exists()
