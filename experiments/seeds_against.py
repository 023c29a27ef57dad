"""Two sets of parses of one gold file over several seeds (seed s of A beside
seed s of B: the same model read through two front ends, or two recipes), every
score of the CoNLL 2018 aligned report with a paired test over the gold
sentences, the seeds pooled (`kgparser.evaluation.aligned.compare_seeds`);
`kgparser evaluate GOLD A --against B` is the one-seed case.

    python experiments/seeds_against.py GOLD --a A1 A2 A3 --b B1 B2 B3 [--json]
"""
import argparse
import json

from kgparser.evaluation.aligned import NAMES, pooled_test, sentence_counts
from kgparser.io.conllu import read_conllu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gold")
    parser.add_argument("--a", nargs="+", required=True, help="A's parses, one per seed")
    parser.add_argument("--b", nargs="+", required=True, help="B's parses, of the same seeds in the same order")
    parser.add_argument("--test", choices=("bootstrap", "randomization"), default="bootstrap")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if len(args.a) != len(args.b):
        parser.error(f"--a has {len(args.a)} parses and --b {len(args.b)}: one per seed on each side")
    gold = read_conllu(args.gold, require_tree=True)
    seeds = {side: [sentence_counts(gold, read_conllu(path, require_tree=False), args.gold, path) for path in paths]
             for side, paths in (("a", args.a), ("b", args.b))}
    comparison = pooled_test(seeds["a"], seeds["b"], test=args.test)
    rows = {metric: {"a": [counts[metric].total().f1 for counts in seeds["a"]],
                     "b": [counts[metric].total().f1 for counts in seeds["b"]], "pooled_a": result.score_a,
                     "pooled_b": result.score_b, "delta": result.delta, "p_value": result.p_value}
            for metric, result in comparison.items()}
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{len(args.a)} seeds pooled, paired {args.test} test over the gold sentences; F1 x 100")
    print(f"{'':18}{'A (seeds)':>26}{'A':>8}{'B (seeds)':>26}{'B':>8}{'B-A':>8}{'p':>8}")
    for metric, row in rows.items():
        both = [" ".join(f"{100 * f:.2f}" for f in row[side]) for side in ("a", "b")]
        print(f"{NAMES[metric]:18}{both[0]:>26}{100 * row['pooled_a']:8.2f}{both[1]:>26}"
              f"{100 * row['pooled_b']:8.2f}{100 * row['delta']:+8.2f}{row['p_value']:8.4f}")


if __name__ == "__main__":
    main()
