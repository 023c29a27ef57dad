"""Training: the batched trainer, exploration policy, checkpoints and monitoring.

    from kgparser.config import load_config
    from kgparser.training import train
    summary = train(load_config("configs/quickstart.yaml"))
"""
from .run import RunSummary, TrainingError, train
from .trainer import Trainer

__all__ = ["RunSummary", "Trainer", "TrainingError", "train"]
