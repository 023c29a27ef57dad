"""Inference: load a checkpoint and parse sentences, batched.

    >>> from kgparser.parser import Parser
    >>> parser = Parser.load("runs/quickstart/best.pt")
    >>> parser.parse([["The", "dog", "barks", "."]])            # plain forms
    >>> parser.parse([[("The", "DET"), ("dog", "NOUN")]])        # (form, upos)
    >>> parser.parse("in.conllu")                                 # a CoNLL-U file

A batch of sentences is encoded with one BiLSTM call; all parser states then
advance in lock-step, every state that has a choice being scored by one MLP
call per step.  The output is always a valid UD tree (:func:`to_valid_tree`).

Constraints: ``parse(..., constraints=[c1, c2, ...])`` takes one entry per
sentence: ``None``, a callable ``f(state, legal_actions) -> allowed_actions``,
or a :class:`DecodingConstraint` (which can also force the label of an arc).
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from .errors import KgparserError
from .model import Model

ROOT_LABEL = "root"
FALLBACK_LABEL = "dep"
CHECKPOINT_FORMAT = "kgparser-checkpoint"
CHECKPOINT_VERSION = 1


class CheckpointError(KgparserError):
    """A checkpoint cannot be read."""


class DecodingConstraint:
    """Restricts the decoder for one sentence; subclass and override either method."""

    def allowed_actions(self, state, legal_actions: list[str]) -> list[str]:
        """The subset of ``legal_actions`` the decoder may take in ``state``."""
        return legal_actions

    def forced_label(self, head: int, dependent: int) -> str | None:
        """The label the arc ``head -> dependent`` must carry, or None to let the model choose."""
        return None


class _FilterConstraint(DecodingConstraint):
    def __init__(self, function: Callable):
        self.function = function

    def allowed_actions(self, state, legal_actions):
        return self.function(state, legal_actions)


def _as_constraint(entry) -> DecodingConstraint | None:
    if entry is None or isinstance(entry, DecodingConstraint):
        return entry
    if callable(entry):
        return _FilterConstraint(entry)
    raise TypeError(f"a constraint must be None, a callable or a DecodingConstraint, not {type(entry).__name__}")


def state_rows(model: Model, state, base: int, pad: int, out: list) -> None:
    """Append the vector rows a state reads: each feature position, its leftmost and
    rightmost modifier; ``base`` is the sentence's first row, ``pad`` the padding row."""
    leftmost, rightmost = state.leftmost, state.rightmost
    for word in model.system.features(state):
        if word < 0:
            out += (pad, pad, pad)
        else:
            left, right = leftmost[word], rightmost[word]
            out += (base + word, base + left if left >= 0 else pad, base + right if right >= 0 else pad)


def flat_rows(model: Model, rows: list, count: int) -> torch.Tensor:
    """Rows of :meth:`Network.project` for ``count`` states' vector rows."""
    slots = model.n_slots
    array = np.asarray(rows, dtype=np.int64).reshape(count, slots) * slots + np.arange(slots, dtype=np.int64)
    return torch.from_numpy(array).to(model.device)


def to_valid_tree(heads: Sequence[int], labels: Sequence[str | None]) -> tuple[list[int], list[str | None]]:
    """A UD tree from whatever a final state holds: cycles are broken, exactly one
    word hangs from the root (label ``root``), every other headless or root-attached
    word is attached to that word (label ``dep`` unless it had one)."""
    n = len(heads) - 1
    heads = [-1] + [h if h is not None and 0 <= h <= n and h != d else -1 for d, h in enumerate(heads) if d > 0]
    labels = list(labels)
    _break_cycles(heads)
    top = [d for d in range(1, n + 1) if heads[d] == 0]
    labeled_root = [d for d in top if labels[d] == ROOT_LABEL]
    pending = [d for d in range(1, n + 1) if heads[d] == -1]
    if not n:
        return heads, labels
    root = (labeled_root or top or pending)[0]
    heads[root], labels[root] = 0, ROOT_LABEL
    for d in range(1, n + 1):
        if d == root:
            continue
        if heads[d] in (0, -1):
            heads[d] = root
        if labels[d] in (None, ROOT_LABEL):
            labels[d] = FALLBACK_LABEL
    return heads, labels


def _break_cycles(heads: list[int]) -> None:
    """Detach one word of every cycle (its head becomes -1)."""
    n = len(heads) - 1
    color = [0] * (n + 1)  # 0 unseen, 1 on the current path, 2 done
    for start in range(1, n + 1):
        path, d = [], start
        while d > 0 and color[d] == 0:
            color[d] = 1
            path.append(d)
            d = heads[d]
        if d > 0 and color[d] == 1:
            heads[d] = -1
        for p in path:
            color[p] = 2


def decode(model: Model, sentences: Sequence, batch_size: int = 64,
           constraints: Sequence | None = None) -> list[tuple[list[int], list[str | None]]]:
    """Greedy parses (valid trees) of ``sentences``, in their order."""
    results: list = [None] * len(sentences)
    order = sorted(range(len(sentences)), key=lambda i: sentences[i].n)
    network = model.network
    was_training = network.training
    network.eval()
    try:
        with torch.no_grad():
            for start in range(0, len(order), batch_size):
                chosen = order[start:start + batch_size]
                batch_constraints = [_as_constraint(constraints[i]) for i in chosen] if constraints else None
                states = _decode_batch(model, [sentences[i] for i in chosen], batch_constraints)
                for i, state in zip(chosen, states):
                    results[i] = to_valid_tree(state.heads, state.labels)
    finally:
        network.train(was_training)
    return results


