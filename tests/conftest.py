"""Fixtures of the experiment-grid tests: runs faked by :mod:`fake_grid_runs`."""
from __future__ import annotations

import pytest
from fake_grid_runs import GRID, fake_call, write_base, write_gold, write_grid

from kgparser.experiments import runners


@pytest.fixture
def fake_runs(monkeypatch):
    calls: list = []
    monkeypatch.setattr(runners.subprocess, "call", fake_call(calls))
    return calls


@pytest.fixture
def tiny_grid(tmp_path):
    write_base(tmp_path, write_gold(tmp_path / "gold.conllu"))
    return write_grid(tmp_path, GRID)
