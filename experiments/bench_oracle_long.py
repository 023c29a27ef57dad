"""Time a dynamic oracle over one long sentence, as training walks it.

For each system, tree shape and length, walk one computation from the initial
state to a final one, calling ``costs()`` at every state, and report the
seconds all those calls took (CPU time; wall-clock time is printed as well).
The walks:

* ``static``: always the first cheapest action (the gold path);
* ``explore``: as ``static``, but with probability ``--explore`` a random
  legal action instead (error exploration), so the walk leaves the gold path.

The tree shapes (``gold[d]`` is the head of word ``d``):

* ``chain-left``: each word headed by the previous one (word 1 by the root),
  so the gold path of arc-standard shifts every word before reducing any;
* ``chain-right``: each word headed by the next one (word ``n`` by the root);
* ``projective``: a random projective tree;
* ``random``: a random tree, usually non-projective.

A walk whose oracle time passes ``--limit`` seconds is stopped and shown as
``>LIMIT``.  Calls answered approximately (an oracle's ``fallbacks`` count,
see ``work_limit``) are given as a share of the calls.

    nice python experiments/bench_oracle_long.py --systems arc-standard --lengths 250 500 1000 2000
"""
from __future__ import annotations

import argparse
import os
import random
import time

from kgparser.transitions import get_system
from kgparser.transitions.trees import random_projective_tree, random_tree

TREES = ("chain-left", "chain-right", "projective", "random")
WALKS = ("static", "explore")


def gold_tree(shape: str, n: int, rng: random.Random) -> list[int]:
    if shape == "chain-left":
        return [-1] + list(range(n))
    if shape == "chain-right":
        return [-1] + list(range(2, n + 1)) + [0]
    if shape == "projective":
        return random_projective_tree(n, rng)
    return random_tree(n, rng)


def walk(system, gold: list[int], explore: float, rng: random.Random, limit: float) -> dict:
    """Follow one computation; return the oracle's CPU and wall seconds, its
    number of calls and fallbacks, and whether the limit stopped the walk."""
    oracle = system.dynamic_oracle(gold)
    state = system.initial_state(len(gold) - 1)
    cpu = wall = 0.0
    calls = 0
    while not system.is_final(state):
        cpu_started, started = time.process_time(), time.perf_counter()
        costs = oracle.costs(state)
        cpu += time.process_time() - cpu_started
        wall += time.perf_counter() - started
        calls += 1
        if cpu > limit:
            break
        if rng.random() < explore:
            action = rng.choice(sorted(a for a in costs if a not in system.static_actions) or sorted(costs))
        else:
            best = min(costs.values())
            action = next(a for a in system.actions if costs.get(a) == best)
        system.apply(state, action)
    return {"cpu": cpu, "wall": wall, "calls": calls, "fallbacks": getattr(oracle, "fallbacks", 0),
            "stopped": cpu > limit}


def cell(result: dict, limit: float) -> str:
    if result["stopped"]:
        return f">{limit:g} ({result['calls']} calls)"
    text = f"{result['cpu']:.2f}"
    if result["fallbacks"]:
        text += f" ({100 * result['fallbacks'] / result['calls']:.0f}% approx.)"
    return text


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", nargs="+", default=["arc-standard", "arc-hybrid", "covington"])
    parser.add_argument("--lengths", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--trees", nargs="+", choices=TREES, default=list(TREES))
    parser.add_argument("--walks", nargs="+", choices=WALKS, default=list(WALKS))
    parser.add_argument("--explore", type=float, default=0.1, help="probability of a random action")
    parser.add_argument("--limit", type=float, default=150.0, help="CPU seconds after which a walk stops")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start; "
          f"oracle CPU seconds per sentence (wall seconds in the log lines)")
    print(f"| system | tree | walk | {' | '.join(f'{n} words' for n in args.lengths)} |")
    print(f"|---|---|---|{'---|' * len(args.lengths)}")
    for name in args.systems:
        system = get_system(name)
        for shape in args.trees:
            for walk_name in args.walks:
                cells = []
                for n in args.lengths:
                    rng = random.Random(f"{args.seed}-{shape}-{n}")
                    gold = gold_tree(shape, n, rng)
                    result = walk(system, gold, args.explore if walk_name == "explore" else 0.0, rng, args.limit)
                    print(f"# {name} {shape} {walk_name} {n}: {result}", flush=True)
                    cells.append(cell(result, args.limit))
                print(f"| {name} | {shape} | {walk_name} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
