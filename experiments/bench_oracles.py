"""Time the dynamic oracles on real sentences.

For every registered transition system, follow a computation on each treebank
sentence (the cheapest action per the dynamic oracle, or with probability
``--explore`` a random legal action, as in training with error exploration)
and time every ``costs()`` call.  Prints a Markdown table of the mean
microseconds per call by sentence-length bucket, plus the oracle set-up time
per sentence.  Per-state work that grows linearly shows as a roughly constant
"µs per call per word" column.

    python experiments/bench_oracles.py --treebank ../shared/ud/UD_English-EWT/en_ewt-ud-train.conllu
"""
from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from kgparser.io.conllu import read_conllu
from kgparser.transitions import get_system, system_names

BUCKETS = [(1, 10), (11, 20), (21, 40), (41, 80), (81, 10_000)]
DEFAULT_TREEBANK = Path(__file__).resolve().parents[1] / "../shared/ud/UD_English-EWT/en_ewt-ud-train.conllu"
SAMPLE = Path(__file__).resolve().parents[1] / "kgparser/resources/en_ewt_sample/train.conllu"


def bucket_of(n: int) -> tuple[int, int]:
    return next(b for b in BUCKETS if b[0] <= n <= b[1])


def follow(system, gold, rng, explore):
    """Run one computation; return (setup seconds, list of costs() seconds)."""
    t0 = time.perf_counter()
    oracle = system.dynamic_oracle(gold)
    setup = time.perf_counter() - t0
    state = system.initial_state(len(gold) - 1)
    calls = []
    while not system.is_final(state):
        t0 = time.perf_counter()
        costs = oracle.costs(state)
        calls.append(time.perf_counter() - t0)
        explorable = [a for a in costs if a not in system.static_actions]
        if explorable and rng.random() < explore:
            action = rng.choice(explorable)
        else:
            best = min(costs.values())
            action = next(a for a in system.actions if costs.get(a) == best)
        system.apply(state, action)
    return setup, calls


def bench_system(name, golds, explore, seed):
    system = get_system(name)
    rng = random.Random(seed)
    per_bucket: dict[tuple[int, int], list[float]] = {b: [] for b in BUCKETS}
    setups, worst = [], 0.0
    for gold in golds:
        setup, calls = follow(system, gold, rng, explore)
        setups.append(setup)
        per_bucket[bucket_of(len(gold) - 1)].extend(calls)
        worst = max([worst, *calls])
    return per_bucket, setups, worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--treebank", type=Path, default=DEFAULT_TREEBANK if DEFAULT_TREEBANK.exists() else SAMPLE)
    parser.add_argument("--systems", nargs="*", default=None, help="default: every registered system")
    parser.add_argument("--sentences", type=int, default=2000, help="sentences sampled from the treebank")
    parser.add_argument("--explore", type=float, default=0.1, help="probability of a random action")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    sentences = read_conllu(args.treebank)
    rng = random.Random(args.seed)
    if len(sentences) > args.sentences:
        sentences = rng.sample(sentences, args.sentences)
    golds = [s.heads for s in sentences]
    print(f"treebank: {args.treebank} ({len(golds)} sentences, {sum(len(g) - 1 for g in golds)} words), "
          f"explore={args.explore}, seed={args.seed}\n")
    header = " | ".join(f"{lo}-{hi if hi < 10_000 else ''} words" for lo, hi in BUCKETS)
    print(f"| system | {header} | µs/call/word (longest bucket) | max ms/call | setup µs/sentence |")
    print("|---" * (len(BUCKETS) + 4) + "|")
    for name in args.systems or system_names():
        per_bucket, setups, worst = bench_system(name, golds, args.explore, args.seed)
        cells, last = [], None
        for b in BUCKETS:
            calls = per_bucket[b]
            if calls:
                mean = statistics.fmean(calls) * 1e6
                cells.append(f"{mean:.1f} ({len(calls)})")
                last = (b, mean)
            else:
                cells.append("–")
        lo, hi = last[0]
        mid = (lo + min(hi, 120)) / 2
        print(f"| {name} | {' | '.join(cells)} | {last[1] / mid:.2f} | {worst * 1e3:.2f} | "
              f"{statistics.fmean(setups) * 1e6:.0f} |")


if __name__ == "__main__":
    main()
