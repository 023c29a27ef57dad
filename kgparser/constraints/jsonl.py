"""Reading constraints from a JSON-lines side file and finding the record
of a sentence (format: the docstring of :mod:`kgparser.constraints`)."""
from __future__ import annotations

import json
from typing import Mapping

from ..io.yaml_text import read_text_file
from .records import ConstraintError
from .sentence import Constraints, is_int


class ConstraintTable(dict):
    """The records of a side file by ``sent_id`` (str) or ``index`` (int); a
    record that gives both is kept under its sent_id and pinned to its index
    (``pins``: index -> sent_id; ``pinned_at``: sent_id -> index)."""

    def __init__(self) -> None:
        super().__init__()
        self.pins: dict[int, str] = {}
        self.pinned_at: dict[str, int] = {}

    def add(self, keys: list, constraints: Constraints) -> None:
        self[keys[0]] = constraints
        if len(keys) == 2:
            sent_id, index = keys
            self.pins[index], self.pinned_at[sent_id] = sent_id, index


def read_constraints_jsonl(path: str) -> ConstraintTable:
    """Constraints from a JSON-lines side file (UTF-8), keyed by ``sent_id`` or
    ``index``; see the docstring of :mod:`kgparser.constraints` for the
    format.  Two records for one sent_id or one index are an error."""
    table = ConstraintTable()
    first_line: dict[str | int, int] = {}
    for number, line in enumerate(read_text_file(path, ConstraintError, "constraints file").split("\n"), 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        keys, constraints = _record_constraints(_json_record(line, where), where)
        for key in keys:
            if key in first_line:
                raise ConstraintError(f"{where}: a second record for {_key_name(key)} "
                                      f"(the first is on line {first_line[key]})")
            first_line[key] = number
        table.add(keys, constraints)
    return table


def _json_record(line: str, where: str):
    try:
        return json.loads(line)
    except json.JSONDecodeError as err:
        problem = f"{err.msg} at column {err.colno}"
    except ValueError as err:  # an integer of over 4300 digits
        problem = str(err).partition(";")[0]
    except RecursionError:
        problem = "nested too deeply"
    raise ConstraintError(f"{where}: not valid JSON ({problem})")


def _key_name(key) -> str:
    return f"sent_id {key!r}" if isinstance(key, str) else f"index {key}"


def _record_constraints(record, where: str) -> tuple[list, Constraints]:
    """The keys (sent_id and/or index, in this order) and the constraints of a record."""
    if not isinstance(record, Mapping):
        raise ConstraintError(f"{where}: expected a JSON object, got {type(record).__name__}")
    unknown = set(record) - {"sent_id", "index", "arcs", "spans"}
    if unknown:
        raise ConstraintError(f"{where}: unknown key(s) {sorted(unknown)}; expected sent_id/index, arcs, spans")
    keys = _record_keys(record, where)
    for field in ("arcs", "spans"):
        if not isinstance(record.get(field, []), list):
            raise ConstraintError(f"{where}: '{field}' must be a list")
    return keys, Constraints(record.get("arcs", []), record.get("spans", []), where=f"{where} ({keys[0]!r})")


def _record_keys(record: Mapping, where: str) -> list:
    if "sent_id" in record and not isinstance(record["sent_id"], str):
        raise ConstraintError(f"{where}: sent_id must be a string")
    if "index" in record and (not is_int(record["index"]) or record["index"] < 0):
        raise ConstraintError(f"{where}: index must be a non-negative integer")
    keys = [record[name] for name in ("sent_id", "index") if name in record]
    if not keys:
        raise ConstraintError(f"{where}: needs 'sent_id' or 'index' to name its sentence")
    return keys


def constraints_for(table: ConstraintTable, sent_id: str | None, index: int) -> Constraints | None:
    """The side-file constraints of the sentence at ``index`` (0-based) with
    ``sent_id``: its record by sent_id or by index (one of them; a record pinned
    to another index is not for it).  A record that gives both must name this
    sentence: a :class:`ConstraintError` says what the sentence has instead."""
    if index in table.pins:
        return _pinned_record(table, sent_id, index)
    by_id = table.get(sent_id) if sent_id is not None and sent_id not in table.pinned_at else None
    by_index = table.get(index)
    if by_id is not None and by_index is not None:
        raise ConstraintError(f"{by_index.where}: a second record for the sentence at index {index}, "
                              f"besides {by_id.where} for its sent_id")
    return by_id if by_id is not None else by_index


def _pinned_record(table: ConstraintTable, sent_id: str | None, index: int) -> Constraints:
    pinned = table.pins[index]
    record = table[pinned]
    if pinned != sent_id:
        actual = "no sent_id" if sent_id is None else f"sent_id {sent_id!r}"
        raise ConstraintError(f"{record.where}: gives index {index} and sent_id {pinned!r}, but the sentence "
                              f"at index {index} has {actual}")
    return record
