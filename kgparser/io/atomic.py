"""Writing files so that nothing is ever left half-written, and nothing but
the target is ever replaced.

Every file kgparser writes (parse and projectivize output, configs, metrics,
checkpoints, reports) goes through :func:`atomic_path` or :func:`atomic_open`,
which first decide what the path names (:func:`output_target`):

* a regular file, or a path where nothing is yet: the content is written to a
  temporary file in the target's folder (``.NAME.PID.tmp``), flushed to disk,
  given the permission bits of the file it replaces, and renamed over the
  target only when it is complete.  A failure (full disk, kill, exception)
  leaves the previous file as it was; a temporary file left by a killed
  process is removed by :func:`remove_stale_temporaries` on the next start.
  Rename is atomic on POSIX file systems when source and target share a
  folder, which is why the temporary file is made next to the target and
  never in ``/tmp``;
* a symbolic link: the same, for the file it points to (the link stays);
* anything else that exists (a character or block device such as
  ``/dev/null``, a FIFO, a socket) and standard output under any of its names
  (``-``, ``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``, as a shell's
  ``>(cmd)`` gives): a stream, opened and written to as it goes, never
  replaced.

A folder written whole (a converted encoder) is written into a temporary
folder beside it and renamed into place when complete (:func:`staged_folder`),
so that it is never a mix of old and new files; :func:`remove_stale_folders`
cleans up after a killed run.
"""
from __future__ import annotations

import errno
import glob
import gzip
import os
import re
import shutil
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from ..errors import KgparserError

_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.tmp$")
#: names of an open file descriptor of this process
_DESCRIPTOR = re.compile(r"^/(?:dev|proc/self)/fd/(?P<fd>\d+)$")
_STANDARD = {"-": 1, "/dev/stdout": 1, "/dev/stderr": 2}


#: how messages name standard output
STANDARD_OUTPUT = "standard output"


class WriteError(KgparserError):
    """A file could not be written (the previous content, if any, is intact);
    ``stream``: the stream's name, where it was one."""

    def __init__(self, message: str, stream: str | None = None):
        super().__init__(message)
        self.stream = stream


@dataclass(frozen=True)
class OutputTarget:
    """Where an output goes: ``path`` (a symbolic link's target, resolved), and
    whether it is a ``stream`` (written as it goes) or a file (replaced
    atomically); ``descriptor`` is set for a stream that names one of this
    process's open files."""

    path: Path
    stream: bool = False
    descriptor: int | None = None


def output_target(path: str | Path) -> OutputTarget:
    """What writing to ``path`` means (see the module's docstring)."""
    text = str(path)
    named = _DESCRIPTOR.match(text)
    if text in _STANDARD:
        return OutputTarget(Path(text), stream=True, descriptor=_STANDARD[text])
    if named:
        return OutputTarget(Path(text), stream=True, descriptor=int(named["fd"]))
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError:  # nothing there yet, or a link to nothing: a new file
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        return OutputTarget(path, stream=True)
    return OutputTarget(Path(os.path.realpath(path)) if path.is_symlink() else path)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether the paths name one existing regular file (any spelling, any link)."""
    try:
        first, second = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return False
    return stat.S_ISREG(first.st_mode) and (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def temporary_name(path: Path) -> Path:
    """``folder/.NAME.PID.tmp``: the temporary file of ``path`` for this process."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def os_error_message(path: str | Path, error: OSError) -> str:
    """``PATH: CAUSE`` for an operating-system error, in words a user acts on."""
    causes: dict[int | None, str] = {
        errno.ENOSPC: "no space left on the device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EROFS: "read-only file system",
        errno.ENOENT: "no such file or folder",
        errno.EISDIR: "is a folder, not a file",
        errno.ENOTDIR: "a part of the path is a file, not a folder",
        errno.EBADF: "not an open file descriptor of kgparser",
        errno.ENXIO: "no reader at the other end (a socket or a FIFO without reader)",
    }
    cause = causes.get(error.errno, error.strerror or str(error))
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
    """A path to write ``path``'s new content to.  For a file, a temporary
    path: on a clean exit it replaces the file in one rename (keeping the
    file's permission bits), on any error it is removed and the file is left
    as it was.  For a stream (:func:`output_target`), the stream's own path.
    Operating-system errors become :class:`WriteError`."""
    target = output_target(path)
    if target.stream:
        with stream_errors(path):
            yield target.path
        return
    path = target.path
    _check_target(path)
    remove_stale_temporaries(path.parent, of=path.name)
    temporary = temporary_name(path)
    try:
        yield temporary
        fsync_path(temporary)
        _keep_permissions(path, temporary)
        os.replace(temporary, path)
    except OSError as error:
        raise WriteError(f"cannot write {os_error_message(path, error)}; "
                         f"{'the previous file is unchanged' if path.exists() else 'nothing was written'}") from error
    finally:
        temporary.unlink(missing_ok=True)


@contextmanager
def stream_errors(name: str | Path) -> Iterator[None]:
    """Operating-system errors while the block writes to the stream ``name``
    (a path, or :data:`STANDARD_OUTPUT`) become a :class:`WriteError` naming it."""
    if str(name) in ("-", "/dev/stdout"):
        name = STANDARD_OUTPUT
    try:
        yield
    except BrokenPipeError:
        raise  # the reader went away: the command line stops quietly
    except OSError as error:
        raise WriteError(f"cannot write {os_error_message(name, error)} "
                         f"(a stream: what came before the error was written)", stream=str(name)) from error


