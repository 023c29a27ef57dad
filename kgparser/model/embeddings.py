"""Reading pretrained word vectors: the word2vec / GloVe / fastText text format,
or the vectors table of a spaCy model folder.

Text: one word per line followed by its vector components, separated by
spaces; an optional first line ``COUNT DIM`` (word2vec, fastText ``.vec``);
gzip compressed when the file name ends in ``.gz``.  A spaCy model (or its
``vocab``) folder: ``vocab/vectors`` (a NumPy table), ``vocab/key2row`` (msgpack:
string hash -> row) and ``vocab/strings.json``; read without spaCy.  See
``embeddings/README.md``.
"""
from __future__ import annotations

import gzip
import json
import struct
from collections import Counter
from pathlib import Path
from typing import Collection, Iterator

import numpy as np

from ..errors import KgparserError
from .vocab import normalize_form


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
    """Words and a ``[words, dim]`` float32 matrix from a text vectors file, or
    from a spaCy model folder (:func:`read_spacy_vectors`) when ``path`` is one.

    Keeps every word in ``wanted`` (compared as written and as
    :func:`~kgparser.model.vocab.normalize_form` gives it) plus the first
    ``max_extra_words`` other words of the file (files list frequent words first).
    The first occurrence of a word wins.
    """
    path = Path(path)
    wanted = set(wanted) | {normalize_form(w) for w in wanted}
    if path.is_dir():
        return read_spacy_vectors(path, wanted, max_extra_words)
    return _read_text_vectors(path, wanted, max_extra_words)


def _read_text_vectors(path: Path, wanted: set[str], max_extra_words: int) -> tuple[list[str], np.ndarray]:
    """:func:`read_vectors` for a text file (``wanted`` already holds the normalized forms)."""
    words: list[str] = []
    rows: list[np.ndarray] = []
    seen: set[str] = set()
    extra = 0
    lines = _TextVectorLines(path)
    for number, word, fields in lines:
        if word in seen:
            continue
        keep = word in wanted
        if not keep and extra < max_extra_words:
            keep = True
            extra += 1
        if not keep:
            continue
        rows.append(_vector(fields, path, number, word))
        words.append(word)
        seen.add(word)
    if lines.dim is None:
        raise EmbeddingsError(f"{path}: no vectors found")
    matrix = np.stack(rows) if rows else np.zeros((0, lines.dim), dtype=np.float32)
    return words, matrix


class _TextVectorLines:
    """The vector lines of a text vectors file, as ``(line number, word, vector
    fields)``, and ``dim``, the length of the vectors: the header's, else the
    first vector line's (None until one of them is read)."""

    def __init__(self, path: Path):
        self.path = path
        self.dim: int | None = None

    def __iter__(self) -> Iterator[tuple[int, str, list[str]]]:
        path = self.path
        try:
            handle = _open(path)
        except OSError as exc:
            raise EmbeddingsError(f"{path}: cannot read pretrained vectors: {exc.strerror or exc}") from None
        with handle:
            for number, line in enumerate(handle, 1):
                parts = line.rstrip("\n\r").rstrip(" ").split(" ")
                if number == 1 and _is_header(parts):
                    self.dim = int(parts[1])
                    continue
                if len(parts) < 2 or not line.strip():
                    continue
                if self.dim is None:
                    self.dim = len(parts) - 1
                if len(parts) - 1 < self.dim:
                    raise EmbeddingsError(f"{path}, line {number}: expected {self.dim} numbers after the word, "
                                          f"found {len(parts) - 1}")
                # a few GloVe files have words containing spaces: the vector is the last dim fields
                split = len(parts) - self.dim
                yield number, " ".join(parts[:split]), parts[split:]


def _vector(fields: list[str], path: Path, number: int, word: str) -> np.ndarray:
    """The float32 vector of ``word`` (line ``number`` of ``path``) from its fields."""
    try:
        return np.asarray(fields, dtype=np.float32)
    except ValueError:
        raise EmbeddingsError(f"{path}, line {number}: the vector of {word!r} is not numeric") from None


_MURMUR_M = 0xC6A4A7935BD1E995
_MASK64 = (1 << 64) - 1


def spacy_hash(text: str) -> int:
    """spaCy's key of a string: MurmurHash64A of its UTF-8 bytes with seed 1."""
    data = text.encode("utf-8")
    h = (1 ^ len(data) * _MURMUR_M) & _MASK64
    whole = len(data) // 8 * 8
    for k in struct.unpack_from(f"<{whole // 8}Q", data):
        k = k * _MURMUR_M & _MASK64
        k = (k ^ k >> 47) * _MURMUR_M & _MASK64
        h = (h ^ k) * _MURMUR_M & _MASK64
    if whole < len(data):
        h = (h ^ int.from_bytes(data[whole:], "little")) * _MURMUR_M & _MASK64
    h = (h ^ h >> 47) * _MURMUR_M & _MASK64
    return h ^ h >> 47


