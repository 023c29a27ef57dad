"""Data-parallel training with ``torch.distributed`` (launched by ``torchrun``).

Training time goes to per-transition Python work (oracles, state updates),
which one process does on one core.  With ``torchrun --nproc-per-node N -m
kgparser train CONFIG`` (or ``kgparser train CONFIG --nproc N``), each of the
N processes takes its own share of every epoch's batches, runs its own
oracles and transitions, and the gradients are averaged over the processes
(:class:`GradientAverager`: one all-reduce of the dense gradients, and only
the rows of the embedding tables that the batch touched) before every
process applies the same Adam update, so the weights stay identical
everywhere.  Rank 0
alone evaluates dev, writes checkpoints, ``metrics.jsonl`` and TensorBoard;
the checkpoint format is unchanged.

* ``training.batch_size`` is per process: an update averages N batches, so an
  epoch has N times fewer updates (docs/training.md says what that does to the learning rate).
* Every process builds the same model from the same seed; rank 0's weights
  are broadcast anyway, so a resumed or differently initialised rank cannot
  drift.
* A batch whose states made no mistake has no loss; its process still takes
  part in the all-reduce with zero gradients, or the others would wait for it.
* Shares are equal: the epoch's batch list is padded by repeating its first
  batches (as ``DistributedSampler`` does) so every process runs the same
  number of all-reduces, and the batches processed at the same time have
  about as many words, so that no process waits long for another.
* Backend: gloo on CPU, nccl on CUDA; every collective times out after
  ``KGPARSER_DIST_TIMEOUT`` seconds (default 1,800: rank 0's dev evaluation
  runs while the others wait), so a dead rank ends the run with an error
  rather than a hang (``torchrun`` also stops the other ranks at once when
  one exits with an error).
* A failed collective (a peer died, or stopped answering) ends its process
  at once, without a traceback, with :data:`EXIT_PEER_DIED` or
  :data:`EXIT_PEER_SILENT`; ``kgparser train --nproc N`` (:func:`launch`) then
  prints one line naming the rank that died or stopped answering.  Run by
  ``torchrun`` directly, each surviving process prints that line itself.
"""
from __future__ import annotations

import logging
import os
import signal
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable, Iterator, Mapping, NoReturn, Protocol

import torch

from ..errors import KgparserError
from ..model.inputs import Batch

DEFAULT_TIMEOUT = 1800
#: exit codes of a process whose collective failed: a peer closed the connection
#: (it died), or did not answer within the timeout
EXIT_PEER_DIED, EXIT_PEER_SILENT = 75, 76
#: set by :func:`launch` in its processes: the launcher, not each process, reports a lost peer
LAUNCHED = "KGPARSER_LAUNCHED"
RESUMABLE = "the run is resumable with --resume"


class TrainingProcessFailed(KgparserError):
    """A process of a data-parallel run failed, died or stopped answering."""


@dataclass(frozen=True)
class World:
    """This process's place among the training processes."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0

    @property
    def main(self) -> bool:
        """Whether this process writes the run's files."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1


#: a run in one process
ONE_PROCESS = World()


def world_from_environment() -> World:
    """The world ``torchrun`` describes in ``RANK``, ``WORLD_SIZE`` and
    ``LOCAL_RANK``; a single process without them."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return ONE_PROCESS
    return World(int(os.environ["RANK"]), size, int(os.environ.get("LOCAL_RANK", "0")))


def start(world: World, device: str) -> None:
    """Join the process group (gloo on CPU, nccl on CUDA, each rank on its local GPU)."""
    import torch._dynamo  # noqa: F401  (before the group exists: see stop())
    import torch.distributed as dist

    timeout = timedelta(seconds=_timeout_seconds())
    if device == "cuda":
        torch.cuda.set_device(world.local_rank)
    dist.init_process_group("nccl" if device == "cuda" else "gloo", timeout=timeout)


def _timeout_seconds() -> int:
    return int(os.environ.get("KGPARSER_DIST_TIMEOUT", DEFAULT_TIMEOUT))


def _collective(call: Callable, *args, **kwargs):
    """``call(*args, **kwargs)``: a collective of ``torch.distributed`` or the
    wait for one.  Its failure -- a peer died, or did not answer within the
    timeout (gloo says "timed out" or "timeout") -- ends this process at once
    (:func:`_lost_peer`)."""
    try:
        return call(*args, **kwargs)
    except RuntimeError as error:
        message = str(error).lower()
        _lost_peer("timed out" in message or "timeout" in message)


def _lost_peer(silent: bool) -> NoReturn:
    """End this process after a collective failed because a peer died or,
    ``silent``, did not answer in time.  ``os._exit``: the group is broken, and
    leaving it or the interpreter normally can hang or abort in gloo's threads;
    no file is being written (the main process writes between collectives)."""
    if not os.environ.get(LAUNCHED):
        print(f"kgparser train: error: rank {os.environ.get('RANK', '?')}: another training process "
              f"{_stopped_answering() if silent else 'died'}; {RESUMABLE}", file=sys.stderr, flush=True)
    os._exit(EXIT_PEER_SILENT if silent else EXIT_PEER_DIED)


def launch(nproc: int, arguments: list[str]) -> None:
    """``python -m kgparser ARGUMENTS`` in ``nproc`` processes, as ``torchrun
    --standalone --nproc-per-node NPROC`` starts them (which also stops every
    process when one fails), run in this process so that a failure is one
    line: :class:`TrainingProcessFailed`, not torchrun's log and traceback."""
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import main as torchrun

    # torchrun's default thread count, without its banner
    settings = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), LAUNCHED: "1"}
    with _environment(settings), _launcher_silenced():
        try:
            torchrun(["--standalone", f"--nproc-per-node={nproc}", "-m", "kgparser", *arguments])
        except ChildFailedError as error:
            raise TrainingProcessFailed(_failure_line(error.failures, error.get_first_failure()[0], nproc)) from None
        except SignalException:
            raise KeyboardInterrupt from None


