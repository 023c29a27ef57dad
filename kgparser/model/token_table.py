"""The token-embedding table of a Hugging Face model folder, read in place from
its safetensors weights: all that ``model.encoder.layers: 0`` looks up.

A multilingual table is most of its model (366 of multilingual-e5-small's
448 MB), and a parse reads only the rows of the pieces its words have, so the
table stays in its file: loading costs no time, and each lookup reads the
rows it needs (one ``pread`` per run of consecutive rows), so the process
holds no part of the table beyond the rows of the batch at hand.  (It was
memory-mapped before issue 49; but the kernel maps the cached pages around
each page a lookup touches, whatever ``madvise`` says, so the 8,238
distinct pieces of EWT dev + test, 12 MB of rows, brought some 240 MB of
e5's 384 MB table into the process: docs/history/start-up.md, "Start-up (issue 49)".)
The same reader serves the plain-torch encoder of :mod:`kgparser.model.bert`,
whose word embeddings are this table.  The safetensors layout (an 8-byte
little-endian header length, a JSON header giving each tensor's dtype, shape
and byte range, then the data) is read directly, so the rows are exactly
those transformers would load.

A weight file whose header does not describe the file (truncated by a full
disk or an interrupted copy, or not safetensors at all) raises
:class:`DamagedWeights` naming the file, as :func:`check_weights` does for a
folder whose weights transformers could not read.
"""
from __future__ import annotations

import json
import os
import struct
import threading
from pathlib import Path
from typing import IO, NamedTuple

import numpy as np
import torch

#: safetensors dtypes numpy can read (bfloat16 is read as its bits and widened by torch)
_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}


class DamagedWeights(Exception):
    """A safetensors weight file (or its shard index) that is not what its header says."""


class TokenTable:
    """A lookup of rows of a ``[vocabulary, dim]`` table read from its file
    (from byte ``start``, in safetensors' dtype ``dtype``), returned as float32
    tensors on the device of the ids."""

    def __init__(self, path: Path, start: int, shape: tuple[int, int], dtype: str):
        self.path, self.start = path, start
        self.num_embeddings, self.embedding_dim = shape
        self.dtype = np.dtype(_DTYPES[dtype])
        self.bfloat16 = dtype == "BF16"
        self.row_bytes = self.dtype.itemsize * self.embedding_dim
        self._handle: IO[bytes] | None = None
        self._lock = threading.Lock()

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        wanted, where = np.unique(ids.detach().cpu().numpy().reshape(-1), return_inverse=True)
        if wanted.size and (wanted[0] < 0 or wanted[-1] >= self.num_embeddings):
            raise IndexError(f"token ids {wanted[0]}..{wanted[-1]} outside a table of {self.num_embeddings} rows")
        rows = np.frombuffer(self._read(wanted), dtype=self.dtype).reshape(len(wanted), self.embedding_dim)
        picked = torch.from_numpy(rows[where.reshape(-1)].reshape(*ids.shape, self.embedding_dim))
        if self.bfloat16:
            picked = picked.view(torch.bfloat16)
        return picked.float().to(ids.device)

    def to(self, device) -> TokenTable:
        """Nothing to move: rows go to the device of the ids they are looked up with."""
        return self

    def _read(self, wanted: np.ndarray) -> bytes:
        """The bytes of rows ``wanted`` (sorted, distinct), in order: one read per run of consecutive rows."""
        if not wanted.size:
            return b""
        runs = np.split(wanted, np.flatnonzero(np.diff(wanted) != 1) + 1)
        return b"".join(self._read_at(self.start + int(run[0]) * self.row_bytes, len(run) * self.row_bytes)
                        for run in runs)

    def _read_at(self, offset: int, size: int) -> bytes:
        """``size`` bytes of the file from ``offset``: ``pread`` where the system has
        it (no shared file position: threads and forked workers may read at once)."""
        with self._lock:
            if self._handle is None:
                self._handle = open(self.path, "rb", buffering=0)  # noqa: SIM115 (kept for the table's life)
            if hasattr(os, "pread"):
                data = os.pread(self._handle.fileno(), size, offset)
            else:
                self._handle.seek(offset)
                data = self._handle.read(size)
        if len(data) != size:
            raise _damaged(self.path, "shorter than its header says")
        return data

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_handle": None, "_lock": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _lock=threading.Lock())


class StoredTensor(NamedTuple):
    """Where a tensor lies in a safetensors file: the file, the byte its data
    section starts at, and the header's entry (dtype, shape, byte range in the data)."""
    path: Path
    start: int
    entry: dict


def token_table(folder: Path, vocabulary_size: int) -> TokenTable | None:
    """The input-embedding table of the model in ``folder``, read in place from
    its safetensors weights; None where they have no single such table in a
    type numpy reads (the caller then loads the model)."""
    for path in _weight_files(folder):
        start, entries = _header(path)
        key = _table_key(entries, vocabulary_size)
        if key is not None:
            return file_table(StoredTensor(path, start, entries[key]))
    return None


def stored_tensors(folder: Path) -> dict[str, StoredTensor]:
    """Every tensor of the safetensors weights of ``folder`` (one file or the
    shards of an index), by name, each file's header checked; empty where
    the folder has none."""
    found: dict[str, StoredTensor] = {}
    for path in _weight_files(folder):
        start, entries = _header(path)
        found.update((key, StoredTensor(path, start, entry)) for key, entry in entries.items()
                     if key != "__metadata__")
    return found


def read_tensor(stored: StoredTensor) -> torch.Tensor | None:
    """A float32 tensor's values, read from its file (a copy; a few reads of
    the bytes it spans, nothing else of the file); None for another dtype."""
    entry = stored.entry
    if entry["dtype"] != "F32":
        return None
    begin, end = entry["data_offsets"]
    shape = tuple(entry["shape"])
    if end - begin != 4 * int(np.prod(shape)):
        raise _damaged(stored.path, f"{end - begin} bytes for a F32 tensor of shape {list(shape)}")
    values = np.fromfile(stored.path, dtype="<f4", count=(end - begin) // 4, offset=stored.start + begin)
    return torch.from_numpy(values.astype(np.float32, copy=False).reshape(shape))


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


def file_table(stored: StoredTensor) -> TokenTable | None:
    """A ``[rows, dim]`` tensor as a :class:`TokenTable` read from its file;
    None for a dtype numpy cannot read."""
    path, start, entry = stored
    dtype = _DTYPES.get(entry["dtype"])
    if dtype is None or len(entry["shape"]) != 2:
        return None
    begin, end = entry["data_offsets"]
    if end - begin != np.dtype(dtype).itemsize * int(np.prod(entry["shape"])):
        raise _damaged(path, f"{end - begin} bytes for a {entry['dtype']} table of shape {entry['shape']}")
    return TokenTable(path, start + begin, tuple(entry["shape"]), entry["dtype"])
