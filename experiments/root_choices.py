"""Re-parse trained models with each ``decoding.root_choice`` and score them:
LAS/UAS, and the non-projective arcs of the output with their precision.

The root choice only repairs what a final state leaves loose (README, "The
root of a UD tree"), so the same trained models can be compared under each
choice without training again.  For each model and choice this prints the
test LAS and UAS, the predicted arcs that are non-projective in the output
tree (:func:`kgparser.transitions.trees.nonprojective_arcs`), how many of
them have the gold head (precision), and how many of them attach a word the
final state left loose (arcs the repair built).

    python experiments/root_choices.py ../shared/ud/UD_Hungarian-Szeged/hu_szeged-ud-test.conllu \\
        runs/static-vs-dynamic/treebank=Hungarian-Szeged/system=two-planar/oracle=*/seed=*/best.pt

To compare two versions of the repair, run it in a checkout of each
(``git worktree add``) with the same models.
"""
from __future__ import annotations

import argparse

import torch

from kgparser.evaluation.scores import evaluate
from kgparser.inference.parser import Parser
from kgparser.inference.tree_repair import ROOT_CHOICES
from kgparser.io.conllu import read_conllu
from kgparser.transitions.trees import nonprojective_arcs


def nonprojective_counts(gold: list, parsed: list, loose: list[set[int]]) -> tuple[int, int, int]:
    """``(non-projective arcs, of which correct, of which repair arcs)`` over
    the sentences; ``loose[i]``: the words sentence ``i``'s final state left loose."""
    total = correct = repaired = 0
    for gold_sentence, sentence, loose_words in zip(gold, parsed, loose):
        for head, dep in nonprojective_arcs(list(sentence.heads)):
            total += 1
            correct += gold_sentence.heads[dep] == head
            repaired += dep in loose_words
    return total, correct, repaired


def score(parser: Parser, gold: list, choice: str, loose: list[set[int]]) -> dict:
    parsed = parser.parse(gold, root_choice=choice)
    scores = evaluate(gold, parsed)
    total, correct, repaired = nonprojective_counts(gold, parsed, loose)
    return {"LAS": 100 * scores.las, "UAS": 100 * scores.uas, "non-proj.": total,
            "precision": 100 * correct / total if total else 0.0, "repair arcs": repaired}


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("gold", help="gold CoNLL-U file (e.g. a test set)")
    arguments.add_argument("models", nargs="+", help="checkpoints (best.pt)")
    arguments.add_argument("--choices", nargs="+", default=list(ROOT_CHOICES), choices=ROOT_CHOICES)
    args = arguments.parse_args()
    torch.set_num_threads(1)
    gold = list(read_conllu(args.gold))
    print("| model | root choice | LAS | UAS | non-projective arcs | precision | repair arcs among them |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for path in args.models:
        parser = Parser.load(path)
        multi = parser.parse(gold, root_choice="multi")
        loose = [{d for d in range(1, len(s.heads)) if s.heads[d] == 0} for s in multi]
        for choice in args.choices:
            row = score(parser, gold, choice, loose)
            print(f"| {path} | {choice} | {row['LAS']:.2f} | {row['UAS']:.2f} | {row['non-proj.']} | "
                  f"{row['precision']:.1f} | {row['repair arcs']} |", flush=True)


if __name__ == "__main__":
    main()
