"""CPU time per call of the exact Attardi dynamic oracle (no work budget).

Follows a computation on each sampled treebank sentence the way error
exploration does -- with probability ``--shift`` a shift (the errors that
leave deep stacks, the oracle's slow states), else with probability
``--random`` a random legal action, else the cheapest action -- and times
every ``costs()`` call with a choice.  The followed actions depend only on
the exact costs, so every version of an exact oracle is timed on the same
states.  Prints the calls, their CPU time (total, mean, median, 99th
percentile, max, share of the slowest 1%) per treebank, and a digest of all the costs (equal digests:
equal answers); ``--profile FILE`` writes a cProfile of the calls.

    python experiments/bench_attardi_oracle.py --treebanks ../shared/ud/UD_Hungarian-Szeged/hu_szeged-ud-train.conllu
"""
from __future__ import annotations

import argparse
import cProfile
import hashlib
import random
import statistics
import time
from pathlib import Path

from kgparser.io.conllu import read_conllu
from kgparser.transitions import get_system

UNBOUNDED = 10 ** 12


def follow(system, oracle, gold, rng: random.Random, shift: float, explore: float,
           seconds: list[float], digest) -> None:
    """One computation, appending the CPU time of each call with a choice."""
    state = system.initial_state(len(gold) - 1)
    while not system.is_final(state):
        started = time.process_time()
        costs = oracle.costs(state)
        spent = time.process_time() - started
        if len(costs) > 1:
            seconds.append(spent)
            digest.update(repr(sorted(costs.items())).encode())
        if "shift" in costs and rng.random() < shift:
            action = "shift"
        elif rng.random() < explore:
            action = rng.choice(list(costs))
        else:
            action = min(system.actions, key=lambda a: costs.get(a, UNBOUNDED))
        system.apply(state, action)
    assert oracle.fallbacks == 0


def summary(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    slowest = sum(ordered[-len(ordered) // 100:]) / sum(ordered)
    return (f"{len(seconds)} calls, total {sum(seconds):.2f} s, mean {1000 * statistics.fmean(seconds):.3f} ms, "
            f"median {1000 * statistics.median(seconds):.3f} ms, p99 {1000 * p99:.2f} ms, "
            f"max {1000 * ordered[-1]:.1f} ms, slowest 1% of calls {100 * slowest:.0f}% of the time")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--treebanks", type=Path, nargs="+", required=True)
    parser.add_argument("--sentences", type=int, default=60, help="sentences sampled per treebank")
    parser.add_argument("--shift", type=float, default=0.3, help="probability of a forced shift")
    parser.add_argument("--random", type=float, default=0.1, help="probability of a random action")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", type=Path, help="write a cProfile of the oracle calls here")
    args = parser.parse_args(argv)

    system = get_system("attardi", work_limit=UNBOUNDED)
    profile = cProfile.Profile() if args.profile else None
    digest = hashlib.sha256()
    every: list[float] = []
    for treebank in args.treebanks:
        rng = random.Random(args.seed)
        sentences = read_conllu(treebank)
        sentences = rng.sample(sentences, min(args.sentences, len(sentences)))
        seconds: list[float] = []
        if profile:
            profile.enable()
        for sentence in sentences:
            if system.can_build(sentence.heads):
                follow(system, system.dynamic_oracle(sentence.heads), sentence.heads, rng, args.shift,
                       args.random, seconds, digest)
        if profile:
            profile.disable()
        every += seconds
        print(f"{treebank.name}: {summary(seconds)}")
    print(f"all: {summary(every)}")
    print(f"costs digest: {digest.hexdigest()[:16]}  (shift={args.shift}, random={args.random}, seed={args.seed})")
    if profile:
        profile.dump_stats(args.profile)


if __name__ == "__main__":
    main()
