"""Reading pretrained word vectors in the word2vec / GloVe / fastText text format.

One word per line followed by its vector components, separated by spaces;
an optional first line ``COUNT DIM`` (word2vec, fastText ``.vec``); gzip
compressed when the file name ends in ``.gz``.  See ``embeddings/README.md``.
"""
from __future__ import annotations

import gzip
from pathlib import Path
from typing import Collection

import numpy as np

from ..errors import KgparserError
from ..vocab import normalize_form


class EmbeddingsError(KgparserError):
    """A pretrained-vectors file cannot be read."""


def _open(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _is_header(parts: list[str]) -> bool:
    return len(parts) == 2 and all(p.isdigit() for p in parts)


def read_vectors(path: str | Path, wanted: Collection[str] = (), max_extra_words: int = 0
                 ) -> tuple[list[str], np.ndarray]:
    """Words and a ``[words, dim]`` float32 matrix from a text vectors file.

    Keeps every word in ``wanted`` (compared as written and as
    :func:`~kgparser.vocab.normalize_form` gives it) plus the first
    ``max_extra_words`` other words of the file (files list frequent words first).
    The first occurrence of a word wins.
    """
    path = Path(path)
    wanted = set(wanted) | {normalize_form(w) for w in wanted}
    words: list[str] = []
    rows: list[np.ndarray] = []
    seen: set[str] = set()
    extra = 0
    dim = None
    try:
        handle = _open(path)
    except OSError as exc:
        raise EmbeddingsError(f"{path}: cannot read pretrained vectors: {exc.strerror or exc}") from None
    with handle:
        for number, line in enumerate(handle, 1):
            parts = line.rstrip("\n\r").rstrip(" ").split(" ")
            if number == 1 and _is_header(parts):
                dim = int(parts[1])
                continue
            if len(parts) < 2 or not line.strip():
                continue
            if dim is None:
                dim = len(parts) - 1
            if len(parts) - 1 < dim:
                raise EmbeddingsError(f"{path}, line {number}: expected {dim} numbers after the word, "
                                      f"found {len(parts) - 1}")
            # a few GloVe files have words containing spaces: the vector is the last dim fields
            word = " ".join(parts[: len(parts) - dim])
            if word in seen:
                continue
            keep = word in wanted
            if not keep and extra < max_extra_words:
                keep = True
                extra += 1
            if not keep:
                continue
            try:
                rows.append(np.asarray(parts[len(parts) - dim:], dtype=np.float32))
            except ValueError:
                raise EmbeddingsError(f"{path}, line {number}: the vector of {word!r} is not numeric") from None
            words.append(word)
            seen.add(word)
    if dim is None:
        raise EmbeddingsError(f"{path}: no vectors found")
    matrix = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
    return words, matrix


def lookup_id(index: dict[str, int], form: str, unknown: int) -> int:
    """Row of ``form`` in a pretrained vocabulary: by form, then by normalized form."""
    found = index.get(form)
    if found is None:
        found = index.get(normalize_form(form), unknown)
    return found