def fsync_path(path: Path) -> None:
    """Flush a file's data, or a folder's entries, to the disk (so that a power
    failure after a rename cannot leave a name for data not yet written)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _keep_permissions(path: Path, temporary: Path) -> None:
    """Give the new file the permission bits of the file it replaces (a new
    file keeps those the umask gave it)."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    os.chmod(temporary, mode)


@contextmanager
def atomic_open(path: str | Path, *, compress: bool | None = None) -> Iterator[IO[str]]:
    """A text handle (UTF-8, ``\\n`` line ends) whose content replaces ``path``
    atomically when the block ends without an error, or that writes to it
    as it goes when it is a stream (:func:`output_target`); gzip-compressed
    when ``compress`` is true, or by default when ``path`` ends in ``.gz``."""
    descriptor = output_target(path).descriptor
    if descriptor is not None:  # never a .gz name
        with stream_errors(path), _descriptor_handle(descriptor) as handle:
            yield handle
        return
    compress = Path(path).suffix == ".gz" if compress is None else compress
    with atomic_path(path) as temporary:
        opener = gzip.open if compress else open
        with opener(temporary, "wt", encoding="utf-8", newline="\n") as handle:
            yield handle


@contextmanager
def _descriptor_handle(descriptor: int) -> Iterator[IO[str]]:
    """A text handle on an open descriptor of this process, which stays open.
    Standard output and error are Python's own ``sys.stdout`` and
    ``sys.stderr`` (wherever they are redirected); any other descriptor is
    duplicated, so that the output goes on where the shell's left off."""
    standard = {1: sys.stdout, 2: sys.stderr}.get(descriptor)
    if standard is not None:
        yield standard
        standard.flush()
        return
    with open(os.dup(descriptor), "w", encoding="utf-8", newline="\n") as handle:
        yield handle


def write_text(path: str | Path, text: str) -> None:
    """Replace ``path``'s content with ``text`` atomically (or write it to a stream)."""
    with atomic_open(path, compress=False) as handle:
        handle.write(text)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (owned by anyone)."""
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
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for entry in folder.glob(f".{glob.escape(of)}.*.tmp" if of else ".*.tmp"):
        match = _TEMPORARY.match(entry.name)
        if match and (of is None or match["name"] == of) and entry.is_file() and not process_alive(int(match["pid"])):
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


# -- folders ------------------------------------------------------------------------------------------

#: a folder a run left beside OUT_DIR: ``.NAME.PID.tmp`` (the new folder being
#: written) or ``.NAME.PID.old.tmp`` (the folder it replaces, moved aside)
STAGED = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)\.(?P<old>old\.)?tmp$")


def holds_anything(folder: Path) -> bool:
    """Whether ``folder`` is a folder with at least one entry."""
    return folder.is_dir() and any(folder.iterdir())


@contextmanager
def staged_folder(out_dir: Path) -> Iterator[Path]:
    """An empty temporary folder beside ``out_dir`` (``.NAME.PID.tmp``) for
    ``out_dir``'s new content, which replaces ``out_dir`` when the block ends
    without an error (:func:`put_in_place`) and is removed on any error."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = temporary_name(out_dir)
    staging.mkdir()
    try:
        yield staging
        for path in staging.iterdir():
            fsync_path(path)
        put_in_place(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def put_in_place(staging: Path, out_dir: Path) -> None:
    """Rename the complete folder ``staging`` to ``out_dir``.  An ``out_dir``
    that holds anything is first moved aside (``.NAME.PID.old.tmp``) and
    removed last, so ``out_dir`` is at every moment the old folder or the new
    one (or, for the instant between two renames, absent: the next run then
    puts the old one back), never a mix."""
    if not holds_anything(out_dir):
        os.replace(staging, out_dir)  # also over an empty folder
    else:
        aside = out_dir.with_name(f".{out_dir.name}.{os.getpid()}.old.tmp")
        os.rename(out_dir, aside)
        try:
            os.rename(staging, out_dir)
        except OSError:
            os.rename(aside, out_dir)
            raise
        shutil.rmtree(aside, ignore_errors=True)  # what a failure leaves, the next run removes
    fsync_path(out_dir.parent)


def remove_stale_folders(out_dir: Path) -> list[Path]:
    """Clean up after runs killed while writing ``out_dir``: remove their
    folders beside it, except that a folder moved aside goes back to
    ``out_dir`` where that is missing (killed between the two renames of
    :func:`put_in_place`).  Returns the removed folders."""
    removed = []
    for entry in sorted(out_dir.parent.glob(f".{glob.escape(out_dir.name)}.*.tmp")):
        match = STAGED.match(entry.name)
        if not (match and match["name"] == out_dir.name and entry.is_dir() and _ended(int(match["pid"]))):
            continue
        if match["old"] and not out_dir.exists():
            entry.rename(out_dir)
        else:
            shutil.rmtree(entry)
            removed.append(entry)
    return removed


def _ended(pid: int) -> bool:
    """Whether process ``pid`` no longer runs (a folder named with this
    process's own id was left by an earlier process of that id)."""
    return pid == os.getpid() or not process_alive(pid)
