"""Running the runs of a grid: resumable, in parallel locally, or on a cluster.

Each run is the same two commands wherever it executes, so any engine gives
the same files::

    kgparser train BASE --set KEY=VALUE ... --set output_dir=RUN_DIR [--resume]
    kgparser parse TEST --model RUN_DIR/best.pt --output RUN_DIR/test.pred.conllu

and, when both succeed, the marker ``RUN_DIR/experiment.json`` (written last,
atomically).  A run counts as finished when its marker records the same
fingerprint (of its resolved config, :func:`.grid.fingerprint`) as the grid
asks for now; a run interrupted during training is continued with
``--resume`` from its ``last.pt`` if it was started with the same config
(``RUN_DIR/.started``), and trained from scratch otherwise.  A run holds a
lock (``RUN_DIR/.lock``) while it executes, so several ``kgparser experiment
run`` commands (e.g. on different ``--only`` slices, or on machines sharing
the folder) can work on one grid: a run locked by another one is skipped,
and a run another one has finished meanwhile is not trained again.  A run
whose folder a trainer still writes (it holds ``RUN_DIR/.train.lock``, see
:mod:`kgparser.io.locking`) is skipped too, whoever started that trainer, so a
run never gets two writers.

A run's processes die with the process that started them (on Linux): if
``kgparser experiment run`` is killed, even with ``kill -9``, its trainer and
parser get SIGTERM instead of training on, orphaned, into a run that looks
free.  They stay in its process group, so Ctrl-C in the terminal reaches them
directly, as it reaches the command itself.

Engines: ``local`` runs at most ``max_parallel`` runs at once (each in its own
processes; threads of this process only wait for them); ``ray`` sends each run
to a Ray cluster as a task needing ``threads_per_run`` CPUs; ``slurm`` submits
a SLURM job array through ``submitit``.  Ray and submitit are imported only
when chosen (``pip install kgparser[ray]`` / ``kgparser[slurm]``).
"""
from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable

import yaml

from ..config import config_from_saved
from ..errors import KgparserError
from ..io.atomic import write_text
from ..io.locking import TRAIN_LOCK, LockBusy, exclusive_lock, is_locked
from ..io.parent_death import die_with_parent
from ..training.run_folder import BEST, LAST, mark_run_folder
from .grid import Grid, Run, fingerprint, run_config, system_options

MARKER = "experiment.json"
PREDICTIONS = "test.pred.conllu"
TRAIN_LOG = "train.log"
LOCK_FILE = ".lock"
#: the fingerprint of the config a run was started with (decides whether last.pt may be resumed)
STARTED = ".started"


class RunFailed(KgparserError):
    """A run's training or parsing command failed (the message points to its log)."""


class RunBusy(LockBusy):
    """Another process is executing the run (or a trainer still writes its folder)."""


@dataclass(frozen=True)
class Job:
    """Everything a worker needs to execute one run (plain data: it travels to Ray/SLURM)."""

    name: str
    base: str
    output_dir: str
    set_arguments: tuple[str, ...]
    test: str | None
    fingerprint: str
    threads: int
    point: tuple[tuple[str, str], ...]
    #: :func:`.grid.system_options` of the run's config, recorded in its marker
    system_options: dict


def run_status(run: Run, config) -> str:
    """``finished``, ``running`` (another process holds its lock, or a trainer
    its training lock), ``stale`` (finished under another config, or under
    transition-system defaults that have changed since: :func:`.grid.system_options`,
    recorded by runs finished since it was introduced), ``partial`` (has a
    last.pt to resume from) or ``pending``."""
    out = run.output_dir
    marked = (out / MARKER).exists()
    if marked:
        marker = _marker(out) or {}
        expected = fingerprint(config)
        same = marker.get("fingerprint") == expected or saved_config_fingerprint(out) == expected
        recorded = marker.get("system_options")
        if same and (recorded is None or recorded == system_options(config)):
            return "finished"
    if _locked_elsewhere(out):
        return "running"
    if marked:
        return "stale"
    if (out / LAST).exists():
        return "partial"
    return "pending"


def _locked_elsewhere(out: Path) -> bool:
    """Whether another process executes the run in ``out`` or a trainer writes it
    (one left running by a killed ``experiment run``, or started by hand).

    The training lock is probed only when the run lock is free: probing holds a
    lock for an instant, and a trainer started by an ``experiment run`` (which
    holds the run lock) must not find its training lock taken by the probe."""
    return is_locked(out / LOCK_FILE) or is_locked(out / TRAIN_LOCK)


def saved_config_fingerprint(out: Path) -> str | None:
    """Fingerprint of the config a run saved (``config.yaml``), read with today's
    defaults for settings added since it ran: a finished run stays finished when
    kgparser gains an option whose default trains as before, and turns stale when
    a setting it recorded differs."""
    try:
        return fingerprint(config_from_saved(yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))))
    except (OSError, yaml.YAMLError, KgparserError):
        return None


