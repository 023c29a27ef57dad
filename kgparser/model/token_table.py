"""The token-embedding table of a Hugging Face model folder, read in place from
its safetensors weights: all that ``model.encoder.layers: 0`` looks up.

A multilingual table is most of its model (366 of multilingual-e5-small's
448 MB), and a parse reads only the rows of the pieces its words have, so the
table is memory-mapped: loading costs no time, and the process holds the pages
of the rows it reads rather than the whole model (BENCHMARKS.md, "Pretrained
knowledge").  The safetensors layout (an 8-byte little-endian header length, a
JSON header giving each tensor's dtype, shape and byte range, then the data)
is read directly, so the rows are exactly those transformers would load.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import torch

#: safetensors dtypes numpy can map (bfloat16 is mapped as its bits and widened by torch)
_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


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

    def to(self, device) -> "TokenTable":
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


def _weight_files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        shards = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {}).values()
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
    """The byte where the data starts, and the header's tensor entries."""
    with open(path, "rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        return 8 + size, json.loads(handle.read(size))


def _mapped(path: Path, start: int, entry: dict) -> TokenTable | None:
    dtype = _DTYPES.get(entry["dtype"])
    if dtype is None:
        return None
    begin, _ = entry["data_offsets"]
    rows = np.memmap(path, dtype=dtype, mode="r", offset=start + begin, shape=tuple(entry["shape"]))
    return TokenTable(rows, bfloat16=entry["dtype"] == "BF16")
