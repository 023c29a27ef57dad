"""Time the gradient exchange of data-parallel training (issue 20).

Runs ``kgparser train`` in this process with every
:class:`~kgparser.training.distributed.GradientAverager` call timed: first a
barrier (``wait``: how long this process waits for the others' batches),
then the exchange itself (``exchange``).  At exit each rank prints its totals
and the number of rounds.  Launch it like ``kgparser train`` under torchrun:

    SETS="--set model.tag_input=gold --set model.tagger.upos=false --set model.tagger.xpos=false \\
          --set model.tagger.feats=false --set training.epochs=1 --set threads=1 \\
          --set training.tensorboard=false --set data.test=null --set data.max_train_sentences=4000"
    torchrun --standalone --nproc-per-node 2 experiments/time_gradient_exchange.py \\
        train configs/arc-hybrid-dynamic.yaml --overwrite --quiet --set output_dir=runs/exchange $SETS

The barrier adds a little latency of its own, so the run is slightly slower
than an untimed one; compare ``exchange`` between versions, not epoch times.
"""
from __future__ import annotations

import atexit
import os
import sys
import time

import torch.distributed as dist

from kgparser.cli import main
from kgparser.training.distributed import GradientAverager

totals = {"rounds": 0, "wait": 0.0, "exchange": 0.0}
average = GradientAverager.__call__


def timed(self) -> None:
    started = time.perf_counter()
    dist.barrier()
    synchronized = time.perf_counter()
    average(self)
    totals["rounds"] += 1
    totals["wait"] += synchronized - started
    totals["exchange"] += time.perf_counter() - synchronized


def report() -> None:
    print(f"rank {os.environ.get('RANK', '0')}: {totals['rounds']} rounds, wait {totals['wait']:.2f} s, "
          f"exchange {totals['exchange']:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    GradientAverager.__call__ = timed
    atexit.register(report)
    sys.exit(main(sys.argv[1:]))
