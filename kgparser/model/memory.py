"""The memory a network's weights need, checked before it is built: a size
setting far too large (``--set model.word_dim=100000000000``) is one line
naming the setting and the memory, not an allocator's traceback -- nor a
machine pushed into swap or the out-of-memory killer by weights the kernel
granted lazily and their initialisation then touched."""
from __future__ import annotations

import dataclasses
import os

from ..config import ModelConfig
from ..errors import KgparserError

__all__ = ["ModelTooLarge", "available_memory", "check_weight_memory", "weight_bytes_lower_bound"]

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
