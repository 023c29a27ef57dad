"""The memory a network's weights need, checked before it is built: a size
setting far too large (``--set model.word_dim=100000000000``) is one line
naming the setting and the memory, not an allocator's traceback -- nor a
machine pushed into swap or the out-of-memory killer by weights the kernel
granted lazily and their initialisation then touched.

And :func:`release_free_memory`: the C heap's free pages handed back to the
system after a pretrained encoder's batch once the process has grown by
:data:`RELEASE_SLACK`: the transformer's activations (tens of MB, of shapes
that change from batch to batch) otherwise leave the heap fragmented, its
free pages resident (EWT dev + test with the accurate model: a peak of
1,007 MB without, 905 MB with, for 2% more time; at every batch 873 MB for
8% more: docs/history/start-up.md, "Start-up (issue 49)")."""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

from ..config import ModelConfig
from ..errors import KgparserError

__all__ = ["ModelTooLarge", "available_memory", "check_weight_memory", "release_free_memory",
           "weight_bytes_lower_bound"]

FLOAT_BYTES = 4
#: the settings :func:`weight_bytes_lower_bound` reads
SIZE_SETTINGS = ("word_dim", "lstm_hidden", "lstm_layers", "mlp_hidden")


class ModelTooLarge(KgparserError):
    """The network's weights would not fit in the memory available."""


def weight_bytes_lower_bound(cfg: ModelConfig, n_words: int, n_slots: int) -> int:
    """Bytes of the network's largest weights: the word table, the BiLSTM's
    matrices (its first layer reading at least the word vectors) and the MLP's
    hidden layer.  A lower bound -- the tag, pretrained, character, encoder and
    output weights and every bias are left out -- so a model it refuses cannot
    fit, whatever else the network holds."""
    hidden = cfg.lstm_hidden
    word_table = n_words * cfg.word_dim
    first_layer = 2 * 4 * hidden * (cfg.word_dim + hidden)  # two directions, four gates
    upper_layers = (cfg.lstm_layers - 1) * 2 * 4 * hidden * (2 * hidden + hidden)
    mlp = 2 * hidden * n_slots * cfg.mlp_hidden * (2 if cfg.separate_label_mlp else 1)
    return FLOAT_BYTES * (word_table + first_layer + upper_layers + mlp)


def available_memory() -> int | None:
    """Bytes of memory the system can give without swapping (Linux's
    ``MemAvailable``, else the free pages); None where neither is known."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def check_weight_memory(cfg: ModelConfig, n_words: int, n_slots: int) -> None:
    """Raise :class:`ModelTooLarge` when the weights' lower bound exceeds the
    memory available, naming the size setting whose default shrinks it most."""
    available = available_memory()
    needed = weight_bytes_lower_bound(cfg, n_words, n_slots)
    if available is None or needed <= available:
        return
    culprit = _largest_setting(cfg, n_words, n_slots, needed)
    where = f"model.{culprit}={getattr(cfg, culprit)}" if culprit else f"model (a vocabulary of {n_words} words)"
    raise ModelTooLarge(f"{where}: the network's weights would need at least {_size(needed)} of memory, more "
                        f"than the {_size(available)} available; choose a smaller value")


def _largest_setting(cfg: ModelConfig, n_words: int, n_slots: int, needed: int) -> str | None:
    """The size setting whose default value lowers the bound most (None: none lowers it)."""
    defaults = ModelConfig()
    smaller = {name: weight_bytes_lower_bound(dataclasses.replace(cfg, **{name: getattr(defaults, name)}),
                                              n_words, n_slots) for name in SIZE_SETTINGS}
    name = min(smaller, key=smaller.__getitem__)
    return name if smaller[name] < needed else None


def _size(count: int) -> str:
    """``count`` bytes in binary units (``7.3 TiB``)."""
    value, units = float(count), ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    for unit in units[:-1]:
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} {units[-1]}"


#: bytes a process may grow by since the C heap's free pages were last given back before they are again
RELEASE_SLACK = 128 * 2 ** 20


class _Heap:
    """glibc's ``malloc_trim`` (None elsewhere) and the resident size after its last call."""

    def __init__(self) -> None:
        self.trim: Callable[[int], Any] | None = None
        self.found = False
        self.released_at: int | None = None


_heap = _Heap()


def release_free_memory(slack: int | None = None) -> None:
    """Give the C heap's free pages back to the system (glibc's
    ``malloc_trim(0)``) where the process has grown by more than ``slack``
    bytes (default :data:`RELEASE_SLACK`) since they were last given back: a
    release costs the allocations that follow the page faults of memory they
    would have reused, so not at every call.  Nothing where the C library
    has no such call."""
    if not _heap.found:
        _heap.trim, _heap.found = _find_malloc_trim(), True
    if _heap.trim is None:
        return
    resident = _resident_bytes()
    limit = RELEASE_SLACK if slack is None else slack
    if resident is not None and _heap.released_at is not None and resident <= _heap.released_at + limit:
        return
    _heap.trim(0)
    _heap.released_at = _resident_bytes()


def _resident_bytes() -> int | None:
    """This process's resident set size (Linux's ``/proc/self/statm``); None where unknown."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _find_malloc_trim() -> Callable[[int], Any] | None:
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim
    except (ImportError, OSError, AttributeError, TypeError):  # not glibc (macOS, musl, Windows)
        return None
