"""The parsing model: transition system + vocabularies + network, and its plain-data form.

:class:`Model` ties the pieces a checkpoint holds: the resolved config, the
vocabularies, the ordered inventory of labeled transitions (the columns of the
score matrix), the network weights and the fingerprint of its encoder (whose
weights stay where they are: :mod:`kgparser.model.encoder`).  What a batch of
sentences turns into is :attr:`Model.inputs` (:mod:`kgparser.model.inputs`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ..config import Config, config_from_saved
from ..errors import KgparserError
from ..transitions import get_system
from ..vocab import Vocabularies
from .encoder import Encoder, EncoderError, EncoderNotFound
from .inputs import CharTable, Inputs
from .memory import check_weight_memory
from .network import SLOTS_PER_POSITION, Network
from .tagger import TAG_CLASS_OFFSET

__all__ = ["CharTable", "Model", "Network", "SLOTS_PER_POSITION"]


class Model:
    """Everything needed to score transitions for a batch of sentences."""

    def __init__(self, config: Config, vocabs: Vocabularies, ext_words: Sequence[str] = (), ext_dim: int = 0):
        self.config = config
        self.system = get_system(config.system.name, **config.system.options)
        self.vocabs = vocabs
        self.ext_words = list(ext_words)
        self.ext_index = {w: i + 2 for i, w in enumerate(self.ext_words)}
        self.ext_dim = ext_dim if self.ext_words else 0
        self.actions = list(self.system.actions)
        self.arc_actions = frozenset(self.system.arc_actions)
        self.labels = vocabs.labels.items
        self.transitions, self.action_columns = self._inventory()
        self.n_positions = len(self.system.feature_names)
        self.n_slots = self.n_positions * SLOTS_PER_POSITION
        n_arc = sum(1 for a, label in self.transitions if label is not None)
        cfg = config.model
        self.tag_columns = _checked_tag_columns(config, vocabs)
        check_weight_memory(cfg, n_words=len(vocabs.words), n_slots=self.n_slots)
        self.encoder = _encoder(config)
        self.network = Network(cfg, n_words=len(vocabs.words), n_tags=len(vocabs.tags), n_chars=len(vocabs.chars),
                               n_ext=len(self.ext_words) + 2 if self.ext_words else 0, ext_dim=self.ext_dim,
                               n_positions=self.n_positions, n_actions=len(self.actions), n_arc_transitions=n_arc,
                               tag_classes={c: len(vocabs.tag_columns[c]) - TAG_CLASS_OFFSET for c in self.tag_columns},
                               encoder_states=(self.encoder.n_states, self.encoder.dim) if self.encoder else (0, 0))
        #: the tensors a batch of sentences turns into: ``model.inputs(sentences, ...)``
        self.inputs = Inputs(config, vocabs, self.ext_index, self.network, self.encoder)
        action_id = {a: i for i, a in enumerate(self.actions)}
        label_cols, next_label = [], 0
        for action, label in self.transitions:
            if label is None:
                label_cols.append(n_arc)
            else:
                label_cols.append(next_label)
                next_label += 1
        self.transition_action_np = np.array([action_id[a] for a, _ in self.transitions], dtype=np.int64)
        self.transition_action = torch.from_numpy(self.transition_action_np)
        self.transition_label = torch.tensor(label_cols, dtype=torch.int64)
        self.label_id = {label: i for i, label in enumerate(self.labels)}
        self.action_id = action_id
        self.arc_action_ids = [action_id[a] for a in self.actions if a in self.arc_actions]
        #: position of each arc action among the arc actions (its block of label columns)
        self.arc_slot = {a: k for k, a in enumerate(a for a in self.actions if a in self.arc_actions)}
        self.arc_action_index = torch.tensor(self.arc_action_ids, dtype=torch.int64)
        self.device = torch.device("cpu")
        #: words in the longest training sentence (set by training; None when unknown),
        #: saved so that the parser can warn about longer input
        self.max_train_length: int | None = None

    def _inventory(self) -> tuple[list[tuple[str, str | None]], dict[str, tuple[int, int]]]:
        """Labeled transitions in a fixed order: each arc action once per label."""
        transitions, columns = [], {}
        for action in self.actions:
            start = len(transitions)
            if action in self.arc_actions:
                transitions.extend((action, label) for label in self.labels)
            else:
                transitions.append((action, None))
            columns[action] = (start, len(transitions))
        return transitions, columns

    def to(self, device: str | torch.device) -> "Model":
        self.device = torch.device(device)
        self.network.to(self.device)
        self.transition_action = self.transition_action.to(self.device)
        self.transition_label = self.transition_label.to(self.device)
        self.arc_action_index = self.arc_action_index.to(self.device)
        self.inputs.device = self.device
        if self.encoder is not None:
            self.encoder.to(self.device)
        return self

    # -- plain data -----------------------------------------------------------------------

    def to_data(self) -> dict:
        """Plain data: config, vocabularies, inventories and CPU weights (no pickled objects)."""
        return {
            "config": self.config.to_dict(),
            "vocabs": self.vocabs.to_data(),
            "ext_words": self.ext_words,
            "ext_dim": self.ext_dim,
            "actions": self.actions,
            "transitions": [[a, label] for a, label in self.transitions],
            "weights": {k: v.detach().cpu() for k, v in self.network.state_dict().items()},
            "max_train_length": self.max_train_length,
            "encoder_fingerprint": self.encoder.fingerprint if self.encoder else None,
        }

    @classmethod
    def from_data(cls, data: dict, encoder: str | Path | None = None) -> "Model":
        """The model of :meth:`to_data`; ``encoder``: where its encoder is now (a
        folder or hub name), if not where the config says."""
        config = config_from_saved(data["config"])
        if encoder is not None:
            config.model.encoder.path = str(Path(encoder).resolve()) if Path(encoder).exists() else str(encoder)
        try:
            model = cls(config, Vocabularies.from_data(data["vocabs"]), data["ext_words"], data["ext_dim"])
        except EncoderNotFound as error:
            raise EncoderNotFound(f"{error}; give the place of the encoder the model was trained with: "
                                  f"--encoder PATH (Parser.load(..., encoder=PATH))") from None
        _check_fingerprint(model.encoder, data.get("encoder_fingerprint"))
        if list(model.actions) != list(data["actions"]) or \
                [[a, label] for a, label in model.transitions] != [list(t) for t in data["transitions"]]:
            raise ValueError("the checkpoint's action inventory differs from the transition system's")
        model.network.load_state_dict(data["weights"])
        model.max_train_length = data.get("max_train_length")  # absent from older checkpoints
        if model.config.model.pretrained.freeze and model.network.ext_emb is not None:
            model.network.ext_emb.weight.requires_grad_(False)
        return model


def _encoder(config: Config):
    """The encoder of ``model.encoder`` (None without one)."""
    return Encoder(config.model.encoder) if config.model.encoder.path else None


def _check_fingerprint(encoder, saved: str | None) -> None:
    """The encoder found must be the one the model was trained with."""
    if encoder is not None and saved is not None and encoder.fingerprint != saved:
        raise EncoderError(f"the encoder at {encoder.name} differs from the one the model was trained with "
                           f"(fingerprint {encoder.fingerprint[:12]}, expected {saved[:12]}); pass the original "
                           f"with --encoder PATH (Parser.load(..., encoder=PATH))")


def _checked_tag_columns(config: Config, vocabs: Vocabularies) -> list[str]:
    """The columns the tagger predicts: those configured that the training data
    has.  A model that reads its predicted tags needs a tagger for its tag column,
    whose classes must be the tag embedding's (see :mod:`kgparser.model.tagger`)."""
    cfg = config.model
    columns = [c for c in cfg.tagger.columns() if c in vocabs.tag_columns]
    if cfg.tag_input in ("predicted", "soft"):
        if cfg.pos not in columns:
            raise KgparserError(f"model.tag_input: {cfg.tag_input}: the training data has no {cfg.pos.upper()} "
                                f"for the tagger to learn")
        if vocabs.tag_columns[cfg.pos].items != vocabs.tags.items:
            raise KgparserError(f"model.tag_input: {cfg.tag_input}: the tagger's {cfg.pos.upper()} classes "
                                f"differ from the tag embedding's")
    return columns
