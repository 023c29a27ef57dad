"""The action inventory: one table of (action, label) columns, read by the trainer and the decoder.

The network scores every unlabeled action (one output per action) and every
arc action once per label (one block of label outputs per arc action); a
labeled transition's score is its action's score plus, for an arc, its
label's (Kiperwasser & Goldberg 2016, section 3; spaCy's moves table plays
the same part).  :class:`ActionInventory` fixes the order of those columns
and maps between names and positions; the checkpoint keeps the order
(``actions``, ``transitions``), so a loaded model scores the same columns.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import torch

__all__ = ["ActionInventory"]


class ActionInventory:
    """The labeled transitions of one transition system and label set, in a fixed order.

    ``columns[k]`` is the ``k``-th labeled transition, ``(action, label)`` with
    ``label`` None for an action that builds no arc; each arc action takes one
    column per label, in label order, starting at ``action_columns[action][0]``.
    """

    def __init__(self, actions: Sequence[str], arc_actions: Iterable[str], labels: Sequence[str]):
        self.actions = list(actions)
        self.arc_actions = frozenset(arc_actions)
        self.labels = list(labels)
        self.label_id = {label: i for i, label in enumerate(self.labels)}
        self.action_id = {a: i for i, a in enumerate(self.actions)}
        self.columns, self.action_columns = self._columns()
        arcs = [a for a in self.actions if a in self.arc_actions]
        #: position of each arc action among the arc actions (its block of label outputs)
        self.arc_slot = {a: k for k, a in enumerate(arcs)}
        self.arc_action_ids = [self.action_id[a] for a in arcs]
        self.arc_action_index = torch.tensor(self.arc_action_ids, dtype=torch.int64)
        self.n_arc_columns = sum(1 for _, label in self.columns if label is not None)
        #: per column, the action output it adds (NumPy and torch)
        self.column_action_np = np.array([self.action_id[a] for a, _ in self.columns], dtype=np.int64)
        self.column_action = torch.from_numpy(self.column_action_np)
        #: per column, the label output it adds (``n_arc_columns``: a zero column, for no arc)
        self.column_label = torch.tensor(self._label_outputs(), dtype=torch.int64)

    def _columns(self) -> tuple[list[tuple[str, str | None]], dict[str, tuple[int, int]]]:
        columns: list[tuple[str, str | None]] = []
        spans: dict[str, tuple[int, int]] = {}
        for action in self.actions:
            start = len(columns)
            if action in self.arc_actions:
                columns.extend((action, label) for label in self.labels)
            else:
                columns.append((action, None))
            spans[action] = (start, len(columns))
        return columns, spans

    def _label_outputs(self) -> list[int]:
        outputs, next_output = [], 0
        for _, label in self.columns:
            if label is None:
                outputs.append(self.n_arc_columns)
            else:
                outputs.append(next_output)
                next_output += 1
        return outputs

    def column(self, action: str, label_id: int = 0) -> int:
        """The column of ``action`` with the label of id ``label_id`` (ignored for
        an action that builds no arc)."""
        first = self.action_columns[action][0]
        return first + label_id if action in self.arc_actions else first

    def mask(self, actions) -> np.ndarray:
        """Which columns belong to one of ``actions``."""
        mask = np.zeros(len(self.columns), dtype=bool)
        for action in actions:
            if action in self.action_columns:
                first, stop = self.action_columns[action]
                mask[first:stop] = True
        return mask

    def to(self, device: torch.device) -> ActionInventory:
        self.arc_action_index = self.arc_action_index.to(device)
        self.column_action = self.column_action.to(device)
        self.column_label = self.column_label.to(device)
        return self

    def to_data(self) -> dict:
        """The checkpoint's record of the order: ``actions`` and ``transitions``."""
        return {"actions": self.actions, "transitions": [[a, label] for a, label in self.columns]}

    def matches(self, data: dict) -> bool:
        """Whether a checkpoint's :meth:`to_data` record has this order."""
        return self.actions == list(data["actions"]) and \
            [[a, label] for a, label in self.columns] == [list(t) for t in data["transitions"]]
