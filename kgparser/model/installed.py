"""Finding a model by its path or by the name of an installed model package:
the one place that resolves the model ``Parser.load``, ``kgparser parse
--model`` and the spaCy components' ``model`` setting name.

A model package (``kgparser package``) declares an entry point in the group
:data:`ENTRY_POINTS`: its name is the model's name, its object the path of
the checkpoint, beside which the record :data:`RECORD` says what else the
model needs (its encoder: :mod:`kgparser.model.packaged_encoder`).  A ``Path``, a
string with a path separator and a string naming something that exists are
paths (a missing file is then the loader's error; a record beside the
checkpoint is read as a package's is: a spaCy pipeline saved with a packaged
model keeps it there); any other string is a name, compared as pip compares
project names (letter case, ``-``, ``_`` and ``.`` alike).  Reading the entry points takes a few hundredths of a second,
and only for a name.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from ..errors import KgparserError
from .packaged_encoder import packaged_encoder

#: the entry-point group of model packages: model name -> the checkpoint's path
ENTRY_POINTS = "kgparser.models"
#: the record beside a packaged checkpoint: name, version, encoder (JSON)
RECORD = "model.json"
#: the record's ``format``
RECORD_FORMAT = "kgparser-model-package"


class ModelNotFound(KgparserError):
    """No checkpoint at the path and no installed model of the name, or an installed model that cannot be read."""


@dataclass(frozen=True)
class ModelFiles:
    """Where a model is: its ``checkpoint`` and, for an installed model package,
    its ``record`` (None for a checkpoint given by its path)."""

    checkpoint: Path
    record: dict[str, Any] | None = None

    def encoder(self) -> Path | None:
        """The folder of the encoder the record names, made ready first
        (:func:`kgparser.model.packaged_encoder.packaged_encoder`); None without one."""
        if self.record is None or self.record.get("encoder") is None:
            return None
        return packaged_encoder(self.record["encoder"], str(self.record.get("name")))


def resolve_model(model: str | Path) -> ModelFiles:
    """``model`` as a path (see the module's docstring), else the installed model
    package of that name; an unknown name is one line listing the installed models."""
    if isinstance(model, Path) or Path(model).exists() or _has_separator(model):
        return ModelFiles(Path(model), _record_beside(Path(model)))
    entry = _entry_point(str(model))
    if entry is None:
        raise ModelNotFound(f"{model}: no such checkpoint file, nor an installed model of that name; "
                            f"{installed_line()}")
    return _installed(entry)


def _record_beside(checkpoint: Path) -> dict[str, Any] | None:
    """The package record beside a checkpoint given by its path, if there is one."""
    try:
        record = json.loads(checkpoint.with_name(RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("format") == RECORD_FORMAT else None


def installed_models() -> list[str]:
    """The names of the installed model packages, sorted."""
    return sorted({entry.name for entry in entry_points(group=ENTRY_POINTS)})


def installed_line() -> str:
    """``installed models: A, B``, or what to do where there are none."""
    names = installed_models()
    if not names:
        return "no model package is installed (kgparser package RUN_DIR OUT_DIR makes one)"
    return f"installed models: {', '.join(names)}"


def canonical_name(name: str) -> str:
    """``name`` as pip compares project names (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _has_separator(text: str) -> bool:
    """Whether ``text`` holds a path separator (so it is a path, not a name)."""
    return any(separator and separator in text for separator in (os.sep, os.altsep))


def _entry_point(name: str) -> EntryPoint | None:
    """The first entry point of :data:`ENTRY_POINTS` named ``name`` (canonically)."""
    wanted = canonical_name(name)
    return next((entry for entry in entry_points(group=ENTRY_POINTS) if canonical_name(entry.name) == wanted), None)


def _installed(entry: EntryPoint) -> ModelFiles:
    """The checkpoint and record of an installed model package."""
    try:
        checkpoint = Path(entry.load())
        record = json.loads(checkpoint.with_name(RECORD).read_text(encoding="utf-8"))
    except (ImportError, AttributeError, TypeError, OSError, ValueError) as error:
        raise ModelNotFound(f"installed model {entry.name} ({entry.value}): cannot be read "
                            f"({type(error).__name__}: {error}); install its package again") from None
    if not isinstance(record, dict):
        raise ModelNotFound(f"installed model {entry.name}: {checkpoint.with_name(RECORD)}: not a model record; "
                            f"install its package again")
    return ModelFiles(checkpoint, record)
