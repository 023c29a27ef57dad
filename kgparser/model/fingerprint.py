"""The fingerprint of an encoder's folder: sha256 over the names and bytes of
its configuration, tokenizer and weight files, which a checkpoint keeps to
refuse another encoder than the one it was trained with.

Hashing half a gigabyte of weights takes 0.2-0.5 s at every start (more from
a cold disk: the file is read in full), so the result is remembered: a small
JSON file per folder in the user's cache (``$XDG_CACHE_HOME/kgparser/
fingerprints``, else ``~/.cache/kgparser/fingerprints``:
:mod:`kgparser.io.cache`) holding the fingerprint and, for each file it
covers, the name, size, modification time, inode and status-change time.
It is used only while every one of those is unchanged and the folder has the
same files; otherwise the files are hashed again.  Where the cache cannot be
written, every start hashes.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import KgparserError
from ..io.atomic import write_text
from ..io.cache import cache_folder

#: the files that make an encoder what it is (besides the weights)
DESCRIPTION_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                     "added_tokens.json", "vocab.txt", "vocab.json", "merges.txt", "*.model")
#: the weights transformers loads: safetensors where there are any, else the PyTorch ``.bin`` files
WEIGHT_FILES = (("*.safetensors", "*.safetensors.index.json"), ("pytorch_model*.bin", "pytorch_model*.bin.index.json"))
#: the layout of a cache file; another is not read
CACHE_VERSION = 1


def fingerprint(folder: Path) -> str:
    """sha256 over the names and bytes of a model folder's configuration,
    tokenizer and weight files (the weights transformers loads: safetensors
    where there are any, else the PyTorch ``.bin`` files); from the cache
    where the files are unchanged since it was computed."""
    files = fingerprinted_files(folder)
    stamps = _stamps(files)
    record = _cache_file(folder)
    cached = _read_cache(record, folder, stamps)
    if cached is not None:
        return cached
    digest = hashed(files)
    if _stamps(files) == stamps:  # not changed while it was read
        _write_cache(record, folder, stamps, digest)
    return digest


def fingerprinted_files(folder: Path) -> list[Path]:
    """The files :func:`fingerprint` covers, sorted."""
    files = [p for pattern in DESCRIPTION_FILES for p in folder.glob(pattern)]
    for patterns in WEIGHT_FILES:
        weights = [p for pattern in patterns for p in folder.glob(pattern)]
        if weights:
            files += weights
            break
    return sorted(set(files))


def hashed(files: list[Path]) -> str:
    """sha256 over each file's name, a zero byte and its bytes, in order."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()


def _stamps(files: list[Path]) -> list[list]:
    """What says a file is unchanged: name, size, modification time, inode,
    status-change time (which no program can set back), of the file a link
    points to."""
    stamps = []
    for path in files:
        status = path.stat()
        stamps.append([path.name, status.st_size, status.st_mtime_ns, status.st_ino, status.st_ctime_ns])
    return stamps


def _cache_file(folder: Path) -> Path:
    """The cache file of ``folder``, named by a hash of its absolute path."""
    name = hashlib.sha256(str(folder.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return cache_folder("fingerprints") / f"{name}.json"


def _read_cache(record: Path, folder: Path, stamps: list[list]) -> str | None:
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return None
    if data.get("folder") != str(folder.resolve()) or data.get("files") != stamps:
        return None
    digest = data.get("fingerprint")
    return digest if isinstance(digest, str) and len(digest) == 64 else None


def _write_cache(record: Path, folder: Path, stamps: list[list], digest: str) -> None:
    """Remember ``digest`` for these stamps, atomically; nothing where the cache cannot be written."""
    text = json.dumps({"version": CACHE_VERSION, "folder": str(folder.resolve()), "files": stamps,
                       "fingerprint": digest})
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        write_text(record, text + "\n")
    except (OSError, KgparserError):
        pass
