"""Package a trained run as a wheel (checkpoint, model card, entry point), installable and loaded by name."""
from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``kgparser package``."""
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a trained run's folder (its best.pt, config, metrics)")
    parser.add_argument("out_dir", metavar="OUT_DIR", help="folder to write the wheel to (made if absent)")
    parser.add_argument("--name", default=None,
                        help="the model's name: the package's, and what Parser.load(NAME) and kgparser parse "
                             "--model NAME take (default: RUN_DIR's folder name)")
    parser.add_argument("--version", default="0.1.0", help="the package's version (PEP 440; default 0.1.0)")
    parser.add_argument("--overwrite", action="store_true", help="replace a wheel of that name and version in OUT_DIR")


def run(args: argparse.Namespace) -> int:
    from ._wheel import package_run

    def log(line: str) -> None:
        print(f"kgparser package: {line}", file=sys.stderr, flush=True)

    wheel = package_run(args.run_dir, args.out_dir, name=args.name, version=args.version, overwrite=args.overwrite,
                        log=log)
    print(wheel)
    log(f"install it with pip install {wheel}; then it loads by its name (kgparser parse --model NAME)")
    return 0
