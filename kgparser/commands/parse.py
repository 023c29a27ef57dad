"""Parse a CoNLL-U file with a trained model (keeps every other column and line)."""
from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", help="CoNLL-U file to parse (HEAD/DEPREL are replaced)")
    parser.add_argument("--model", "-m", required=True, help="checkpoint (best.pt or last.pt of a run)")
    parser.add_argument("--output", "-o", default=None, help="output file (default: standard output)")
    parser.add_argument("--batch-size", type=int, default=64, help="sentences per batch (default 64)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    parser.add_argument("--lenient", action="store_true", help="skip sentences that cannot be read")
    parser.add_argument("--constraints", default=None, metavar="FILE.jsonl|misc",
                        help="hard span/arc constraints: a JSON-lines file (one object per sentence, "
                             "by sent_id or index) or 'misc' to read Head=/HeadLabel=/Span= from the MISC column")
    parser.add_argument("--on-bad-constraints", choices=("error", "skip"), default="error",
                        help="a sentence whose constraints no tree satisfies: stop with an error (default) "
                             "or parse it without them, with a warning")


def run(args: argparse.Namespace) -> int:
    import time

    from ..parser import Parser

    if args.batch_size <= 0:
        from ..errors import KgparserError

        raise KgparserError(f"--batch-size: must be > 0, got {args.batch_size}")
    parser = Parser.load(args.model, device=args.device, batch_size=args.batch_size, threads=args.threads)
    started = time.perf_counter()
    sentences = parser.parse_file(args.input, args.output if args.output else sys.stdout, lenient=args.lenient,
                                  constraints=args.constraints, on_bad_constraints=args.on_bad_constraints)
    seconds = time.perf_counter() - started
    words = sum(s.n for s in sentences)
    print(f"parsed {len(sentences)} sentences, {words} words in {seconds:.1f}s "
          f"({words / seconds if seconds else 0:.0f} words/s)", file=sys.stderr)
    if args.constraints is not None:
        report = parser.constraint_report
        print(f"constraints: {report.constrained} sentences constrained, {len(report.skipped)} dropped, "
              f"{len(report.violated)} outputs missing a constraint", file=sys.stderr)
    return 0
