"""Parsing processes: an ordered pool of workers for ``kgparser parse --processes N``.

Each worker is a process of its own running on one torch thread.  On Linux
with the model on the CPU it is forked (as PyTorch's DataLoader forks its
workers after torch has started, each on one thread): it starts in a fraction
of a second, where a fresh interpreter (``spawn``) imports torch again, 3 to
4 s on a busy 2-core machine.  Elsewhere, and for a model on a GPU (CUDA
cannot be forked), it is spawned.  It builds its model once, from the
parent's model as plain data (weights,
vocabularies, config: what a checkpoint holds; a model's pretrained encoder
is loaded once per worker from where the parent's came from), then answers
the chunks it is sent with the function it was handed (``work(model,
chunk)``), one at a time, until told to stop.

:meth:`ProcessPool.map` feeds the chunks of an iterable to whichever worker
is free and yields the results in the chunks' order, holding at most
``2 * processes`` chunks at a time.  A worker that dies (killed, out of
memory) ends the map with :class:`WorkerDied`; an error raised while
parsing a chunk is raised again here (a :class:`~kgparser.errors.KgparserError`
with its own message).  The workers ignore SIGINT, so Ctrl-C, which the
terminal sends to the whole process group, reaches the parent alone, which
then stops every worker; so does any other way the map ends early.

Workers end with their parent however it ends, ``kill -9`` included: on
Linux the kernel sends them SIGTERM (:mod:`kgparser.io.parent_death`), and
everywhere the pipe from the parent reaches its end, since a worker keeps no
copy of the parent's ends.  No more workers start than the cores this
process may use and the memory available holds (:func:`worker_count`).
"""
from __future__ import annotations

import io
import multiprocessing
import os
import resource
import signal
import sys
import traceback
import warnings
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterable, Iterator, Sequence

from ..errors import KgparserError
from ..io.parent_death import end_with_parent
from ..model.memory import available_memory

#: chunks in flight (sent, or parsed but not yet yielded) per worker
CHUNKS_PER_WORKER = 2
#: seconds a stopping worker is given to end by itself before it is terminated
STOP_SECONDS = 5


class WorkerDied(KgparserError):
    """A parsing process ended without being told to."""


class WorkerFailed(KgparserError):
    """Parsing a chunk raised an unexpected error in a worker (its traceback is in the message)."""


def model_bytes(model) -> bytes:
    """The model as plain data (:meth:`Model.to_data`) in ``torch.save``'s format,
    for the workers to rebuild it."""
    import torch

    buffer = io.BytesIO()
    torch.save(model.to_data(), buffer)
    return buffer.getvalue()


def _build_model(data: bytes, device: str):
    import torch

    from ..model import Model

    torch.set_num_threads(1)
    return Model.from_data(torch.load(io.BytesIO(data), weights_only=True)).to(device)


def _serve(connection: Connection, parent: int, inherited: tuple, data: bytes, device: str, work: Callable) -> None:
    """A worker's life: tied to its parent (process ``parent``; ``inherited``:
    the parent's ends of the pipes, which a forked worker holds copies of),
    build the model, then answer ``(index, chunk)`` with ``(index, ("done",
    work(model, chunk)))`` or ``(index, failure)`` until ``None``."""
    _tie_to_parent(parent, inherited)
    try:
        model = _build_model(data, device)
    except Exception as error:  # reported by the parent, which sends no chunk then
        connection.send((-1, failure(error)))
        return
    del data
    while True:
        try:
            task = connection.recv()
        except EOFError:  # the parent is gone
            return
        if task is None:
            return
        index, chunk = task
        try:
            connection.send((index, answered(work, model, chunk)))
        except (BrokenPipeError, ConnectionResetError):  # the parent is gone
            return


def _tie_to_parent(parent: int, inherited: tuple) -> None:
    """End when the parent ends, however it ends: SIGTERM from the kernel where
    it can send one, else the end of the pipe, which comes only when no
    process but the parent holds its end (hence the copies closed here).  The
    parent's own handlers of SIGTERM and SIGHUP, which a forked worker
    inherits, are reset: a worker just ends."""
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    end_with_parent(parent)
    for connection in inherited:
        connection.close()


def answered(work: Callable, model, chunk) -> tuple:
    """``("done", work(model, chunk))``, or the failure of an error it raised
    (a worker's answer, which :func:`result` turns back into a result or an error)."""
    try:
        return "done", work(model, chunk)
    except Exception as error:
        return failure(error)


def failure(error: Exception) -> tuple:
    if isinstance(error, KgparserError):
        return "error", str(error)
    return "bug", "".join(traceback.format_exception(error)).rstrip()


