"""Checkpoints: plain data, written atomically and read back checked.

A checkpoint is a dict of strings, numbers, lists, dicts and tensors, loadable
with ``torch.load(path, weights_only=True)``::

    format            "kgparser-checkpoint"
    format_version    1
    kgparser_version  "0.1.0"
    model             Model.to_data(): config, vocabs, ext_words, ext_dim,
                      actions, transitions [[action, label|None], ...], weights,
                      max_train_length, encoder_fingerprint
    epoch             completed epochs
    dev               {"uas": .., "las": ..} of this model (None without dev data)
    training          (last.pt only) optimizer state, torch RNG state,
                      best_las, best_epoch, and with ``training.ema_decay``
                      ``average``: the trained weights (the model's weights
                      are then their moving average) and the update count:
                      what --resume needs

Reading checks the format and that the weights are finite; writing goes
through a temporary file renamed over the target.
"""
from __future__ import annotations

import errno
import os
import shutil
import warnings
from pathlib import Path

import torch

from .. import __version__
from ..atomic import WriteError, atomic_path, os_error_message
from ..errors import KgparserError

__all__ = ["CHECKPOINT_FORMAT", "CHECKPOINT_VERSION", "CheckpointError", "checkpoint_data", "load_checkpoint",
           "save_checkpoint"]

CHECKPOINT_FORMAT = "kgparser-checkpoint"
CHECKPOINT_VERSION = 1
NOT_A_CHECKPOINT = "not a kgparser checkpoint, or damaged"
#: free bytes under which a failed checkpoint write is reported as a full disk
_FULL_DISK_MARGIN = 64 * 2 ** 20


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


def checkpoint_data(model, epoch: int, dev: dict | None, training: dict | None = None) -> dict:
    """The checkpoint dict of ``model`` after ``epoch`` (see the module docstring)."""
    data = {
        "format": CHECKPOINT_FORMAT,
        "format_version": CHECKPOINT_VERSION,
        "kgparser_version": __version__,
        "model": model.to_data(),
        "epoch": epoch,
        "dev": dev,
    }
    if training is not None:
        data["training"] = training
    return data


def save_checkpoint(data: dict, path: str | Path) -> None:
    """Write to a temporary file in the same folder, then rename over ``path``
    (:func:`kgparser.atomic.atomic_path`).  torch reports a full disk as a
    RuntimeError from its zip writer, which says nothing of disk space, so the
    free space is checked to name the cause."""
    with atomic_path(path) as temporary:
        try:
            torch.save(data, temporary)
        except RuntimeError as error:
            if shutil.disk_usage(temporary.parent).free < _FULL_DISK_MARGIN:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)) from error
            raise WriteError(f"cannot write {path}: {error}") from error
