"""Checkpoints: plain data, written atomically and read back checked.

A checkpoint is a dict of strings, numbers, lists, dicts and tensors, loadable
with ``torch.load(path, weights_only=True)``::

    format            "kgparser-checkpoint"
    format_version    1
    kgparser_version  "0.1.0"
    model             Model.to_data(): config, vocabs, ext_words, ext_dim,
                      actions, transitions [[action, label|None], ...], weights,
                      max_train_length, encoder_fingerprint, and where the run
                      learned them, tokenizer: Tokenizer.to_data() (characters,
                      weights, multiword) and lemmatizer: Lemmatizer.to_data()
                      (characters, in_dim, classes, weights)
    epoch             completed epochs
    dev               {"uas": .., "las": ..} of this model (None without dev data)
    training          (last.pt only) optimizer state, torch RNG state,
                      best_las, best_epoch, and with ``training.ema_decay``
                      ``average``: the trained weights (the model's weights
                      are then their moving average) and the update count:
                      what --resume needs

Reading checks the format, the type of every field a loader reads
(:data:`FIELDS`) and that the weights are finite; writing goes through a
temporary file renamed over the target.
"""
from __future__ import annotations

import errno
import os
import shutil
import warnings
from collections.abc import Iterable
from itertools import repeat
from pathlib import Path

import torch

from ..errors import KgparserError
from ..io.atomic import WriteError, atomic_path, os_error_message
from ..version import __version__

__all__ = ["CHECKPOINT_FORMAT", "CHECKPOINT_VERSION", "CheckpointError", "checkpoint_data", "load_checkpoint",
           "save_checkpoint"]

CHECKPOINT_FORMAT = "kgparser-checkpoint"
CHECKPOINT_VERSION = 1
NOT_A_CHECKPOINT = "not a kgparser checkpoint, or damaged"
#: free bytes under which a failed checkpoint write is reported as a full disk
_FULL_DISK_MARGIN = 64 * 2 ** 20

_VOCAB = {"items": [str], "counts": [int], "specials": [str]}
#: the type of each field the loaders read (:meth:`kgparser.model.Model.from_data`, ``--resume``):
#: a type or tuple of types; ``[schema]``: a list of such values; a dict: the schemas of its keys
#: (``str``: of every key).  A field may be absent (older checkpoints lack some; the loaders say
#: which they need) but never of another type.
FIELDS = {
    "format_version": int,
    "kgparser_version": str,
    "model": {
        "config": dict,
        "vocabs": {"words": _VOCAB, "tags": _VOCAB, "chars": _VOCAB, "labels": _VOCAB, "tag_columns": {str: _VOCAB},
                   "lemma_lexicon": {"lemmas": str, "cuts": str}},
        "ext_words": [str],
        "ext_dim": int,
        "actions": [str],
        "transitions": [[(str, type(None))]],
        "weights": {str: torch.Tensor},
        "max_train_length": (int, type(None)),
        "encoder_fingerprint": (str, type(None)),
        "tokenizer": {"characters": [int], "weights": {str: torch.Tensor},
                      "multiword": {"exact": [[(str, list)]], "lowered": [[(str, list)]], "rules": [list],
                                    "single": [str]}},
        "lemmatizer": {"characters": [str], "in_dim": int, "classes": int, "weights": {str: torch.Tensor}},
    },
    "epoch": int,
    "dev": (dict, type(None)),
    "training": {"optimizer": dict, "torch_rng": torch.Tensor, "best_las": (float, int, type(None)),
                 "best_epoch": int, "world_size": int,
                 "average": {"current_weights": [torch.Tensor], "updates": int}},
}


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
    damaged = _misfit(data, FIELDS, "")
    if damaged:
        raise CheckpointError(f"{path}: {NOT_A_CHECKPOINT} ({damaged})")
    if data.get("format_version", 0) > CHECKPOINT_VERSION:
        raise CheckpointError(f"{path}: checkpoint format {data['format_version']} is newer than this kgparser")
    _check_finite_weights(path, data)
    return data


def _misfit(value: object, schema, name: str) -> str | None:
    """Where ``value`` (the field ``name``) does not fit ``schema`` (see :data:`FIELDS`), or None."""
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            return _wrong_type(value, dict, name)
        fields = ((value[key], schema.get(str, schema.get(key)), f"{name}.{key}" if name else str(key))
                  for key in value)
        return _first_misfit(field for field in fields if field[1])  # keys the loaders do not read are left alone
    if isinstance(schema, list):
        if not isinstance(value, list):
            return _wrong_type(value, list, name)
        if not isinstance(schema[0], (dict, list)) and all(map(isinstance, value, repeat(schema[0]))):
            return None  # a vocabulary of thousands of words, checked in one C loop
        return _first_misfit((item, schema[0], f"{name}[{i}]") for i, item in enumerate(value))
    return None if isinstance(value, schema) else _wrong_type(value, schema, name)


def _first_misfit(fields: Iterable[tuple[object, object, str]]) -> str | None:
    """The first :func:`_misfit` of ``(value, schema, name)`` fields, or None."""
    return next(filter(None, (_misfit(*field) for field in fields)), None)


def _wrong_type(value: object, expected, name: str) -> str:
    names = [kind.__name__ for kind in (expected if isinstance(expected, tuple) else (expected,))]
    return f"{name} is {type(value).__name__}, not {' or '.join(names)}"


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
    model = data.get("model", {})
    stages = {f"{stage}.{name}": tensor for stage in ("tokenizer", "lemmatizer")
              for name, tensor in model.get(stage, {}).get("weights", {}).items()}
    for name, tensor in {**model.get("weights", {}), **stages}.items():  # of the types of FIELDS
        if tensor.is_floating_point() and not bool(tensor.isfinite().all()):
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
    (:func:`kgparser.io.atomic.atomic_path`).  torch reports a full disk as a
    RuntimeError from its zip writer, which says nothing of disk space, so the
    free space is checked to name the cause."""
    with atomic_path(path) as temporary:
        try:
            torch.save(data, temporary)
        except RuntimeError as error:
            if shutil.disk_usage(temporary.parent).free < _FULL_DISK_MARGIN:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)) from error
            raise WriteError(f"cannot write {path}: {error}") from error
