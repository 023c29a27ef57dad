"""Data-parallel training (torch.distributed, gloo on CPU, launched by torchrun)."""
import json
import subprocess
import sys
import time

import pytest
import torch
import torch.distributed as dist
from test_cli_train_parse import write_config

from kgparser.cli import main
from kgparser.inference.parser import Parser
from kgparser.training.distributed import World, share

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")


def test_shares_partition_the_padded_batches():
    batches = [[i] for i in range(7)]
    shares = [share(batches, World(rank, 3)) for rank in range(3)]
    assert [len(s) for s in shares] == [3, 3, 3]
    assert sorted(b[0] for s in shares for b in s) == sorted(list(range(7)) + [0, 1])
    assert share(batches, World()) == batches


AVERAGE = r"""
import sys, torch, torch.distributed as dist
from kgparser.training.distributed import GradientAverager, start, world_from_environment
world = world_from_environment()
start(world, "cpu")
weights = [torch.nn.Parameter(torch.zeros(2, 3)), torch.nn.Parameter(torch.zeros(4))]
weights[0].grad = torch.full((2, 3), float(world.rank + 1))
if world.rank == 0:
    weights[1].grad = torch.full((4,), 6.0)   # rank 1 has no gradient here: it counts as zero
GradientAverager(weights, world)()
sys.stdout.write(f"{weights[0].grad.flatten().tolist()} {weights[1].grad.tolist()}\n")  # one write: no interleaving
sys.stdout.flush()
dist.destroy_process_group()
"""


def _torchrun(code: str, *args: str, nproc: int = 2, timeout: int = 120, env: dict | None = None):
    import os

    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           f"--nproc-per-node={nproc}", "--no-python", sys.executable, "-c", code, *args],
                          capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})))


def test_gradients_are_averaged_over_processes():
    done = _torchrun(AVERAGE)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert lines == ["[1.5, 1.5, 1.5, 1.5, 1.5, 1.5] [3.0, 3.0, 3.0, 3.0]"] * 2


STOP = r"""
import os, sys, torch, torch.distributed as dist
from kgparser.training.distributed import start, stop, sum_over_processes, world_from_environment
from kgparser.training.trainer import _adam
threads = lambda: len(os.listdir("/proc/self/task"))
before = threads()
start(world_from_environment(), "cpu")
_adam([torch.nn.Parameter(torch.zeros(3))], 0.001, (0.9, 0.9))  # imports torch._dynamo
sum_over_processes([1.0])
stop()
sys.stdout.write(f"threads {before} {threads()}\n")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
def test_stopping_ends_the_groups_worker_threads():
    """Gloo's threads must be gone before interpreter shutdown: one still
    freeing the last all-reduce's tensors then aborts the process (seen in CI)."""
    done = _torchrun(STOP)
    assert done.returncode == 0, done.stderr
    counts = [line.split()[1:] for line in done.stdout.splitlines() if line.startswith("threads")]
    assert len(counts) == 2 and all(before == after for before, after in counts), done.stdout


#: two ranks average a gradient once; rank 1 first does ``{rank_one}``
RANK_ONE_THEN_AVERAGE = """
import sys, time, torch
from kgparser.training.distributed import GradientAverager, start, world_from_environment
world = world_from_environment()
start(world, "cpu")
if world.rank == 1:
    {rank_one}
weight = torch.nn.Parameter(torch.zeros(2))
weight.grad = torch.ones(2)
GradientAverager([weight], world)()
"""
FAILING_RANK = RANK_ONE_THEN_AVERAGE.format(rank_one="sys.exit(3)")


def test_a_failing_rank_ends_the_run_instead_of_a_hang():
    started = time.monotonic()
    done = _torchrun(FAILING_RANK, env={"KGPARSER_DIST_TIMEOUT": "20"})
    assert done.returncode != 0
    assert time.monotonic() - started < 90


