"""Speed and exactness of the Attardi dynamic oracle under a work budget.

Follows a computation on each sampled treebank sentence the way error
exploration does in early training -- with probability ``--shift`` a shift
(the errors that leave deep stacks, the oracle's slow states), else with
probability 0.1 a random legal action, else the cheapest action -- and at every
state with a choice asks the exact oracle (no budget) and the oracle with each
``--limits`` budget.  Prints, per budget, the oracle's time, the share of calls
over the budget (answered by the greedy bounds), the share of states whose
costs equal the exact ones, and the share where every action priced 0 truly
costs 0.

    python experiments/bench_attardi_budget.py --treebank ../shared/ud/UD_Hungarian-Szeged/hu_szeged-ud-train.conllu
"""
from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from kgparser.io.conllu import read_conllu
from kgparser.transitions import get_system

UNBOUNDED = 10 ** 12


def follow(system, oracles: dict, gold, rng: random.Random, shift: float, tally: dict) -> None:
    """One computation; ``oracles`` maps each budget to its oracle for ``gold``."""
    state = system.initial_state(len(gold) - 1)
    while not system.is_final(state):
        for limit, oracle in oracles.items():
            started = time.perf_counter()
            costs = oracle.costs(state)
            tally[limit]["seconds"] += time.perf_counter() - started
            if limit == UNBOUNDED:
                truth = costs
            elif len(costs) > 1:
                tally[limit]["equal"] += costs == truth
                tally[limit]["zero_sound"] += all(truth[a] == 0 for a, c in costs.items() if c == 0)
        if len(truth) > 1:
            tally[UNBOUNDED]["states"] += 1
        if "shift" in truth and rng.random() < shift:
            action = "shift"
        elif rng.random() < 0.1:
            action = rng.choice(list(truth))
        else:
            action = min(system.actions, key=lambda a: truth.get(a, UNBOUNDED))
        system.apply(state, action)
    for limit, oracle in oracles.items():
        tally[limit]["fallbacks"] += oracle.fallbacks


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--treebank", type=Path, required=True)
    parser.add_argument("--sentences", type=int, default=60, help="sentences sampled from the treebank")
    parser.add_argument("--shift", type=float, default=0.3, help="probability of a forced shift")
    parser.add_argument("--limits", type=int, nargs="+", default=[0, 2000, 5000, 20000, 200000])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    sentences = read_conllu(args.treebank)
    sentences = rng.sample(sentences, min(args.sentences, len(sentences)))
    systems = {limit: get_system("attardi", work_limit=limit) for limit in [UNBOUNDED, *args.limits]}
    tally = {limit: {"seconds": 0.0, "equal": 0, "zero_sound": 0, "fallbacks": 0, "states": 0} for limit in systems}
    for sentence in sentences:
        gold = sentence.heads
        if systems[UNBOUNDED].can_build(gold):
            oracles = {limit: system.dynamic_oracle(gold) for limit, system in systems.items()}
            follow(systems[UNBOUNDED], oracles, gold, rng, args.shift, tally)
    states = tally[UNBOUNDED]["states"]
    exact_seconds = tally[UNBOUNDED]["seconds"]
    print(f"treebank: {args.treebank} ({len(sentences)} sentences sampled), shift={args.shift}, "
          f"seed={args.seed}: {states} states with a choice; exact oracle {exact_seconds:.1f} s\n")
    print("| work_limit | oracle seconds | speed-up | calls over budget | costs exact | zero-cost sound |")
    print("|---|---|---|---|---|---|")
    for limit in args.limits:
        t = tally[limit]
        print(f"| {limit:,} | {t['seconds']:.1f} | {exact_seconds / t['seconds']:.1f}x | "
              f"{100 * t['fallbacks'] / states:.1f}% | {100 * t['equal'] / states:.1f}% | "
              f"{100 * t['zero_sound'] / states:.1f}% |")


if __name__ == "__main__":
    main()