@contextmanager
def _environment(settings: Mapping[str, str]) -> Iterator[None]:
    """``settings`` in ``os.environ`` (inherited by the processes started) while the block runs."""
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _launcher_silenced() -> Iterator[None]:
    """No log records or warnings from the launcher while it runs (its failure
    report is what :func:`_failure_line` puts in one line)."""
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)


class _Failure(Protocol):
    """What the launcher reports of a failed process (its ``ProcessFailure``)."""

    exitcode: int


def _failure_line(failures: Mapping[int, _Failure], first: int, nproc: int) -> str:
    """What went wrong, from the exit codes of the failed processes (``first``
    failed first).  The processes that lost a peer say how; the others are the
    cause: stopped (the survivors timed out, then the launcher killed it),
    killed by a signal, or failed with an error of their own, printed above."""
    lost = (EXIT_PEER_DIED, EXIT_PEER_SILENT)
    causes = [r for r in range(nproc) if r not in failures or failures[r].exitcode not in lost]
    if failures[first].exitcode == EXIT_PEER_SILENT:
        return f"{_ranks(causes)} {_stopped_answering()}; {RESUMABLE}"
    rank = first if first in causes else next(iter(causes), None)
    code = failures[rank].exitcode if rank is not None and rank in failures else None
    if code is None:
        return f"{_ranks(causes)} died; {RESUMABLE}"
    if code < 0:
        return f"rank {rank} died ({_signal_name(-code)}); {RESUMABLE}"
    return f"rank {rank} failed (exit code {code}); its error is above"


def _stopped_answering() -> str:
    return f"stopped answering (no reply within KGPARSER_DIST_TIMEOUT, {_timeout_seconds()} s)"


def _ranks(ranks: list[int]) -> str:
    """``rank 1``, ``ranks 1, 2``, or ``a rank`` where none is known."""
    if not ranks:
        return "a rank"
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"


def _signal_name(number: int) -> str:
    try:
        return f"signal {number}, {signal.Signals(number).name}"
    except ValueError:
        return f"signal {number}"


def stop() -> None:
    """Leave the process group; returns once its worker threads have ended.

    The group is freed here, and freeing it waits for gloo's worker threads,
    which may still be letting go of the last collective's tensors after it
    completed.  A group left alive until interpreter shutdown lets such a
    thread free a Python tensor without the interpreter, and the process
    aborts ("terminate called without an active exception").  torch keeps
    references to the group when ``torch._dynamo`` is first imported after
    the group was made (building the Adam optimizer imports it), so
    :func:`start` imports it first."""
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    import torch.distributed as dist

    _collective(dist.barrier)


def broadcast_parameters(parameters) -> None:
    """Rank 0's values of ``parameters`` everywhere."""
    import torch.distributed as dist

    for parameter in parameters:
        _collective(dist.broadcast, parameter.data, src=0)


def share(batches: list, world: World, cost: Callable[[list], float] = len) -> list:
    """This process's batches of an epoch.  The list is padded by repeating its
    first batches so every process gets as many, then cut into rounds of one
    batch per process: batches of similar ``cost`` go together (every round
    waits for its slowest batch at the all-reduce), and the rounds keep the
    epoch's random order (by their earliest batch in it)."""
    if not world.distributed or not batches:
        return batches
    padded = batches + batches[:(-len(batches)) % world.size]
    by_cost = sorted(range(len(padded)), key=lambda i: cost(padded[i]))
    rounds = sorted((by_cost[i:i + world.size] for i in range(0, len(padded), world.size)), key=min)
    return [padded[round_[world.rank]] for round_ in rounds]


