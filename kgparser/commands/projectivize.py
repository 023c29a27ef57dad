"""Optimally projectivize the trees of a CoNLL-U file (fewest arcs moved; Nederhof 2019)."""
from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", metavar="IN", help="CoNLL-U file with trees ('-' for stdin, .gz ok)")
    parser.add_argument("output", metavar="OUT", help="CoNLL-U file to write ('-' for stdout, .gz ok)")


def run(args: argparse.Namespace) -> int:
    from ..io.atomic import output_target
    from ..io.conllu import read_conllu, write_conllu
    from ..projectivize import projectivize_sentences

    sentences = read_conllu(args.input)
    summary = projectivize_sentences(sentences)
    write_conllu(sentences, args.output)
    report = sys.stderr if output_target(args.output).descriptor == 1 else sys.stdout
    print(f"{args.input}: {summary}", file=report)
    return 0
