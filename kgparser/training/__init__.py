"""Training: the batched trainer, exploration policy, checkpoints and monitoring.

    from kgparser.config import load_config
    from kgparser.training import train
    summary = train(load_config("configs/quickstart.yaml"))
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .run import RunSummary, TrainingError, train
    from .trainer import Trainer

__all__ = ["RunSummary", "Trainer", "TrainingError", "train"]

#: where each name lives, loaded when first asked for: the torch-free modules of
#: the package (``run_folder``, which the experiment runners read) load without torch
_HOMES = {"RunSummary": ".run", "TrainingError": ".run", "train": ".run", "Trainer": ".trainer"}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
