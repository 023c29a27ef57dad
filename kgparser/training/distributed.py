"""Data-parallel training with ``torch.distributed`` (launched by ``torchrun``).

Training time goes to per-transition Python work (oracles, state updates),
which one process does on one core.  With ``torchrun --nproc-per-node N -m
kgparser train CONFIG`` (or ``kgparser train CONFIG --nproc N``), each of the
N processes takes its own share of every epoch's batches, runs its own
oracles and transitions, and the gradients are averaged over the processes
(one all-reduce of one flat buffer per batch) before every process applies
the same Adam update, so the weights stay identical everywhere.  Rank 0
alone evaluates dev, writes checkpoints, ``metrics.jsonl`` and TensorBoard;
the checkpoint format is unchanged.

* ``training.batch_size`` is per process: an update averages N batches, so an
  epoch has N times fewer updates (see the README for the learning rate).
* Every process builds the same model from the same seed; rank 0's weights
  are broadcast anyway, so a resumed or differently initialised rank cannot
  drift.
* A batch whose states made no mistake has no loss; its process still takes
  part in the all-reduce with zero gradients, or the others would wait for it.
* Shares are equal: the epoch's batch list is padded by repeating its first
  batches (as ``DistributedSampler`` does) so every process runs the same
  number of all-reduces.
* Backend: gloo on CPU, nccl on CUDA; every collective times out after
  ``KGPARSER_DIST_TIMEOUT`` seconds (default 1,800: rank 0's dev evaluation
  runs while the others wait), so a dead rank ends the run with an error
  rather than a hang (``torchrun`` also stops the other ranks at once when
  one exits with an error).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

import torch

DEFAULT_TIMEOUT = 1800


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


def world_from_environment() -> World:
    """The world ``torchrun`` describes in ``RANK``, ``WORLD_SIZE`` and
    ``LOCAL_RANK``; a single process without them."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return World()
    return World(int(os.environ["RANK"]), size, int(os.environ.get("LOCAL_RANK", "0")))


def start(world: World, device: str) -> None:
    """Join the process group (gloo on CPU, nccl on CUDA, each rank on its local GPU)."""
    import torch.distributed as dist

    timeout = timedelta(seconds=int(os.environ.get("KGPARSER_DIST_TIMEOUT", DEFAULT_TIMEOUT)))
    if device == "cuda":
        torch.cuda.set_device(world.local_rank)
    dist.init_process_group("nccl" if device == "cuda" else "gloo", timeout=timeout)


def stop() -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()


def barrier() -> None:
    import torch.distributed as dist

    dist.barrier()


def broadcast_parameters(parameters) -> None:
    """Rank 0's values of ``parameters`` everywhere."""
    import torch.distributed as dist

    for parameter in parameters:
        dist.broadcast(parameter.data, src=0)


def share(batches: list, world: World) -> list:
    """This process's batches of an epoch: every ``size``-th, after padding the
    list by repeating its first batches so every process gets as many."""
    if not world.distributed or not batches:
        return batches
    padded = batches + batches[:(-len(batches)) % world.size]
    return padded[world.rank::world.size]


class GradientAverager:
    """Averages the gradients of ``parameters`` over the processes: one
    all-reduce of one flat buffer; a missing gradient counts as zero."""

    def __init__(self, parameters, world: World):
        self.parameters = [p for p in parameters if p.requires_grad]
        self.size = world.size

    def __call__(self) -> None:
        import torch.distributed as dist

        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.parameters]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)
        flat /= self.size
        offset = 0
        for parameter in self.parameters:
            count = parameter.numel()
            parameter.grad = flat[offset:offset + count].view_as(parameter)
            offset += count


def sum_over_processes(values: list[float]) -> list[float]:
    """Element-wise sums of ``values`` over the processes (epoch statistics)."""
    import torch.distributed as dist

    tensor = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(tensor)
    return tensor.tolist()
