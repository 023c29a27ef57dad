"""How much an oracle tie-break shortens the computations training follows.

For Covington and 2-Planar with and without a tie-break (system option
``tie_break``; 2-Planar also ``regularize_switch``), follow the dynamic
oracle's preferred actions (those of least ``costs()``, which training takes
as correct) on each treebank sentence, from the initial state and from a
state reached by random actions, choosing among them either the lengthening
actions first (``no-arc``; ``switch``, ``reduce``: what a model that learnt
the long way round does) or at random.  Prints, per configuration, the mean
transitions and ``no-arc`` (``reduce``, ``switch``) actions per sentence, the summed Hamming loss of
the trees reached (the same in every configuration: a tie-break only chooses
among zero-cost actions; for 2-Planar, whose oracle is exact relative to
its canonical plane assignment, the loss relative to those planes, which
counts a gold arc built in the other plane as lost) and the mean time of a
``costs()`` call.

    python experiments/tie_breaks.py ../shared/ud/UD_Turkish-IMST/tr_imst-ud-train.conllu --sentences 500
"""
from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from kgparser.io.conllu import read_conllu
from kgparser.transitions import get_system
from kgparser.transitions.base import hamming_loss, least_cost_actions

COVINGTON = ("no-arc", "left", "right", "shift")
TWO_PLANAR = ("switch", "reduce", "left", "right", "shift")
#: (label, system name, options); each system's actions that may lengthen a
#: computation, most lengthening first, and the ones counted
CONFIGS = [
    ("covington", "covington", {}),
    ("covington tie_break=[shift]", "covington", {"tie_break": ["shift"]}),
    ("covington tie_break=shortest", "covington", {"tie_break": "shortest"}),
    ("two-planar regularize_switch=false", "two-planar", {"regularize_switch": False}),
    ("two-planar (regularize_switch=true)", "two-planar", {}),
    ("two-planar regularize_switch=false tie_break=shortest", "two-planar",
     {"regularize_switch": False, "tie_break": "shortest"}),
    ("two-planar tie_break=shortest", "two-planar", {"tie_break": "shortest"}),
]
LENGTHENING = {"covington": COVINGTON, "two-planar": TWO_PLANAR}
COUNTED = {"covington": ("no-arc",), "two-planar": ("reduce", "switch")}


def follow(system, oracle, state, choose, timings: list[float]) -> tuple[int, dict[str, int]]:
    """Follow preferred actions from ``state`` (in place) to a final state;
    return the number of transitions and the count of each action."""
    counts: dict[str, int] = {}
    steps = 0
    while not system.is_final(state):
        started = time.perf_counter()
        preferred = least_cost_actions(oracle.costs(state))
        timings.append(time.perf_counter() - started)
        action = choose(preferred)
        counts[action] = counts.get(action, 0) + 1
        system.apply(state, action)
        steps += 1
    return steps, counts


def random_prefix(system, n: int, rng: random.Random):
    """A state reached by random legal actions, about half-way through a sentence."""
    state = system.initial_state(n)
    for _ in range(rng.randint(0, n)):
        if system.is_final(state):
            break
        system.apply(state, rng.choice(system.legal_actions(state)))
    return state


def choosers(order: tuple[str, ...], rng: random.Random):
    """``lengthening-first``: the first preferred action in ``order`` (the
    most lengthening first); ``random``: a uniform choice."""
    def first(preferred):
        return next(a for a in order if a in preferred)
    return {"lengthening-first": first, "random": rng.choice}


def run(config, golds, seed):
    """Table rows of one configuration: for each chooser and start, the mean
    transitions and counted actions per sentence, the summed loss and the
    mean µs per ``costs()`` call."""
    label, name, options = config
    system = get_system(name, **options)
    rows = []
    for chooser_name in ("lengthening-first", "random"):
        choose = choosers(LENGTHENING[name], random.Random(seed))[chooser_name]
        for start in ("initial", "after random actions"):
            prefix_rng = random.Random(seed)  # the same prefixes in every configuration
            steps, counted, loss, plane_loss, timings = [], {a: [] for a in COUNTED[name]}, 0, 0, []
            for gold in golds:
                n = len(gold) - 1
                state = system.initial_state(n) if start == "initial" else random_prefix(system, n, prefix_rng)
                oracle = system.dynamic_oracle(gold)
                taken, counts = follow(system, oracle, state, choose, timings)
                steps.append(taken)
                for action, per_sentence in counted.items():
                    per_sentence.append(counts.get(action, 0))
                loss += hamming_loss(state.heads, gold)
                plane_loss += oracle.final_loss(state) if name == "two-planar" else 0
            actions = ", ".join(f"{a} {statistics.fmean(c):.1f}" for a, c in counted.items())
            losses = f"{loss} / {plane_loss}" if name == "two-planar" else str(loss)
            rows.append((label, chooser_name, start, statistics.fmean(steps), actions, losses,
                         statistics.fmean(timings) * 1e6))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("treebank", type=Path)
    parser.add_argument("--sentences", type=int, default=500, help="the first N sentences")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", nargs="*", help="configuration labels to run (default: all)")
    args = parser.parse_args(argv)
    golds = [s.heads for s in read_conllu(args.treebank)[:args.sentences]]
    print(f"{args.treebank.name}: first {len(golds)} sentences, {sum(len(g) - 1 for g in golds)} words, "
          f"seed {args.seed}\n")
    print("| configuration | choice among preferred | from | transitions/sentence | per sentence "
          "| summed loss (2-Planar: / relative to planes) | µs per costs() |")
    print("|---|---|---|---:|---:|---:|---:|")
    for config in CONFIGS:
        if args.only and config[0] not in args.only:
            continue
        for label, chooser, start, steps, actions, loss, micros in run(config, golds, args.seed):
            print(f"| {label} | {chooser} | {start} | {steps:.1f} | {actions} | {loss} | {micros:.0f} |", flush=True)


if __name__ == "__main__":
    main()
