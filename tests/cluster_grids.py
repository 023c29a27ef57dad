"""A tiny grid for the tests that run real cluster engines (Ray, SLURM): a
tiny model trained for 2 epochs on 30 sentences of the shipped sample."""
from __future__ import annotations

from pathlib import Path

import yaml

from kgparser.io.conllu import read_conllu, write_conllu

SAMPLE = Path(__file__).resolve().parents[1] / "kgparser" / "resources" / "en_ewt_sample"


def write_tiny_grid(tmp_path: Path, axes: dict, engine: dict, **extra) -> Path:
    """``tmp_path/grid.yaml`` over ``axes`` run by ``engine`` (with a base config beside it)."""
    test = tmp_path / "test.conllu"
    write_conllu(read_conllu(SAMPLE / "test.conllu")[:20], test)
    (tmp_path / "base.yaml").write_text(yaml.safe_dump({
        "threads": 1,
        "data": {"train": str(SAMPLE / "train.conllu"), "dev": str(test), "test": str(test),
                 "max_train_sentences": 30},
        "model": {"word_dim": 8, "pos_dim": 4, "lstm_hidden": 8, "lstm_layers": 1, "mlp_hidden": 8},
        "training": {"epochs": 2, "tensorboard": False}}))
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"base": "base.yaml", "output_root": "runs", "axes": axes, **extra,
                                    "engine": engine}, sort_keys=False))
    return grid
