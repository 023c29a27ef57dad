"""The records of single constraints: an arc, a span and the span's
outside option, and the error that malformed or unsatisfiable constraints raise."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import KgparserError

OUTSIDE_OPTIONS = ("free", "root", "none")
FREE, SPAN_ROOT_ONLY, NONE_OUTSIDE = OUTSIDE_OPTIONS


class ConstraintError(KgparserError):
    """Constraints that are malformed, inconsistent or unsatisfiable."""


@dataclass(frozen=True, slots=True)
class ArcConstraint:
    head: int
    dep: int
    label: str | None = None


@dataclass(frozen=True, slots=True)
class SpanConstraint:
    first: int
    last: int
    outside: str = FREE
