"""Exclusive advisory locks on files (``fcntl.flock``).

The kernel releases a flock when the process holding it ends, however it
ends (kill -9 included), so a lock never outlives its writer and no stale
lock file needs cleaning up.  Two locks matter:

* ``OUTPUT_DIR/.train.lock``, held by ``kgparser train`` for as long as it
  writes a run (checkpoints, metrics, TensorBoard): two trainers can never
  write one run directory, however they were started;
* ``RUN_DIR/.lock``, held by ``kgparser experiment run`` while it executes a
  run of a grid (train, then parse the test set, then write the marker).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import ContextManager, Iterator

from ..errors import KgparserError

TRAIN_LOCK = ".train.lock"


class LockBusy(KgparserError):
    """Another process holds the lock."""


@contextmanager
def exclusive_lock(path: str | Path, wait: float = 0.0, busy: str | None = None,
                   error: type[LockBusy] = LockBusy) -> Iterator[None]:
    """Hold the exclusive lock of the file ``path`` (created if missing), tried
    for up to ``wait`` seconds before raising ``error`` (a :class:`LockBusy`)
    with the message ``busy``."""
    import fcntl

    path = Path(path)
    with open(path, "a+", encoding="utf-8") as handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    raise error(busy or f"{path}: locked by another process") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_locked(path: str | Path) -> bool:
    """Whether another process holds the lock of the file ``path`` now."""
    path = Path(path)
    if not path.exists():
        return False
    try:
        with exclusive_lock(path):
            return False
    except LockBusy:
        return True


def training_lock(output_dir: str | Path) -> ContextManager[None]:
    """The lock of a run directory that ``kgparser train`` holds while it writes it."""
    output_dir = Path(output_dir)
    # a status check holds the lock for an instant: wait a second before giving up
    return exclusive_lock(output_dir / TRAIN_LOCK, wait=1.0,
                          busy=f"{output_dir}: another kgparser process is training into this folder "
                               f"(it holds {output_dir / TRAIN_LOCK}); wait for it to end or stop it first")