def statuses(grid: Grid) -> list[tuple[Run, str]]:
    return [(run, run_status(run, run_config(grid, run))) for run in grid.runs]


def make_job(grid: Grid, run: Run) -> Job:
    config = run_config(grid, run)
    return Job(run.name, str(grid.base), str(run.output_dir), tuple(run.set_arguments()), config.data.test,
               fingerprint(config), grid.engine.threads_per_run, run.point, system_options(config))


def _command(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "kgparser.cli", *arguments]


def _call(command: list[str], log: Path, threads: int, what: str, job: Job) -> None:
    """Run one of a run's commands and wait for it.  The thread that calls this
    forks the child and waits for its end, which matters on Linux: the child's
    death signal fires when the *thread* that forked it ends, not the process."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(command)}\n")
        handle.flush()
        code = subprocess.call(command, stdout=handle, stderr=subprocess.STDOUT, env=env,
                               preexec_fn=die_with_parent())
    if code != 0:
        raise RunFailed(f"run {job.name}: {what} failed with exit code {code}; see {log}")


def _resumable(out: Path, fingerprint: str) -> bool:
    """A ``last.pt`` left by an interrupted run of the same config."""
    started = out / STARTED
    return (out / LAST).exists() and started.exists() and started.read_text(encoding="utf-8") == fingerprint


def execute(job: Job) -> dict:
    """Train (or resume) one run, parse its test set with the best checkpoint and
    write the marker.  Returns the marker's content.  Raises :class:`RunBusy`
    when another process holds the run's lock, or a trainer its training lock."""
    out = Path(job.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    with run_lock(out):
        marker = _marker(out)
        if marker is not None and marker.get("fingerprint") == job.fingerprint:
            return marker  # finished by another process since this one listed it
        if is_locked(out / TRAIN_LOCK):  # checked before anything in the folder is touched
            raise RunBusy(f"a kgparser train process still writes the run in {out} (it holds "
                          f"{TRAIN_LOCK}; perhaps left by a killed experiment run)")
        return _execute_locked(job, out)


def run_lock(out: Path, wait: float = 1.0):
    """The exclusive lock of the run in ``out``, tried for up to ``wait`` seconds
    (a status check holds it for an instant) before raising :class:`RunBusy`."""
    return exclusive_lock(out / LOCK_FILE, wait, busy=f"another process is executing the run in {out}",
                          error=RunBusy)


def _marker(out: Path) -> dict | None:
    try:
        return json.loads((out / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _execute_locked(job: Job, out: Path) -> dict:
    (out / MARKER).unlink(missing_ok=True)
    log = out / TRAIN_LOG
    started = time.time()
    train = _command("train", job.base, *(a for s in job.set_arguments for a in ("--set", s)),
                     "--set", f"output_dir={out}", "--set", f"threads={job.threads}",
                     "--set", "training.progress=false")
    if _resumable(out, job.fingerprint):
        train.append("--resume")
    else:
        for name in (LAST, BEST):
            (out / name).unlink(missing_ok=True)
    write_text(out / STARTED, job.fingerprint)
    mark_run_folder(out)  # its train.log and markers are kgparser's: train writes beside them
    environment = run_environment()
    _call(train, log, job.threads, "training", job)
    if job.test:
        _call(_command("parse", job.test, "--model", str(out / BEST), "--output", str(out / PREDICTIONS),
                       "--threads", str(job.threads)), log, job.threads, "parsing the test set", job)
    marker = {"name": job.name, "point": dict(job.point), "fingerprint": job.fingerprint,
              "system_options": job.system_options, "set": list(job.set_arguments), "test": job.test,
              "predictions": PREDICTIONS if job.test else None,
              "seconds": round(time.time() - started, 1), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "environment": environment}
    write_text(out / MARKER, json.dumps(marker, indent=2))
    return marker


def run_environment() -> dict:
    """Where a run executes, recorded in its marker for the report: the kgparser
    commit (when kgparser runs from a git checkout; ``+modified`` when its code
    differs from that commit) as the run starts, Python and torch versions, and
    the machine."""
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
    return {"commit": _source_commit(), "python": platform.python_version(), "torch": torch_version,
            "machine": _machine()}


def _source_commit() -> str | None:
    checkout = Path(__file__).resolve().parents[2]
    if not (checkout / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short=7", "HEAD"],
                                capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        changes = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no",
                                  "--", "kgparser"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+modified" if changes.strip() else "")


def _machine() -> str:
    processor = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            processor = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
                             processor)
    except OSError:
        pass
    return f"{processor}, {os.cpu_count()} CPUs, {platform.system()}"


def _outcome(job: Job, done: str, result: Callable[[], object], failures: list[str],
             log: Callable[[str], None]) -> None:
    """Wait for one run's ``result`` and log how it ended (``done``: ``[i/n]``).  A
    run another process holds is skipped, not failed: it is not lost, only
    elsewhere.  A failed run is recorded in ``failures`` and must not stop the others."""
    try:
        result()
        log(f"{done} finished {job.name}")
    except RunBusy as exc:
        log(f"{done} skipped {job.name}: {exc}")
    except Exception as exc:
        failures.append(f"{job.name}: {exc}")
        log(f"{done} FAILED {job.name}: {exc}")


def run_local(jobs: list[Job], max_parallel: int, execute_job: Callable[[Job], dict] = execute,
              log: Callable[[str], None] = print) -> list[str]:
    """At most ``max_parallel`` runs at once; returns the failures' messages."""
    failures: list[str] = []
    with ThreadPoolExecutor(max_workers=max_parallel) as pool:
        futures = {pool.submit(execute_job, job): job for job in jobs}
        try:
            for done, future in enumerate(as_completed(futures), start=1):
                _outcome(futures[future], f"[{done}/{len(jobs)}]", future.result, failures, log)
        except BaseException:
            # Ctrl-C reaches the running runs' processes too (they share the terminal's
            # process group), and they end; start no new ones and wait for them
            for future in futures:
                future.cancel()
            raise
    return failures


def run_ray(jobs: list[Job], settings: dict, threads: int, log: Callable[[str], None] = print) -> list[str]:
    """One Ray task per run; ``settings``: ``address`` (default ``auto``: the running
    cluster), ``num_gpus_per_run`` (default 0), ``init`` (more ``ray.init`` arguments)."""
    try:
        import ray
    except ImportError:
        raise KgparserError("engine.kind: ray needs the ray package: pip install 'kgparser[ray]'") from None
    ray.init(address=settings.get("address", "auto"), **settings.get("init", {}))
    remote = ray.remote(num_cpus=threads, num_gpus=settings.get("num_gpus_per_run", 0))(execute)
    pending = {remote.remote(job): job for job in jobs}
    failures: list[str] = []
    done = 0
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        done += 1
        _outcome(pending.pop(ready[0]), f"[{done}/{len(jobs)}]", functools.partial(ray.get, ready[0]), failures, log)
    return failures


def run_slurm(jobs: list[Job], settings: dict, threads: int, folder: Path,
              log: Callable[[str], None] = print) -> list[str]:
    """A SLURM job array through submitit; ``settings`` go to
    ``AutoExecutor.update_parameters`` (e.g. ``slurm_partition``, ``timeout_min``,
    ``mem_gb``, ``gpus_per_node``, ``slurm_array_parallelism``); ``cpus_per_task``
    defaults to ``threads_per_run``.  Waits for the jobs to end."""
    try:
        import submitit
    except ImportError:
        raise KgparserError("engine.kind: slurm needs submitit: pip install 'kgparser[slurm]'") from None
    executor = submitit.AutoExecutor(folder=str(folder))
    executor.update_parameters(**{"cpus_per_task": threads, "name": "kgparser", **settings})
    submitted = executor.map_array(execute, jobs)
    log(f"submitted {len(submitted)} SLURM jobs (array {submitted[0].job_id.split('_')[0] if submitted else '-'}); "
        f"logs in {folder}")
    failures: list[str] = []
    for done, (job, handle) in enumerate(zip(jobs, submitted), start=1):
        _outcome(job, f"[{done}/{len(jobs)}]", handle.result, failures, log)
    return failures


def run_grid(grid: Grid, *, engine: str | None = None, max_parallel: int | None = None,
             only: Callable[[Run], bool] | None = None, execute_job: Callable[[Job], dict] = execute,
             log: Callable[[str], None] = print) -> list[str]:
    """Run every run not finished yet (``stale`` ones again) and not running
    elsewhere; returns failure messages."""
    todo, finished, running = [], 0, 0
    for run, status in statuses(grid):
        if only is not None and not only(run):
            continue
        if status == "finished":
            finished += 1
            continue
        if status == "running":
            running += 1
            continue
        if status == "stale":  # execute() starts it over: its .started fingerprint differs too
            log(f"{run.name}: the grid or base config changed since it finished; training it again")
        todo.append(make_job(grid, run))
    kind = engine or grid.engine.kind
    elsewhere = f", {running} running in another process" if running else ""
    log(f"{grid.name}: {finished + running + len(todo)} runs, {finished} already finished{elsewhere}, "
        f"{len(todo)} to run ({kind})")
    if not todo:
        return []
    threads = grid.engine.threads_per_run
    if kind == "local":
        return run_local(todo, max_parallel or grid.engine.parallel(), execute_job, log)
    if kind == "ray":
        return run_ray(todo, grid.engine.ray, threads, log)
    if kind == "slurm":
        return run_slurm(todo, grid.engine.slurm, threads, grid.output_root / "_submitit", log)
    raise KgparserError(f"unknown engine {kind!r}")