_MSGPACK_UINT = {tag: struct.Struct(fmt) for tag, fmt in ((0xCC, ">B"), (0xCD, ">H"), (0xCE, ">I"), (0xCF, ">Q"))}


def _msgpack_uint_map(data: bytes) -> dict[int, int]:
    """A msgpack map whose keys and values are unsigned integers (spaCy's ``key2row``)."""
    kind = data[0] if data else None
    if kind is not None and 0x80 <= kind <= 0x8F:
        count, pos = kind & 0x0F, 1
    elif kind in (0xDE, 0xDF):
        fmt = ">H" if kind == 0xDE else ">I"
        count, pos = struct.unpack_from(fmt, data, 1)[0], 1 + struct.calcsize(fmt)
    else:
        raise ValueError("not a msgpack map")
    numbers = []
    for _ in range(2 * count):
        tag = data[pos]
        if tag < 0x80:
            numbers.append(tag)
            pos += 1
        elif tag in _MSGPACK_UINT:
            reader = _MSGPACK_UINT[tag]
            numbers.append(reader.unpack_from(data, pos + 1)[0])
            pos += 1 + reader.size
        else:
            raise ValueError(f"not an unsigned integer at byte {pos}")
    return dict(zip(numbers[::2], numbers[1::2]))


def _spacy_vocab_folder(path: Path) -> Path:
    """The folder holding the ``vectors`` table: ``path/vocab`` or ``path`` itself."""
    for folder in (path / "vocab", path):
        if (folder / "vectors").is_file():
            return folder
    raise EmbeddingsError(f"{path}: a folder, but not a spaCy model or vocab folder (no vocab/vectors)")


def _extra_words(candidates: list[str], count: int) -> list[str]:
    """The ``count`` words offered beyond the wanted ones.  spaCy's tables hold no
    frequencies, so: lower-case forms first (the lookup reaches every case
    variant through them), those with more case variants in the table first
    (common words come in several casings), then shorter ones."""
    norms = {word: normalize_form(word) for word in candidates}
    variants = Counter(norms.values())
    return sorted(candidates, key=lambda w: (w != norms[w], -variants[norms[w]], len(w), w))[:count]


def read_spacy_vectors(path: Path, wanted: set[str], max_extra_words: int) -> tuple[list[str], np.ndarray]:
    """:func:`read_vectors` for a spaCy model folder (``default`` vectors mode):
    the words of ``wanted`` that have a row, then up to ``max_extra_words`` others."""
    folder = _spacy_vocab_folder(path)
    try:
        cfg = folder / "vectors.cfg"
        mode = json.loads(cfg.read_text(encoding="utf-8")).get("mode", "default") if cfg.is_file() else "default"
        if mode != "default":
            raise EmbeddingsError(f"{path}: spaCy vectors of mode {mode!r}; only 'default' tables are read")
        table = np.load(folder / "vectors", allow_pickle=False)
        key2row = _msgpack_uint_map((folder / "key2row").read_bytes())
        strings = json.loads((folder / "strings.json").read_text(encoding="utf-8")) if max_extra_words else []
    except (OSError, ValueError, struct.error, IndexError) as exc:
        raise EmbeddingsError(f"{path}: cannot read the spaCy vectors: {getattr(exc, 'strerror', None) or exc}"
                              ) from None
    if table.ndim != 2 or (key2row and max(key2row.values()) >= len(table)):
        raise EmbeddingsError(f"{path}: vocab/key2row and vocab/vectors ({table.shape}) disagree")
    rows = {word: key2row[key] for word in sorted(wanted) if (key := spacy_hash(word)) in key2row}
    others = {word: key2row[key] for word in strings if word not in rows and (key := spacy_hash(word)) in key2row}
    rows.update((word, others[word]) for word in _extra_words(list(others), max_extra_words))
    return list(rows), table[list(rows.values())].astype(np.float32).reshape(len(rows), table.shape[1])


def lookup_id(index: dict[str, int], form: str, unknown: int) -> int:
    """Row of ``form`` in a pretrained vocabulary: by form, then by normalized form."""
    found = index.get(form)
    if found is None:
        found = index.get(normalize_form(form), unknown)
    return found