def test_two_processes_train_a_model_that_parses_and_resumes_with_one(tmp_path, capsys):
    config = write_config(tmp_path)
    assert main(["train", config, "--quiet", "--nproc", "2", "--set", "training.epochs=2"]) == 0
    run = tmp_path / "run"
    epochs = [json.loads(line).get("epoch") for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert epochs == [1, 2]
    last = torch.load(run / "last.pt", weights_only=True)
    assert last["training"]["world_size"] == 2 and last["format"] == "kgparser-checkpoint"
    parsed = Parser.load(run / "best.pt").parse(tmp_path / "dev.conllu")
    assert len(parsed) == 3 and all(s.heads[1:].count(0) == 1 for s in parsed)
    capsys.readouterr()
    assert main(["train", config, "--resume", "--set", "training.epochs=3"]) == 0
    assert "trained by 2 process(es), resumed by 1" in capsys.readouterr().err
    epochs = [json.loads(line).get("epoch") for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert epochs == [1, 2, 3]


def test_shares_put_batches_of_similar_cost_in_one_round():
    batches = [[i] * size for i, size in enumerate([5, 1, 9, 2, 8, 6])]
    shares = [share(batches, World(rank, 2)) for rank in range(2)]
    rounds = list(zip(*shares))
    assert [sorted(map(len, r)) for r in rounds] == [[5, 6], [1, 2], [8, 9]]  # in the order of their first batch
    assert sorted(b[0] for s in shares for b in s) == list(range(6))


SPARSE_ROWS = r"""
import sys, torch, torch.distributed as dist
from types import SimpleNamespace
from kgparser.training.distributed import GradientAverager, start, world_from_environment
world = world_from_environment()
start(world, "cpu")
table, dense = torch.nn.Parameter(torch.zeros(6, 2)), torch.nn.Parameter(torch.zeros(3))
grad = torch.zeros(6, 2)
grad[[1, 4] if world.rank == 0 else [4, 5]] = torch.tensor([[2.0, 4.0], [6.0, 8.0]])
table.grad, dense.grad = grad, torch.full((3,), float(world.rank))
averager = GradientAverager([table, dense], world, row_sparse={"words": table})
if sys.argv[1] == "unannounced":
    try:
        averager()
    except RuntimeError as error:
        sys.stdout.write(f"refused: {error}\n")
        dist.destroy_process_group()
        sys.exit(0)
# the batch's ids: rows 1 and 4 (rank 0), 4 and 5 (rank 1), and row 2 without a gradient
averager.batch_started(SimpleNamespace(words=torch.tensor([[1, 4, 2], [4, 1, 0]] if world.rank == 0 else [[5, 4, 2]])))
averager()
sys.stdout.write(f"{table.grad.tolist()} {dense.grad.tolist()}\n")
sys.stdout.flush()
dist.destroy_process_group()
"""


def test_embedding_rows_are_averaged_like_the_dense_gradients():
    done = _torchrun(SPARSE_ROWS, "announced")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
    expected = "[[0.0, 0.0], [1.0, 2.0], [0.0, 0.0], [0.0, 0.0], [4.0, 6.0], [3.0, 4.0]] [0.5, 0.5, 0.5]"
    assert lines == [expected] * 2


def test_embedding_rows_must_be_announced():
    done = _torchrun(SPARSE_ROWS, "unannounced")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("refused: GradientAverager: batch_started() was not called") == 2


# -- a rank that dies or stops answering (issue 36) ------------------------------------------

def _failures(**exitcodes):
    from types import SimpleNamespace

    return {int(rank[1:]): SimpleNamespace(exitcode=code) for rank, code in exitcodes.items()}


@pytest.mark.parametrize("failures, first, line", [
    (_failures(r1=-9, r0=75), 1, "rank 1 died (signal 9, SIGKILL); the run is resumable with --resume"),
    (_failures(r0=75, r1=-9), 0, "rank 1 died (signal 9, SIGKILL); the run is resumable with --resume"),
    (_failures(r0=75), 0, "rank 1 died; the run is resumable with --resume"),
    (_failures(r0=76, r2=-9, r1=76), 0, "rank 2 stopped answering (no reply within KGPARSER_DIST_TIMEOUT, 7 s); "
                                        "the run is resumable with --resume"),
    (_failures(r1=1, r0=75), 1, "rank 1 failed (exit code 1); its error is above"),
])
def test_the_launcher_names_the_rank_that_died_or_stopped(monkeypatch, failures, first, line):
    from kgparser.training.distributed import _failure_line

    monkeypatch.setenv("KGPARSER_DIST_TIMEOUT", "7")
    assert _failure_line(failures, first, nproc=len(failures) + (0 if 1 in failures else 1)) == line


def _rank_process(marker: str) -> int | None:
    """The process id of rank 1 of the run whose environment holds ``marker``."""
    import os

    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                variables = environ.read().split(b"\0")
        except OSError:
            continue
        if b"RANK=1" in variables and f"KGPARSER_TEST_RUN={marker}".encode() in variables:
            return int(pid)
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the rank in /proc")
def test_a_rank_killed_mid_run_is_one_line_and_the_run_resumes(tmp_path):
    import os
    import signal

    config = write_config(tmp_path)
    run = tmp_path / "run"
    started = subprocess.Popen([sys.executable, "-m", "kgparser", "train", config, "--quiet", "--nproc", "2",
                                "--set", "training.epochs=400"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=dict(os.environ, KGPARSER_TEST_RUN=str(tmp_path)))
    deadline = time.monotonic() + 120
    while not (run / "last.pt").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(_rank_process(str(tmp_path)), signal.SIGKILL)
    out, err = started.communicate(timeout=60)
    assert started.returncode == 1 and out == ""
    assert err == "kgparser train: error: rank 1 died (signal 9, SIGKILL); the run is resumable with --resume\n"
    done = torch.load(run / "last.pt", weights_only=True)["epoch"]
    assert main(["train", config, "--quiet", "--resume", "--set", f"training.epochs={done + 1}"]) == 0


SILENT_RANK = RANK_ONE_THEN_AVERAGE.format(rank_one="time.sleep(60)")


def test_a_rank_that_stops_answering_is_one_line_from_each_survivor():
    started = time.monotonic()
    done = _torchrun(SILENT_RANK, env={"KGPARSER_DIST_TIMEOUT": "3"})
    assert done.returncode != 0 and time.monotonic() - started < 50
    assert ("kgparser train: error: rank 0: another training process stopped answering (no reply within "
            "KGPARSER_DIST_TIMEOUT, 3 s); the run is resumable with --resume\n") in done.stderr
    assert "[rank0]" not in done.stderr  # no traceback of the survivor