def _decode_batch(model: Model, sentences: Sequence, constraints: list | None) -> list:
    system, network = model.system, model.network
    states = [system.initial_state(s.n) for s in sentences]
    live = [i for i, state in enumerate(states) if not system.is_final(state)]
    if not live:
        return states
    inputs = model.inputs(sentences)
    offsets, pad = inputs["offsets"], inputs["pad_row"]
    projected = network.project(network.encode(inputs))
    arc_actions = model.arc_actions
    while live:
        scored, rows, legal_sets = [], [], []
        for i in live:
            state = states[i]
            legal = system.legal_actions(state)
            if not legal:
                raise RuntimeError(f"{system!r}: a non-final state has no legal action")
            if constraints and constraints[i] is not None:
                legal = constraints[i].allowed_actions(state, legal) or legal
            if len(legal) == 1 and legal[0] not in arc_actions:
                system.apply(state, legal[0])
                continue
            scored.append(i)
            legal_sets.append(legal)
            state_rows(model, state, offsets[i], pad, rows)
        if scored:
            hidden = network.hidden(projected, flat_rows(model, rows, len(scored)))
            choices = _best_transitions(model, hidden, [states[i] for i in scored], legal_sets,
                                        [constraints[i] for i in scored] if constraints else None)
            for i, (action, label) in zip(scored, choices):
                system.apply(states[i], action, label)
        live = [i for i in live if not system.is_final(states[i])]
    return states


def _best_transitions(model: Model, hidden, states: list, legal_sets: list, constraints: list | None) -> list:
    """The best legal (action, label) of each state.  As a labeled transition scores
    action + label, each arc action's best label is found in torch for all states at
    once; only the choice among a state's few legal actions is made in Python."""
    network = model.network
    n_labels = len(model.labels)
    action_scores = network.action_out(hidden)
    label_scores = network.label_out(hidden)
    if n_labels:
        per_action = label_scores[:, :len(model.arc_action_ids) * n_labels].view(len(states), -1, n_labels)
        best_label_scores, best_labels = per_action.max(2)
        action_scores = action_scores.index_add(1, model.arc_action_index, best_label_scores)
        best_labels = best_labels.tolist()
    totals = action_scores.tolist()
    label_rows = label_scores.tolist() if constraints else None
    action_id, arc_slot, labels = model.action_id, model.arc_slot, model.labels
    choices = []
    for j, legal in enumerate(legal_sets):
        row = totals[j]
        constraint = constraints[j] if constraints else None
        best, best_label, best_score = None, None, -math.inf
        for action in legal:
            score = row[action_id[action]]
            label = None
            if action in model.arc_actions and n_labels:
                slot = arc_slot[action]
                label = labels[best_labels[j][slot]]
                forced = constraint.forced_label(*model.system.arc_of(states[j], action)) if constraint else None
                if forced is not None:
                    known = model.label_id.get(forced)
                    if known is not None:  # rescore with the forced label instead of the best one
                        score += label_rows[j][slot * n_labels + known] - label_rows[j][slot * n_labels +
                                                                                        best_labels[j][slot]]
                    label = forced
            if score > best_score:
                best, best_label, best_score = action, label, score
        choices.append((best, best_label))
    return choices


def load_checkpoint(path: str | Path) -> dict:
    """The plain-data dict of a checkpoint (``torch.load(weights_only=True)``)."""
    path = Path(path)
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint") from None
    except Exception as exc:  # torch raises many types for corrupt files
        raise CheckpointError(f"{path}: not a readable kgparser checkpoint ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: not a kgparser checkpoint")
    if data.get("format_version", 0) > CHECKPOINT_VERSION:
        raise CheckpointError(f"{path}: checkpoint format {data['format_version']} is newer than this kgparser")
    return data


class Parser:
    """A trained parser: ``Parser.load(path).parse(...)``."""

    def __init__(self, model: Model, batch_size: int = 64):
        self.model = model
        self.batch_size = batch_size

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu", batch_size: int = 64,
             threads: int | None = None) -> "Parser":
        if threads:
            torch.set_num_threads(threads)
        data = load_checkpoint(path)
        try:
            model = Model.from_data(data["model"])
        except (KeyError, ValueError, RuntimeError) as exc:
            raise CheckpointError(f"{path}: inconsistent checkpoint: {exc}") from None
        return cls(model.to(device), batch_size)

    @property
    def system(self):
        return self.model.system

    def parse(self, data, *, constraints: Sequence | None = None, lenient: bool = False) -> list:
        """Parse a CoNLL-U path, Sentences, or lists of forms / (form, upos) tokens.

        Returns Sentences with HEAD and DEPREL set (copies: inputs are left unchanged);
        every other column and comment is kept.
        """
        sentences = self._sentences(data, lenient)
        if constraints is not None and len(constraints) != len(sentences):
            raise ValueError(f"{len(constraints)} constraints for {len(sentences)} sentences")
        trees = decode(self.model, sentences, self.batch_size, constraints)
        for sentence, (heads, labels) in zip(sentences, trees):
            sentence.set_tree(heads, labels)
        return sentences

    @staticmethod
    def _sentences(data, lenient: bool) -> list:
        from .conllu_io import Sentence, read_conllu, sentences_from_tokens

        if isinstance(data, (str, os.PathLike)):
            return list(read_conllu(data, lenient=lenient, require_tree=False))
        items = list(data)
        if all(isinstance(s, Sentence) for s in items):
            return [s.copy() for s in items]
        return sentences_from_tokens(items)

    def parse_file(self, source: str | Path, target, *, lenient: bool = False) -> int:
        """Parse a CoNLL-U file into ``target`` (path or text file); returns the sentence count."""
        from .conllu_io import write_conllu

        sentences = self.parse(source, lenient=lenient)
        write_conllu(sentences, target)
        return len(sentences)
