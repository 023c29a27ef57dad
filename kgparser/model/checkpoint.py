"""Reading a checkpoint back: plain data (``torch.load(weights_only=True)``),
its format checked, its weights finite.

The writing side, and the layout of the dict, are in
:mod:`kgparser.training.checkpoints`.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import torch

from ..atomic import os_error_message
from ..errors import KgparserError

__all__ = ["CHECKPOINT_FORMAT", "CHECKPOINT_VERSION", "CheckpointError", "load_checkpoint"]

CHECKPOINT_FORMAT = "kgparser-checkpoint"
CHECKPOINT_VERSION = 1
NOT_A_CHECKPOINT = "not a kgparser checkpoint, or damaged"


class CheckpointError(KgparserError):
    """A checkpoint cannot be read."""


def load_checkpoint(path: str | Path) -> dict:
    """The plain-data dict of a checkpoint (``torch.load(weights_only=True)``).
    A checkpoint whose model weights hold NaN or infinite values is refused:
    every parse with it would fail (or be garbage), so it is named at load time."""
    path = Path(path)
    data = _plain_data(path)
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: {NOT_A_CHECKPOINT}")
    if data.get("format_version", 0) > CHECKPOINT_VERSION:
        raise CheckpointError(f"{path}: checkpoint format {data['format_version']} is newer than this kgparser")
    _check_finite_weights(path, data)
    return data


def _plain_data(path: Path) -> object:
    """What ``torch.load(weights_only=True)`` reads from ``path``.  Whatever
    else the file is -- random bytes, another format, a pickle that asks to
    build objects or run code -- is one line, :data:`NOT_A_CHECKPOINT`:
    torch's own message for the last kind advises loading with
    ``weights_only=False``, which would run the code of a malicious file."""
    try:
        with warnings.catch_warnings():  # torch warns about pickle protocols before it refuses
            warnings.simplefilter("ignore")
            return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint") from None
    except OSError as error:
        raise CheckpointError(os_error_message(path, error)) from None
    except Exception:  # torch raises many types for damaged or foreign files
        raise CheckpointError(f"{path}: {NOT_A_CHECKPOINT}") from None


def _check_finite_weights(path: Path, data: dict) -> None:
    """Raise naming the first weight tensor that holds NaN or inf."""
    model = data.get("model")
    weights = model.get("weights") if isinstance(model, dict) else None
    if not isinstance(weights, dict):
        return  # Model.from_data reports the missing weights
    for name, tensor in weights.items():
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and not bool(tensor.isfinite().all()):
            raise CheckpointError(f"{path}: the weights are not finite ({name} holds NaN or inf): the checkpoint "
                                  f"is damaged, e.g. by diverged training; retrain with a lower learning rate")
