"""The token-embedding table of a Hugging Face model folder, read in place from
its safetensors weights: all that ``model.encoder.layers: 0`` looks up.

A multilingual table is most of its model (366 of multilingual-e5-small's
448 MB), and a parse reads only the rows of the pieces its words have, so the
table is memory-mapped: loading costs no time, and the process holds the pages
of the rows it reads rather than the whole model (BENCHMARKS.md, "Pretrained
knowledge").  The safetensors layout (an 8-byte little-endian header length, a
JSON header giving each tensor's dtype, shape and byte range, then the data)
is read directly, so the rows are exactly those transformers would load.

A weight file whose header does not describe the file (truncated by a full
disk or an interrupted copy, or not safetensors at all) raises
:class:`DamagedWeights` naming the file, as :func:`check_weights` does for a
folder whose weights transformers could not read.
"""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import torch

#: safetensors dtypes numpy can map (bfloat16 is mapped as its bits and widened by torch)
_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


class DamagedWeights(Exception):
    """A safetensors weight file (or its shard index) that is not what its header says."""


class TokenTable:
    """A lookup of rows of a memory-mapped ``[vocabulary, dim]`` table, returned
    as float32 tensors on the device of the ids."""

    def __init__(self, rows: np.ndarray, bfloat16: bool):
        self.rows = rows
        self.bfloat16 = bfloat16
        self.embedding_dim = rows.shape[1]

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        picked = torch.from_numpy(np.ascontiguousarray(self.rows[ids.cpu().numpy()]))
        if self.bfloat16:
            picked = picked.view(torch.bfloat16)
        return picked.float().to(ids.device)

    def to(self, device) -> TokenTable:
        """Nothing to move: rows go to the device of the ids they are looked up with."""
        return self


def token_table(folder: Path, vocabulary_size: int) -> TokenTable | None:
    """The input-embedding table of the model in ``folder``, memory-mapped from
    its safetensors weights; None where they have no single such table in a
    mappable type (the caller then loads the model)."""
    for path in _weight_files(folder):
        start, entries = _header(path)
        key = _table_key(entries, vocabulary_size)
        if key is not None:
            return _mapped(path, start, entries[key])
    return None


def check_weights(folder: Path) -> None:
    """Raise :class:`DamagedWeights` for the first safetensors weight file of
    ``folder`` whose header does not describe the file."""
    for path in _weight_files(folder):
        _header(path)


def _weight_files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise _damaged(index, f"not a shard index: {error}") from None
        return [folder / shard for shard in sorted(set(shards))]
    return [folder / "model.safetensors"] if (folder / "model.safetensors").is_file() else []


def _table_key(entries: dict, vocabulary_size: int) -> str | None:
    """The tensor with a row per vocabulary entry (an embedding's name breaking a
    tie with an output layer of the same shape), found in the header rather than
    through the model's class, whose import alone takes seconds."""
    tables = [key for key, entry in entries.items()
              if key != "__metadata__" and len(entry["shape"]) == 2 and entry["shape"][0] == vocabulary_size]
    if len(tables) > 1:
        tables = [key for key in tables if "embed" in key]
    return tables[0] if len(tables) == 1 else None


def _header(path: Path) -> tuple[int, dict]:
    """The byte where the data starts, and the header's tensor entries, checked
    as safetensors checks them: the tensors' byte ranges cover the data that
    follows the header exactly."""
    with open(path, "rb") as handle:
        file_size = os.fstat(handle.fileno()).st_size
        if file_size < 8:
            raise _damaged(path, f"{file_size} bytes, not even a header length")
        (size,) = struct.unpack("<Q", handle.read(8))
        if size > file_size - 8:
            raise _damaged(path, f"a header of {size} bytes in a file of {file_size}")
        try:
            entries = json.loads(handle.read(size))
        except ValueError as error:  # JSON or UTF-8
            raise _damaged(path, f"unreadable header: {error}") from None
    _check_ranges(path, entries, file_size - 8 - size)
    return 8 + size, entries


def _check_ranges(path: Path, entries, data_size: int) -> None:
    """The tensors' byte ranges must be well formed and tile ``[0, data_size)``."""
    if not isinstance(entries, dict):
        raise _damaged(path, "the header is not a JSON object")
    ranges = []
    for key, entry in entries.items():
        if key == "__metadata__":
            continue
        if not _well_formed(entry):
            raise _damaged(path, f"the header's entry of {key} is malformed")
        ranges.append((*entry["data_offsets"], key))
    end = 0
    for begin, stop, key in sorted(ranges):
        if begin != end or stop < begin:
            raise _damaged(path, f"the bytes of {key} do not follow those of the tensor before it")
        end = stop
    if end != data_size:
        raise _damaged(path, f"the header describes {end} bytes of tensors, {data_size} follow it")


def _well_formed(entry) -> bool:
    """Whether a header entry has a dtype name, a shape and two byte offsets."""
    if not isinstance(entry, dict):
        return False
    offsets, shape = entry.get("data_offsets"), entry.get("shape")
    return (isinstance(entry.get("dtype"), str) and isinstance(shape, list)
            and all(isinstance(n, int) and n >= 0 for n in shape)
            and isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(n, int) for n in offsets))


def _damaged(path: Path, reason: str) -> DamagedWeights:
    return DamagedWeights(f"{path}: damaged or truncated weight file ({reason}); "
                          f"copy, convert or download the encoder again")


def _mapped(path: Path, start: int, entry: dict) -> TokenTable | None:
    dtype = _DTYPES.get(entry["dtype"])
    if dtype is None:
        return None
    begin, end = entry["data_offsets"]
    if end - begin != np.dtype(dtype).itemsize * int(np.prod(entry["shape"])):
        raise _damaged(path, f"{end - begin} bytes for a {entry['dtype']} table of shape {entry['shape']}")
    rows = np.memmap(path, dtype=dtype, mode="r", offset=start + begin, shape=tuple(entry["shape"]))
    return TokenTable(rows, bfloat16=entry["dtype"] == "BF16")
