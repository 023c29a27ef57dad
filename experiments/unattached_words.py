"""Count the words a model's transition system leaves without a head, and the
non-projective arcs that are non-projective only because of them.

Non-projective systems such as Covington and 2-Planar may end a sentence with
several words unattached (or, with an explicit root node, attached to the
root); the single-root repair (``decoding.root_choice``, README "The root of a
UD tree") then attaches them.  For each model this script parses a gold
CoNLL-U file with ``root_choice="multi"``, which keeps what the final states
hold (loose words on the root, no repair beyond cycles), and reports:

* ``loose``: words on the root other than the gold root word;
* ``sentences >1``: sentences with more than one word on the root;
* ``non-proj.``: predicted arcs between words that are non-projective (some
  word between head and dependent is not a descendant of the head), and of
  those ``only loose``: the arcs whose in-between non-descendants all belong
  to the trees of other words on the root, i.e. arcs that a single tree with
  the same arcs could make projective;
* UAS / LAS of that multi-root output.

    python experiments/unattached_words.py ../shared/ud/UD_Hungarian-Szeged/hu_szeged-ud-test.conllu \\
        runs/static-vs-dynamic/treebank=Hungarian-Szeged/system=covington/oracle=*/seed=1/best.pt
"""
from __future__ import annotations

import argparse

import torch

from kgparser.evaluation.scores import evaluate
from kgparser.inference.parser import Parser
from kgparser.io.conllu import read_conllu


def top_of(heads: list[int], word: int) -> int:
    """The word on the root whose tree holds ``word``."""
    while heads[word] != 0:
        word = heads[word]
    return word


def is_descendant(heads: list[int], head: int, word: int) -> bool:
    while word > 0:
        word = heads[word]
        if word == head:
            return True
    return head == 0


def arc_counts(heads: list[int]) -> tuple[int, int]:
    """``(non-projective arcs, of which only other root trees lie in between)``
    for one sentence (``heads[0]`` unused)."""
    non_projective = only_loose = 0
    for dep in range(1, len(heads)):
        head = heads[dep]
        if head == 0:
            continue
        low, high = min(head, dep), max(head, dep)
        between = [w for w in range(low + 1, high) if not is_descendant(heads, head, w)]
        if between:
            non_projective += 1
            own = top_of(heads, head)
            only_loose += all(top_of(heads, w) != own for w in between)
    return non_projective, only_loose


def count_loose(model_path: str, gold: list) -> dict:
    """Parse ``gold`` keeping every loose word on the root, and count them."""
    parsed = Parser.load(model_path).parse(gold, root_choice="multi")
    loose = sentences_over_one = non_projective = only_loose = 0
    for gold_sentence, sentence in zip(gold, parsed):
        heads = list(sentence.heads)
        on_root = [d for d in range(1, len(heads)) if heads[d] == 0]
        loose += sum(1 for d in on_root if gold_sentence.heads[d] != 0)
        sentences_over_one += len(on_root) > 1
        arcs = arc_counts(heads)
        non_projective, only_loose = non_projective + arcs[0], only_loose + arcs[1]
    scores = evaluate(gold, parsed)
    return {"model": model_path, "loose": loose, "sentences >1": sentences_over_one,
            "non-proj.": non_projective, "only loose": only_loose, "UAS": 100 * scores.uas, "LAS": 100 * scores.las}


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("gold", help="gold CoNLL-U file (e.g. a test set)")
    arguments.add_argument("models", nargs="+", help="checkpoints (best.pt)")
    args = arguments.parse_args()
    torch.set_num_threads(1)
    gold = list(read_conllu(args.gold))
    print("| model | loose words (not the gold root) | sentences with >1 on the root | non-projective arcs "
          "| of which only other root trees in between | UAS (multi-root) | LAS (multi-root) |")
    print("|---|---|---|---|---|---|---|")
    for path in args.models:
        row = count_loose(path, gold)
        print(f"| {row['model']} | {row['loose']} | {row['sentences >1']} | {row['non-proj.']} | "
              f"{row['only loose']} | {row['UAS']:.2f} | {row['LAS']:.2f} |")


if __name__ == "__main__":
    main()
