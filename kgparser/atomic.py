"""Writing files so that nothing is ever left half-written.

Every file kgparser writes (parse and projectivize output, configs, metrics,
checkpoints, reports) goes through :func:`atomic_path` or :func:`atomic_open`:
the content is written to a temporary file in the target's folder
(``.NAME.PID.tmp``), flushed to disk, and renamed over the target only when
it is complete.  A failure (full disk, kill, exception) leaves the previous
file as it was; a temporary file left by a killed process is removed by
:func:`remove_stale_temporaries` on the next start.  Rename is atomic on
POSIX file systems when source and target share a folder, which is why the
temporary file is made next to the target and never in ``/tmp``.
"""
from __future__ import annotations

import errno
import glob
import gzip
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from .errors import KgparserError

_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.tmp$")


class WriteError(KgparserError):
    """A file could not be written (the previous content, if any, is intact)."""


def temporary_name(path: Path) -> Path:
    """``folder/.NAME.PID.tmp``: the temporary file of ``path`` for this process."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def os_error_message(path: str | Path, error: OSError) -> str:
    """``PATH: CAUSE`` for an operating-system error, in words a user acts on."""
    cause = {
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EROFS: "read-only file system",
        errno.ENOENT: "no such file or folder",
        errno.EISDIR: "is a folder, not a file",
        errno.ENOTDIR: "a part of the path is a file, not a folder",
    }.get(error.errno, error.strerror or str(error))
    return f"{path}: {cause}"


def _check_target(path: Path) -> None:
    if path.is_dir():
        raise WriteError(f"{path}: is a folder, not a file")
    parent = path.parent
    if not parent.exists():
        raise WriteError(f"{path}: the folder {parent} does not exist")
    if not parent.is_dir():
        raise WriteError(f"{path}: {parent} is a file, not a folder")


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path to write ``path``'s new content to; on a clean exit it
    replaces ``path`` in one rename, on any error it is removed and ``path``
    is left as it was.  Operating-system errors become :class:`WriteError`."""
    path = Path(path)
    _check_target(path)
    remove_stale_temporaries(path.parent, of=path.name)
    temporary = temporary_name(path)
    try:
        yield temporary
        _fsync(temporary)
        os.replace(temporary, path)
    except OSError as error:
        raise WriteError(f"cannot write {os_error_message(path, error)}; "
                         f"{'the previous file is unchanged' if path.exists() else 'nothing was written'}") from error
    finally:
        temporary.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


@contextmanager
def atomic_open(path: str | Path, *, compress: bool | None = None) -> Iterator[IO[str]]:
    """A text handle (UTF-8, ``\\n`` line ends) whose content replaces ``path``
    atomically when the block ends without an error; gzip-compressed when
    ``compress`` is true, or by default when ``path`` ends in ``.gz``."""
    path = Path(path)
    compress = path.suffix == ".gz" if compress is None else compress
    with atomic_path(path) as temporary:
        opener = gzip.open if compress else open
        with opener(temporary, "wt", encoding="utf-8", newline="\n") as handle:
            yield handle


def write_text(path: str | Path, text: str) -> None:
    """Replace ``path``'s content with ``text`` atomically."""
    with atomic_open(path, compress=False) as handle:
        handle.write(text)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def remove_stale_temporaries(folder: str | Path, of: str | None = None) -> list[Path]:
    """Remove the temporary files in ``folder`` (only those of the file named
    ``of``, if given) left by processes that no longer run (killed while
    writing); returns the removed paths."""
    folder = Path(folder)
    removed = []
    if not folder.is_dir():
        return removed
    for entry in folder.glob(f".{glob.escape(of)}.*.tmp" if of else ".*.tmp"):
        match = _TEMPORARY.match(entry.name)
        if match and (of is None or match["name"] == of) and entry.is_file() and not _alive(int(match["pid"])):
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed
