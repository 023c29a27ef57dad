"""Reading constraints from the CoNLL-U MISC column (keys: the docstring
of :mod:`kgparser.constraints`)."""
from __future__ import annotations

from typing import Mapping, Sequence

from .records import FREE, OUTSIDE_OPTIONS, ConstraintError
from .sentence import Constraints


def constraints_from_misc(misc: Sequence, where: str = "sentence") -> Constraints:
    """Constraints from the MISC column of words ``1..n`` (``misc[0]`` is word 1):
    each entry a ``"Key=Value|..."`` string, a dict (as the ``conllu`` package
    gives) or ``None``/``"_"``."""
    arcs, spans, open_span = [], [], None
    for word, entry in enumerate(misc, 1):
        fields = _misc_fields(entry)
        at = f"{where}, word {word}"
        if "Head" in fields:
            head = fields["Head"]
            if not head.isdigit():
                raise ConstraintError(f"{at}: Head={head!r} is not a word number")
            arcs.append((int(head), word, fields.get("HeadLabel")))
        elif "HeadLabel" in fields:
            raise ConstraintError(f"{at}: HeadLabel needs Head on the same word")
        tag = fields.get("Span")
        outside = fields.get("SpanOutside", FREE)
        if outside not in OUTSIDE_OPTIONS:
            raise ConstraintError(f"{at}: SpanOutside={outside!r}, expected one of {OUTSIDE_OPTIONS}")
        if tag is None:
            if open_span is not None:
                raise ConstraintError(f"{at}: span opened at word {open_span[0]} is not closed (Span=E)")
            continue
        if tag in ("B", "S"):
            if open_span is not None:
                raise ConstraintError(f"{at}: Span={tag} inside the span opened at word {open_span[0]}")
            open_span = (word, outside)
        elif tag not in ("I", "E"):
            raise ConstraintError(f"{at}: Span={tag!r}, expected B, I, E or S")
        elif open_span is None:
            raise ConstraintError(f"{at}: Span={tag} without a Span=B before it")
        if tag in ("E", "S"):
            spans.append((open_span[0], word, open_span[1]))
            open_span = None
    if open_span is not None:
        raise ConstraintError(f"{where}: span opened at word {open_span[0]} is not closed (Span=E)")
    return Constraints(arcs, spans, where=where)


def _misc_fields(entry) -> dict[str, str]:
    if entry is None or entry == "_":
        return {}
    if isinstance(entry, Mapping):
        return {k: "" if v is None else str(v) for k, v in entry.items()}
    fields = {}
    for item in str(entry).split("|"):
        key, sep, value = item.partition("=")
        if sep:
            fields[key] = value
    return fields
