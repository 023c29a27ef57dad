"""The rows a parser state reads from the projected BiLSTM vectors, shared by
the trainer and the decoder.

A state is represented by its transition system's feature positions, each
with its leftmost and rightmost modifier (Kiperwasser & Goldberg 2016, sect.
3; :data:`~kgparser.model.network.SLOTS_PER_POSITION` slots per position);
:meth:`~kgparser.model.network.Network.hidden` sums the slot rows that
:func:`flat_rows` names.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

__all__ = ["flat_rows", "positions_rows", "state_rows"]


def state_rows(model, state, base: int, pad: int, out: list) -> None:
    """Append the vector rows a state reads: each feature position, its leftmost and
    rightmost modifier; ``base`` is the sentence's first row, ``pad`` the padding row."""
    positions_rows((model.system.features(state),), state, base, pad, out)


def positions_rows(position_lists: Sequence[Sequence[int]], state, base: int, pad: int, out: list) -> None:
    """:func:`state_rows` of several states given by their feature positions
    (-1 = empty), all read with the modifiers of ``state``: the states that
    differ from ``state`` only in their positions, as after actions that add no
    arc."""
    leftmost, rightmost = state.leftmost, state.rightmost
    for positions in position_lists:
        for word in positions:
            if word < 0:
                out += (pad, pad, pad)
            else:
                left, right = leftmost[word], rightmost[word]
                out += (base + word, base + left if left >= 0 else pad, base + right if right >= 0 else pad)


def flat_rows(model, rows: list, count: int) -> torch.Tensor:
    """Rows of :meth:`Network.project` for ``count`` states' vector rows
    (``np.fromiter`` reads a list of ints about twice as fast as ``np.asarray``)."""
    slots = model.n_slots
    array = np.fromiter(rows, dtype=np.int64, count=len(rows)).reshape(count, slots) * slots \
        + np.arange(slots, dtype=np.int64)
    return torch.from_numpy(array).to(model.device)
