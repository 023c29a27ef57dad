"""Checks of the parse options that :class:`~kgparser.inference.parser.Parser`
and the spaCy component take at construction, so that a bad value is one
line there rather than an error deep in the first parse; torch-free, so the
component checks its config before it loads torch."""
from __future__ import annotations

from ..errors import KgparserError


def checked_batch_size(value) -> int:
    """``value`` if it is a whole number >= 1 (sentences per batch), else a one-line error."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise KgparserError(f"batch_size: must be a whole number >= 1, got {value!r}")
    return value
