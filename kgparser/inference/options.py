"""Checks of the parse options that :class:`~kgparser.inference.parser.Parser`
and the spaCy component take, so that a bad value is one line before
anything is parsed rather than an error deep in the first parse (or in a
worker process); torch-free, so the component checks its config before it
loads torch."""
from __future__ import annotations

from ..errors import KgparserError
from .tree_repair import ROOT_CHOICES


def checked_batch_size(value) -> int:
    """``value`` if it is a whole number >= 1 (sentences per batch), else a one-line error."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise KgparserError(f"batch_size: must be a whole number >= 1, got {value!r}")
    return value


def checked_root_choice(value: str | None) -> str | None:
    """``value`` if it is None (the model's choice) or one of the root choices, else a one-line error."""
    if value is not None and value not in ROOT_CHOICES:
        raise KgparserError(f"root_choice: expected one of {', '.join(ROOT_CHOICES)}, got {value!r}")
    return value
