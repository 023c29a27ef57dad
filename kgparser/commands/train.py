"""Train a parser from a YAML config (writes checkpoints, metrics and TensorBoard logs)."""
from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", default=None,
                        help="YAML experiment config (default: the shipped configs/quickstart.yaml)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                        help="override a config value, e.g. --set training.epochs=5 (repeatable)")
    parser.add_argument("--resume", action="store_true",
                        help="continue from OUTPUT_DIR/last.pt (optimizer and RNG state restored); a run stopped "
                             "before it wrote its first last.pt starts again from the beginning")
    parser.add_argument("--overwrite", action="store_true",
                        help="train a new model even if OUTPUT_DIR already holds one: first removes the previous "
                             "run's files (never files kgparser did not write)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars or per-epoch lines")
    parser.add_argument("--nproc", type=int, default=1, metavar="N",
                        help="train data-parallel in N processes on this machine (torchrun --standalone; "
                             "each process takes training.batch_size sentences per batch)")


def default_config_path():
    from pathlib import Path

    return Path(__file__).resolve().parents[2] / "configs" / "quickstart.yaml"


def run(args: argparse.Namespace) -> int:
    from ..errors import KgparserError

    if args.resume and args.overwrite:
        raise KgparserError("--resume and --overwrite exclude each other")
    if args.nproc < 1:
        raise KgparserError(f"--nproc: must be >= 1, got {args.nproc}")
    if args.nproc > 1:
        return _launch(args)
    return _train(args)


def _train(args: argparse.Namespace) -> int:
    from ..config import load_config
    from ..training import train
    from ..training.distributed import world_from_environment

    path = args.config or default_config_path()
    overrides = list(args.overrides)
    if args.quiet:
        overrides.append("training.progress=false")
    config = load_config(path, overrides)

    def log(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    summary = train(config, resume=args.resume, log=log, overwrite=args.overwrite, config_file=path)
    if world_from_environment().main:
        best = f"{100 * summary.best_las:.2f}" if summary.best_las is not None else "n/a"
        print(f"best dev LAS {best} at epoch {summary.best_epoch}; checkpoints in {summary.output_dir}")
    return 0


def _launch(args: argparse.Namespace) -> int:
    """``torchrun --standalone --nproc-per-node N -m kgparser train ...`` with the
    same arguments (:func:`kgparser.training.distributed.launch`)."""
    from ..training.distributed import launch

    command = ["train", str(args.config or default_config_path())]
    command += [a for override in args.overrides for a in ("--set", override)]
    command += [flag for flag, on in (("--resume", args.resume), ("--overwrite", args.overwrite),
                                      ("--quiet", args.quiet)) if on]
    launch(args.nproc, command)
    return 0
