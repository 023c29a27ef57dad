"""Checkpoints: plain data written atomically.

A checkpoint is a dict of strings, numbers, lists, dicts and tensors, loadable
with ``torch.load(path, weights_only=True)``::

    format            "kgparser-checkpoint"
    format_version    1
    kgparser_version  "0.1.0"
    model             Model.to_data(): config, vocabs, ext_words, ext_dim,
                      actions, transitions [[action, label|None], ...], weights
    epoch             completed epochs
    dev               {"uas": .., "las": ..} of this model (None without dev data)
    training          (last.pt only) optimizer state, torch RNG state,
                      best_las, best_epoch, and with ``training.ema_decay``
                      ``average``: the trained weights (the model's weights
                      are then their moving average) and the update count:
                      what --resume needs
"""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import torch

from .. import __version__
from ..atomic import WriteError, atomic_path
from ..model.checkpoint import CHECKPOINT_FORMAT, CHECKPOINT_VERSION

#: free bytes under which a failed checkpoint write is reported as a full disk
_FULL_DISK_MARGIN = 64 * 2 ** 20


def checkpoint_data(model, epoch: int, dev: dict | None, training: dict | None = None) -> dict:
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


def save_atomic(data: dict, path: str | Path) -> None:
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