class GradientAverager:
    """Averages the gradients of ``parameters`` over the processes.

    Embedding tables (``row_sparse``: input key -> table) have dense
    gradients that are zero but for the rows of the batch's words, and the
    word table is most of the model (2 of 2.9 million numbers for EWT), so
    only those rows travel: one all-gather per table carries them with their
    indices, and every process adds them up.  The rows are the batch's ids
    (:meth:`batch_started`, which must be called with the model's inputs
    before the forward pass), so how many each process sends is exchanged in
    the background while the batch is computed.  One all-reduce carries the other gradients
    (a missing one counts as zero); it runs in the background while the rows
    are exchanged.  On 2 CPU processes (EWT model, docs/history/data-parallel-training.md) this takes
    about 5 ms per batch where one all-reduce of everything took 13."""

    def __init__(self, parameters, world: World, row_sparse: Mapping[str, torch.nn.Parameter] | None = None):
        trainable = [p for p in parameters if p.requires_grad]
        tables = {key: table for key, table in (row_sparse or {}).items() if table.requires_grad}
        sparse_ids = {id(table) for table in tables.values()}
        self.dense = [p for p in trainable if id(p) not in sparse_ids]
        self.row_keys = list(tables)
        self.row_sparse = list(tables.values())
        self.world = world
        #: this batch's rows per table and the pending exchange of the counts
        self._announced: tuple[list[torch.Tensor], torch.Tensor, Any] | None = None

    def batch_started(self, batch: Batch) -> None:
        """Note the rows this batch can touch (its ids in each table) and start
        telling the other processes how many there are."""
        import torch.distributed as dist

        if not self.row_sparse:
            return
        rows = [torch.unique(getattr(batch, key).reshape(-1)) for key in self.row_keys]
        counts = self._counts(rows)
        self._announced = rows, counts, _collective(dist.all_reduce, counts, async_op=True)

    def __call__(self) -> None:
        import torch.distributed as dist

        if self.row_sparse and self._announced is None:
            raise RuntimeError("GradientAverager: batch_started() was not called for this batch")
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.dense]
        flat = torch.cat([g.reshape(-1) for g in grads]) if grads else torch.zeros(0)
        pending = _collective(dist.all_reduce, flat, async_op=True)
        if self.row_sparse:
            self._average_rows()
        _collective(pending.wait)
        flat.div_(self.world.size)
        offset = 0
        for parameter in self.dense:
            count = parameter.numel()
            parameter.grad = flat[offset:offset + count].view_as(parameter)
            offset += count

    def _counts(self, rows: list[torch.Tensor]) -> torch.Tensor:
        """``[tables, processes]``, zero but for this process's row counts (summed over processes)."""
        counts = torch.zeros(len(rows), self.world.size, device=self.row_sparse[0].device)
        counts[:, self.world.rank] = torch.tensor([float(len(r)) for r in rows])
        return counts

    def _average_rows(self) -> None:
        """Each table's gradient rows averaged over the processes."""
        tables = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.row_sparse]
        announced, self._announced = self._announced, None
        assert announced is not None  # __call__ checks that batch_started() announced the rows
        rows, counts, exchange = announced
        _collective(exchange.wait)
        for table, grad, mine, counted in zip(self.row_sparse, tables, rows, counts.long().tolist()):
            table.grad = self._summed_rows(grad, mine, counted)

    def _summed_rows(self, grad: torch.Tensor, rows: torch.Tensor, counts: list[int]) -> torch.Tensor:
        """``grad`` with its non-zero ``rows`` replaced by the average of every
        process's rows (``counts``: how many rows each process sends)."""
        import torch.distributed as dist

        longest = max(counts)
        packed = grad.new_zeros(longest, grad.shape[1] + 1)  # the row index (exact in float32) goes first
        packed[:len(rows), 0] = rows.to(grad.dtype)
        packed[:len(rows), 1:] = grad.index_select(0, rows)
        gathered = [torch.empty_like(packed) for _ in counts]
        _collective(dist.all_gather, gathered, packed)
        grad.index_fill_(0, rows, 0.0)  # its own rows come back with the others': no whole-table pass
        for count, part in zip(counts, gathered):
            grad.index_add_(0, part[:count, 0].long(), part[:count, 1:], alpha=1.0 / len(counts))
        return grad


def sum_over_processes(values: list[float]) -> list[float]:
    """Element-wise sums of ``values`` over the processes (epoch statistics)."""
    import torch.distributed as dist

    tensor = torch.tensor(values, dtype=torch.float64)
    _collective(dist.all_reduce, tensor)
    return tensor.tolist()
