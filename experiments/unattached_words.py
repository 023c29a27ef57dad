"""Count the words a model's transition system leaves without a head.

Non-projective systems such as Covington and 2-Planar may end a sentence with
several words unattached (or, with an explicit root node, attached to the
root); the parser then hangs them from one chosen root word
(:func:`kgparser.parser.to_valid_tree`).  For each model this script parses a
gold CoNLL-U file and reports, from the final states before that repair:

* ``loose``: words left headless or on the root other than the gold root word
  (each becomes a dependent of the chosen root, usually a wrong arc);
* ``sentences >1``: sentences that end with more than one word headless or on
  the root;
* UAS / LAS of the repaired output.

    python experiments/unattached_words.py ../shared/ud/UD_Hungarian-Szeged/hu_szeged-ud-test.conllu \\
        runs/static-vs-dynamic/treebank=Hungarian-Szeged/system=covington/oracle=*/seed=1/best.pt
"""
from __future__ import annotations

import argparse

import torch

import kgparser.parser as parser_module
from kgparser.conllu_io import read_conllu
from kgparser.evaluation import evaluate
from kgparser.parser import Parser


def count_loose(model_path: str, gold: list) -> dict:
    """Parse ``gold`` with the model and count, per sentence, the words its final state leaves loose."""
    tops: list[tuple[int, list[int]]] = []  # (words, loose words) per repaired sentence
    repair = parser_module.to_valid_tree

    def recording(heads, labels, prefer=None):
        tops.append((len(heads) - 1, [d for d in range(1, len(heads)) if heads[d] is None or heads[d] <= 0]))
        return repair(heads, labels, prefer)

    parser_module.to_valid_tree = recording
    try:
        parsed = Parser.load(model_path).parse(gold)
    finally:
        parser_module.to_valid_tree = repair
    # decode() repairs the sentences in order of length (a stable sort), batch after batch
    order = sorted(range(len(gold)), key=lambda i: gold[i].n)
    assert [gold[i].n for i in order] == [n for n, _ in tops], "decoding order changed"
    loose = sentences_over_one = 0
    for i, (_, top) in zip(order, tops):
        gold_root = gold[i].heads.index(0, 1)
        loose += sum(1 for d in top if d != gold_root)
        sentences_over_one += len(top) > 1
    scores = evaluate(gold, parsed)
    return {"model": model_path, "sentences": len(gold), "loose": loose,
            "sentences >1": sentences_over_one, "UAS": 100 * scores.uas, "LAS": 100 * scores.las}


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("gold", help="gold CoNLL-U file (e.g. a test set)")
    arguments.add_argument("models", nargs="+", help="checkpoints (best.pt)")
    args = arguments.parse_args()
    torch.set_num_threads(1)
    gold = list(read_conllu(args.gold))
    print("| model | loose words (not the gold root) | sentences ending with >1 loose | UAS | LAS |")
    print("|---|---|---|---|---|")
    for path in args.models:
        row = count_loose(path, gold)
        print(f"| {row['model']} | {row['loose']} | {row['sentences >1']} | {row['UAS']:.2f} | {row['LAS']:.2f} |")


if __name__ == "__main__":
    main()
