"""Parsing on Ray: ``kgparser parse --engine ray``, ``Parser.parse_file(...,
engine="ray")`` and, through :mod:`kgparser.inference.ray_dataset`,
:meth:`Parser.parse_dataset <kgparser.inference.parser.Parser.parse_dataset>`.

Actors, each holding the model, parse what they are given, one CPU (or one
GPU for a model on ``cuda``) each.  The model reaches them through Ray's
object store, not a shared file system: its plain data
(:func:`~kgparser.inference.workers.model_bytes`) is put there once and each
actor builds the model from it once (as a worker process does); a model with a
pretrained encoder loads that encoder on each node from where it was loaded
here (the same path there, or a hub name).

Two ways in:

A file (:class:`RayPool`)
    The corpus parser (:mod:`kgparser.inference.corpus`) reads the input here,
    through the one reader, in chunks of whole sentences, and writes the
    results in input order through the one safe-write path, with its
    progress line and counts, as for worker processes: the pool only maps the
    chunks to their results, on ``processes`` actors (Ray core), at most
    :data:`~kgparser.inference.workers.CHUNKS_PER_WORKER` chunks per actor
    held at a time.  The output is the same bytes as in one process.  (A Ray
    Dataset would be read by Ray's own tasks, elsewhere, which cannot read
    standard input and need the file on their node, or would be made whole
    in memory first; the reader here streams the input in flat memory and
    keeps its count of the sentences it skipped.)
A Ray Dataset (:mod:`kgparser.inference.ray_dataset`)
    For users already in Ray: ``map_batches`` with a pool of ``processes``
    actors turns rows of text (pre-tokenized lines, raw text, CoNLL-U, or
    lists of tokens) into rows of parsed sentences.

Ray is found as the caller left it: already initialized in this process (a
user's session), it is used and left running; otherwise this connects to
the cluster at the ``address`` given or ``RAY_ADDRESS``, or starts a local
instance when neither names one (no dashboard, its workers' logs kept off the
terminal), and disconnects, or shuts the local instance down, at the end
however the run ends (an error, Ctrl-C, SIGTERM).  Ray's own reports of dead
workers, which it prints on standard output (the output, when parsing to
it), are kept off the terminal while a pool runs.

A dead actor (killed, out of memory) is restarted by Ray :data:`RESTARTS`
time(s), and the chunks it held are parsed again, so the output is the same;
one that dies again ends the run with one line
(:class:`~kgparser.inference.workers.WorkerDied`) and, to a file, no output.

Ray is imported only here and in :mod:`~kgparser.inference.ray_dataset`, and
only when asked for (``pip install 'kgparser[ray]'``, which brings Ray Data
and its pandas and pyarrow).
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import socket
import warnings
from typing import Any, Callable, Iterable, Iterator

from ..errors import KgparserError
from .workers import (
    CHUNKS_PER_WORKER,
    WorkerDied,
    _build_model,
    answered,
    failure,
    ordered_map,
    result,
)

#: times Ray restarts a dead actor, and parses the chunks it held again, before the run ends
RESTARTS = 1
#: seconds given to the Ray cluster named to answer at all
CONNECT_SECONDS = 10
#: Ray's colours in its messages, and the last line of a traceback
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
_RAISED = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt): ")


def import_ray(what: str = "--engine ray") -> Any:
    """The ``ray`` module, or a one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise KgparserError(f"{what} needs Ray: pip install 'kgparser[ray]'") from None
    return ray


