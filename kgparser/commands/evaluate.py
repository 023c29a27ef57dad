"""Score a predicted CoNLL-U file against gold trees (UAS, LAS, universal LAS)."""
from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("gold", metavar="GOLD", help="gold CoNLL-U file ('-' for stdin, .gz ok)")
    parser.add_argument("pred", metavar="PRED", help="predicted CoNLL-U file, same words as GOLD")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON (fractions in [0, 1])")
    parser.add_argument("--no-punct", action="store_true",
                        help="leave out words whose gold UPOS is PUNCT (default: score every word, as CoNLL 2018)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also report precision/recall/F1 per dependency label and per arc length")


def run(args: argparse.Namespace) -> int:
    from ..evaluation import evaluate_files

    scores = evaluate_files(args.gold, args.pred, punct=not args.no_punct)
    if args.json:
        print(json.dumps(scores.to_dict(breakdown=args.breakdown), indent=2))
    else:
        print(scores.format(breakdown=args.breakdown))
    return 0
