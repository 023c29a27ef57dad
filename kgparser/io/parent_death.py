"""Child processes that end with their parent, however it ends (killed by
SIGKILL included): Linux's ``prctl(PR_SET_PDEATHSIG)``, asked for by the
child, which checks once that its parent is still the one that started it (a
parent that died before the child asked sends no signal).  Used by the
experiment runners' trainers and the parsing workers; elsewhere than Linux
nothing is asked, and those rely on their pipes to the parent closing.

The signal comes when the *thread* that started the child ends: children
are started from the thread that waits for them."""
from __future__ import annotations

import os
import signal
import sys
from functools import cache, partial
from typing import Callable

#: prctl(2) option: the signal a process gets when the thread that forked it ends
PR_SET_PDEATHSIG = 1


@cache
def _prctl() -> Callable | None:
    """libc's ``prctl`` where there is one (Linux), looked up once and before any
    fork: the child may only call what is ready, as other threads of this process
    may hold locks at the instant it is forked."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def end_with_parent(parent: int) -> None:
    """Have this process get SIGTERM when its parent, process ``parent``, dies
    (at once if it has died already); nothing where prctl is missing."""
    prctl = _prctl()
    if prctl is None:
        return
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def die_with_parent() -> Callable[[], None] | None:
    """What a child runs between fork and exec (``preexec_fn``) so that it gets
    SIGTERM when this process dies; ``None`` where prctl is missing."""
    if _prctl() is None:
        return None
    return partial(end_with_parent, os.getpid())
