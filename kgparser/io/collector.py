"""Python's cyclic garbage collector paused while a process makes many objects
that are not garbage: the decoder's short-lived acyclic states and lists
(reference counting frees them anyway; the full collections they trigger
cost up to a sixth of the parse time), and torch's import and the model's
load at ``kgparser parse``'s start (60-85 ms: docs/history/start-up.md, "Start-up (issue 49)")."""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector as it was after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
