"""Experiment grids: expand a grid file into runs, run them (locally in
parallel, on Ray or on SLURM), collect their test results and write a report
with significance tests and plots.  See ``experiments/README.md``.

    from kgparser.experiments import load_grid, run_grid, collect, write_report
    grid = load_grid("experiments/static_vs_dynamic.yaml")
    run_grid(grid)
    write_report(grid, collect(grid))
"""
from .collect import collect
from .grid import Grid, GridError, load_grid
from .report import write_report
from .runners import run_grid

__all__ = ["Grid", "GridError", "collect", "load_grid", "run_grid", "write_report"]