@contextlib.contextmanager
def connected(address: str | None = None) -> Iterator[Any]:
    """Ray in this process, as the module docstring says: as it is when
    already initialized, else connected to ``address`` (default ``RAY_ADDRESS``)
    or to a new local instance, undone at the end."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _check_reachable(address)
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR}
    handlers = {number: signal.getsignal(number) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        if address:
            ray.init(address=address, **quiet)
        else:
            ray.init(address="local", include_dashboard=False, **quiet)
    except (ConnectionError, ValueError, RuntimeError) as error:
        ray.shutdown()
        raise KgparserError(f"Ray: cannot {'connect to ' + address if address else 'start a local instance'}: "
                            f"{str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__}"
                            ) from None
    finally:
        for number, handler in handlers.items():  # a local head node takes SIGTERM over: the caller's again
            if handler is not None and signal.getsignal(number) is not handler:
                signal.signal(number, handler)
    try:
        yield ray
    finally:
        ray.shutdown()


def _check_reachable(address: str) -> None:
    """A one-line error when nothing answers at ``address`` (``HOST:PORT``,
    ``ray://HOST:PORT``), where Ray would try to connect for minutes."""
    found = re.fullmatch(r"(?:[a-z]+://)?\[?([^\]/]+?)\]?:(\d+)/?", address.strip())
    if found is None:  # "auto", "local" and the like: Ray says what is wrong
        return
    try:
        socket.create_connection((found[1], int(found[2])), timeout=CONNECT_SECONDS).close()
    except OSError as error:
        raise KgparserError(f"Ray: cannot connect to {address}: {error.strerror or error} (is a Ray cluster "
                            f"running there? --ray-address, RAY_ADDRESS)") from None


@contextlib.contextmanager
def _dead_worker_reports_off() -> Iterator[None]:
    """Keep off the terminal Ray's reports of dead workers, which it prints on
    standard output (where the parse may be written): the error at the end
    says what matters, in one line, and Ray's logs keep the rest."""
    try:
        from ray._private import worker as driver
    except ImportError:  # another Ray: its reports stay
        yield
        return
    printed = getattr(driver, "print_to_stdstream", None)
    if printed is None:
        yield
        return
    driver.print_to_stdstream = _unprinted
    try:
        yield
    finally:
        driver.print_to_stdstream = printed


def _unprinted(data: Any, ignore_prefix: bool = False) -> None:
    """What Ray prints of its workers: nothing (:func:`_dead_worker_reports_off`)."""


class _Actor:
    """A parsing actor: ``run(index, chunk, model)`` answers as a worker process
    does (:func:`~kgparser.inference.workers.answered`), the model built once, at
    the first call, from its data in the object store (``model``: a list holding
    its reference, which Ray hands over as it is).  The reference comes with
    each call, not to the constructor, so that an actor Ray restarts builds the
    model again from it (and Ray need not warn about constructor arguments in
    the object store)."""

    def __init__(self, device: str, work: Callable) -> None:
        self.device, self.work = device, work
        self.model: Any = None
        self.failure: tuple | None = None

    def load(self, model: list) -> None:
        """Build the model, unless built; a failure is the answer to each chunk
        (the run ends with it, in one line)."""
        if self.model is None and self.failure is None:
            import ray

            try:
                self.model = _build_model(ray.get(model[0]), self.device)
            except Exception as error:
                self.failure = failure(error)

    def run(self, index: int, chunk: list, model: list) -> tuple[int, tuple]:
        self.load(model)
        return index, self.failure or answered(self.work, self.model, chunk)


class _Slot:
    """A place in an actor's queue (each actor has
    :data:`~kgparser.inference.workers.CHUNKS_PER_WORKER`, so that it starts
    its next chunk as soon as it is done with one): the actor, its number,
    and the chunk held there."""

    def __init__(self, number: int, handle: Any) -> None:
        self.number, self.handle = number, handle
        self.pending: Any = None  # the reference to its answer


def resources(device: str) -> dict[str, float]:
    """What an actor holding a model on ``device`` asks Ray for."""
    return {"num_gpus": 1} if device.startswith("cuda") else {"num_cpus": 1}


def actor_count(ray: Any, asked: int, device: str) -> int:
    """How many of the ``asked`` actors to start: no more than the cluster's
    CPUs (GPUs for ``cuda``), which would wait for ever; a warning says when
    fewer than asked."""
    kind = "GPU" if device.startswith("cuda") else "CPU"
    total = int(ray.cluster_resources().get(kind, 0))
    if total < 1:
        raise KgparserError(f"--engine ray: the Ray cluster has no {kind} for a model on {device}")
    count = min(asked, total)
    if count < asked:
        warnings.warn(f"--processes {asked}: starting {count} Ray actors: the Ray cluster has {total} {kind}s",
                      stacklevel=4)
    return count


def ray_cause(error: Exception) -> str:
    """What a Ray error says in one line: its first, without Ray's colours and
    details, and the error raised, where it ends with one (an actor that could
    not be created: ``... creation task: ModuleNotFoundError: No module named 'kgparser'``)."""
    lines = [line.strip() for line in _COLOURS.sub("", str(error)).strip().splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    cause = lines[0].split(", ray::")[0].rstrip(".")
    if len(lines) > 1 and _RAISED.match(lines[-1]):
        cause += f": {lines[-1]}"
    return cause


class RayPool:
    """``processes`` Ray actors holding the model (``data``, :func:`model_bytes`)
    on ``device``, each answering a chunk with ``work(model, chunk)``, as
    :class:`~kgparser.inference.workers.ProcessPool` does; ``address``: the
    cluster (see :func:`connected`).  Use as a context manager; the actors start
    at once and build the model while the first chunks are read."""

    def __init__(self, processes: int, data: bytes, device: str, work: Callable, *,
                 address: str | None = None) -> None:
        self._stack = contextlib.ExitStack()
        self.actors: list[Any] = []
        self.slots: list[_Slot] = []
        try:
            self._stack.enter_context(_dead_worker_reports_off())  # until Ray is left, after the actors' end
            self.ray = self._stack.enter_context(connected(address))
            self._model = self.ray.put(data)  # kept while the pool lives: a restarted actor fetches it again
            actor = self.ray.remote(_Actor).options(max_restarts=RESTARTS, max_task_retries=RESTARTS,
                                                    **resources(device))
            for number in range(1, actor_count(self.ray, processes, device) + 1):
                self.actors.append(actor.remote(device, work))
                self.actors[-1].load.remote([self._model])  # while the first chunks are read
                self.slots += [_Slot(number, self.actors[-1]) for _ in range(CHUNKS_PER_WORKER)]
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def map(self, chunks: Iterable) -> Iterator[Any]:
        """``work(model, chunk)`` of each chunk, in the chunks' order
        (:func:`~kgparser.inference.workers.ordered_map`)."""
        return ordered_map(chunks, self.slots, self._send, self._receive, len(self.slots))

    def _send(self, slot: _Slot, index: int, chunk: list) -> None:
        slot.pending = slot.handle.run.remote(index, chunk, [self._model])

    def _receive(self, done: dict[int, Any]) -> list[_Slot]:
        busy = [slot for slot in self.slots if slot.pending is not None]
        ready, _ = self.ray.wait([slot.pending for slot in busy], num_returns=1)
        idle = []
        for slot in busy:
            if slot.pending in ready:
                try:
                    index, answer = self.ray.get(slot.pending)
                except self.ray.exceptions.RayError as error:
                    raise self._died(slot, error) from None
                done[index] = result(answer)
                slot.pending = None
                idle.append(slot)
        return idle

    def _died(self, slot: _Slot, error: Exception) -> WorkerDied:
        cause = ray_cause(error)
        restarted = f", restarted {RESTARTS} time{'s' if RESTARTS > 1 else ''} before" if RESTARTS else ""
        return WorkerDied(f"parsing actor {slot.number} of {len(self.actors)} died (Ray: {cause}{restarted})")

    def close(self) -> None:
        """Stop the actors, then leave Ray as it was found."""
        try:
            for actor in self.actors:
                self.ray.kill(actor, no_restart=True)
            self.actors, self.slots = [], []
        finally:
            self._stack.close()
