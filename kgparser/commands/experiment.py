"""Run a grid of training runs from a grid file and report their results (run / status / report)."""
from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    run = actions.add_parser("run", help="train every run of the grid that is not finished yet (resumable)")
    run.add_argument("grid", metavar="GRID.yaml", help="grid file (see experiments/README.md)")
    run.add_argument("--engine", choices=("local", "ray", "slurm"), default=None,
                     help="override engine.kind of the grid file")
    run.add_argument("--max-parallel", type=int, default=None,
                     help="local engine: runs at once (default: engine.max_parallel, else cores // threads_per_run)")
    run.add_argument("--only", action="append", default=[], metavar="AXIS=VALUE",
                     help="run only the grid points with this axis value (repeatable; values of one axis are OR-ed)")
    run.add_argument("--dry-run", action="store_true", help="list the runs and their state; train nothing")
    status = actions.add_parser("status", help="list the runs of the grid and whether each is finished")
    status.add_argument("grid", metavar="GRID.yaml")
    report = actions.add_parser("report", help="collect finished runs into a Markdown report with "
                                               "significance tests and plots")
    report.add_argument("grid", metavar="GRID.yaml")
    report.add_argument("--output", "-o", default=None,
                        help="report folder (default: report.output of the grid, else OUTPUT_ROOT/report)")
    report.add_argument("--samples", type=int, default=None, help="override report.samples")
    report.add_argument("--test", choices=("bootstrap", "randomization"), default=None,
                        help="override report.test")


def _only_filter(grid, texts: list[str]):
    from ..experiments.grid import GridError, label_of

    wanted: dict[str, set[str]] = {}
    for text in texts:
        axis, sep, value = text.partition("=")
        if not sep or axis not in grid.axis_names:
            raise GridError(f"--only {text!r}: expected AXIS=VALUE with AXIS one of {', '.join(grid.axis_names)}")
        labels = next(a.labels() for a in grid.axes if a.name == axis)
        if label_of(value) not in labels:
            raise GridError(f"--only {text!r}: {axis} has no value {value!r}; values: {', '.join(labels)}")
        wanted.setdefault(axis, set()).add(label_of(value))
    if not wanted:
        return None
    return lambda run: all(run.labels[axis] in values for axis, values in wanted.items())


def _print_status(grid, only) -> None:
    from ..experiments.runners import statuses

    counts: dict[str, int] = {}
    for run, state in statuses(grid):
        if only is None or only(run):
            counts[state] = counts.get(state, 0) + 1
            print(f"{state:9} {run.output_dir}")
    print(", ".join(f"{n} {state}" for state, n in sorted(counts.items())))


def run(args: argparse.Namespace) -> int:
    from ..experiments import collect, load_grid, run_grid, write_report
    from ..experiments.grid import validate_runs

    grid = load_grid(args.grid)
    if args.action == "status":
        _print_status(grid, None)
        return 0
    if args.action == "report":
        if args.samples is not None:
            grid.report.samples = args.samples
        if args.test is not None:
            grid.report.test = args.test
        path = write_report(grid, collect(grid, log=lambda line: print(line, file=sys.stderr)),
                            args.output)
        print(f"report written to {path}")
        return 0
    only = _only_filter(grid, args.only)
    if args.dry_run:
        _print_status(grid, only)
        return 0
    validate_runs(grid)
    failures = run_grid(grid, engine=args.engine, max_parallel=args.max_parallel, only=only,
                        log=lambda line: print(line, file=sys.stderr, flush=True))
    if failures:
        print(f"{len(failures)} run(s) failed:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0