def exit_cause(code: int | None) -> str:
    """``signal 9, SIGKILL`` or ``exit code 1`` for a process's exit code."""
    if code is not None and code < 0:
        try:
            return f"signal {-code}, {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def worker_count(asked: int) -> int:
    """How many of the ``asked`` workers to start: at most one per core this
    process may run on (more only share the cores and add memory) and as many
    as the available memory holds, each taken to need as much as this process
    (which holds the same model) at its peak so far; a warning says when
    fewer than asked."""
    cores = usable_cores()
    held = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux
    available = available_memory()
    fits = max(1, available // held) if available and held else asked
    count = max(1, min(asked, cores, fits))
    if count < asked:
        warnings.warn(f"--processes {asked}: starting {count}: this machine has {cores} cores for this process "
                      f"and memory for about {fits} parsing processes", stacklevel=3)
    return count


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def start_method(device: str) -> str:
    """How to start the workers of a model on ``device`` (see the module docstring)."""
    forkable = sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()
    return "fork" if forkable and device == "cpu" else "spawn"


class _Worker:
    def __init__(self, number: int, context, args: tuple, others: list[_Worker]):
        self.number = number
        self.connection, child = context.Pipe()
        forked = context.get_start_method() == "fork"
        inherited = tuple([self.connection] + [w.connection for w in others]) if forked else ()
        self.process = context.Process(target=_serve, args=(child, os.getpid(), inherited, *args), daemon=True,
                                       name=f"kgparser-parse-{number}")
        self.process.start()
        child.close()
        self.index: int | None = None  # the chunk it is parsing


@contextmanager
def _sigint_ignored():
    """Start processes with SIGINT ignored: a Python started so ignores it
    from its first instruction (no KeyboardInterrupt traceback from a worker)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class ProcessPool:
    """``processes`` workers holding the model (:func:`model_bytes`) on ``device``,
    each answering a chunk with ``work(model, chunk)`` (a picklable function).
    Use as a context manager; the workers start at once and load the model
    while the first chunks are read."""

    def __init__(self, processes: int, data: bytes, device: str, work: Callable):
        context = multiprocessing.get_context(start_method(device))
        self.workers: list[_Worker] = []
        with _sigint_ignored():
            for number in range(1, worker_count(processes) + 1):
                self.workers.append(_Worker(number, context, (data, device, work), self.workers))

    def __enter__(self) -> ProcessPool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close(clean=exc_info[0] is None)

    def map(self, chunks: Iterable) -> Iterator[Any]:
        """``work(model, chunk)`` of each chunk, in the chunks' order.  An error
        raised by ``chunks`` is raised after the results of the chunks read before it."""
        return ordered_map(chunks, self.workers, self._send, self._receive, CHUNKS_PER_WORKER * len(self.workers))

    def _send(self, worker: _Worker, index: int, chunk) -> None:
        worker.index = index
        try:
            worker.connection.send((index, chunk))
        except (BrokenPipeError, ConnectionResetError):
            raise self._died(worker) from None

    def _receive(self, done: dict[int, Any]) -> list[_Worker]:
        """Wait for at least one answer; returns the workers that became idle.
        A worker that could not build its model answers index -1 with its error."""
        ready = wait([w.connection for w in self.workers] + [w.process.sentinel for w in self.workers])
        idle = []
        for worker in self.workers:
            if worker.connection in ready:
                try:
                    index, answer = worker.connection.recv()
                except (EOFError, ConnectionResetError):
                    raise self._died(worker) from None
                done[index] = result(answer)
                worker.index = None
                idle.append(worker)
            elif worker.process.sentinel in ready:
                raise self._died(worker)
        return idle

    def _died(self, worker: _Worker) -> WorkerDied:
        worker.process.join(STOP_SECONDS)
        return WorkerDied(f"parsing process {worker.number} of {len(self.workers)} died "
                          f"({exit_cause(worker.process.exitcode)})")

    def close(self, clean: bool = True) -> None:
        """Stop the workers: told to end after a clean run, terminated otherwise."""
        for worker in self.workers:
            if clean and worker.process.is_alive():
                try:
                    worker.connection.send(None)
                except OSError:
                    pass
            else:
                worker.process.terminate()
        for worker in self.workers:
            worker.process.join(STOP_SECONDS)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.connection.close()


def ordered_map(chunks: Iterable, workers: Sequence, send: Callable[[Any, int, Any], None],
                receive: Callable[[dict[int, Any]], list], limit: int) -> Iterator[Any]:
    """The results of ``chunks`` in the chunks' order, from ``workers`` that each
    parse one chunk at a time (this pool's processes, or Ray actors:
    :mod:`kgparser.inference.ray_engine`): ``send(worker, index, chunk)`` hands
    an idle worker chunk number ``index``; ``receive(done)`` waits for at least
    one result, puts it in ``done`` under its index, and returns the workers it
    left idle.  At most ``limit`` chunks are held at a time (sent, or parsed but
    not yet yielded).  An error raised by ``chunks`` is raised after the results
    of the chunks read before it."""
    chunks = iter(chunks)
    idle = list(workers)
    done: dict[int, Any] = {}
    sent = next_out = 0
    source_error: BaseException | None = None
    while True:
        while idle and source_error is None and sent - next_out < limit:
            try:
                chunk = next(chunks)
            except StopIteration:
                source_error = StopIteration()
                break
            except Exception as error:
                source_error = error
                break
            send(idle.pop(), sent, chunk)
            sent += 1
        while next_out in done:
            yield done.pop(next_out)
            next_out += 1
        if next_out == sent and source_error is not None:
            if not isinstance(source_error, StopIteration):
                raise source_error
            return
        if next_out < sent and next_out not in done:
            idle += receive(done)


def result(answer: tuple):
    """The result of a worker's answer (:func:`answered`), or its error raised here."""
    kind, value = answer[0], answer[1]
    if kind == "done":
        return value
    if kind == "error":
        raise KgparserError(value)
    raise WorkerFailed(f"a parsing process failed:\n{value}")
