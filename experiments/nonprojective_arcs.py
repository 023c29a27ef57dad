"""Where a model's non-projective arcs come from: of the arcs non-projective
in its predicted trees, how many have the gold head (the reports' precision,
``kgparser.evaluation.scores.nonprojective_counts``), and how many of those are
non-projective in the gold tree as well, i.e. real non-projective
structures built right, not right arcs that only look non-projective because
a word between head and dependent went wrong.

One row per prediction file (the runs' ``test.pred.conllu``), summed over the
files that match each pattern:

    python experiments/nonprojective_arcs.py ../shared/ud/UD_English-EWT/en_ewt-ud-test.conllu \\
        'runs/static-vs-dynamic/treebank=English-EWT/system=two-planar/oracle=static/seed=*/test.pred.conllu' \\
        'runs/static-vs-dynamic/treebank=English-EWT/system=two-planar-root-arcs/oracle=dynamic/seed=*/test.pred.conllu'
"""
from __future__ import annotations

import argparse
import glob

from kgparser.evaluation.scores import predicted_nonprojective_arcs
from kgparser.io.conllu import read_conllu
from kgparser.transitions.trees import nonprojective_arcs


def counts(gold: list, predicted: list) -> tuple[int, int, int]:
    """(non-projective arcs predicted, with the gold head, also non-projective in the gold tree),
    over every word, as the reports count them (:func:`kgparser.evaluation.scores.nonprojective_counts`)."""
    total = right = real = 0
    for g, p in zip(gold, predicted):
        gold_arcs = set(nonprojective_arcs(g.heads))
        for head, dep in predicted_nonprojective_arcs(p):
            total += 1
            right += g.heads[dep] == head
            real += (head, dep) in gold_arcs
    return total, right, real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gold", help="gold CoNLL-U file")
    parser.add_argument("patterns", nargs="+", help="glob patterns of prediction files (one row each)")
    args = parser.parse_args()
    gold = read_conllu(args.gold)
    print("| predictions | files | non-projective arcs | with the gold head | also non-projective in gold |")
    print("|---|---:|---:|---:|---:|")
    for pattern in args.patterns:
        files = sorted(glob.glob(pattern))
        sums = [0, 0, 0]
        for path in files:
            for i, value in enumerate(counts(gold, read_conllu(path, require_tree=False))):
                sums[i] += value
        print(f"| {pattern} | {len(files)} | {sums[0]} | {sums[1]} | {sums[2]} |", flush=True)


if __name__ == "__main__":
    main()
