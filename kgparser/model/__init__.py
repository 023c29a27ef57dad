"""The parsing model: transition system + vocabularies + network, and its plain-data form.

:class:`Model` ties the pieces a checkpoint holds: the resolved config, the
vocabularies, the ordered inventory of labeled transitions (the columns of the
score matrix) and the network weights.
"""
from __future__ import annotations

import itertools
from typing import NamedTuple, Sequence

import numpy as np
import torch

from ..config import Config, config_from_saved
from ..errors import KgparserError
from ..transitions import get_system
from ..vocab import ROOT_ID, UNK_ID, Vocabularies, normalize_form
from .embeddings import lookup_id
from .memory import check_weight_memory
from .network import SLOTS_PER_POSITION, Network
from .tagger import TAG_CLASS_OFFSET

__all__ = ["CharTable", "Model", "Network", "SLOTS_PER_POSITION"]

EXT_PAD, EXT_UNK = 0, 1
ROOT_FORM = "\0root"  # ROOT's key among the forms whose character vectors a batch reads


class CharTable(NamedTuple):
    """Character vectors computed ahead (:meth:`Model.char_table`): ``rows`` maps each
    form to its row of ``vectors``, whose last row is the zero vector of padding."""
    rows: dict[str, int]
    vectors: torch.Tensor


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
        self.network = Network(cfg, n_words=len(vocabs.words), n_tags=len(vocabs.tags), n_chars=len(vocabs.chars),
                               n_ext=len(self.ext_words) + 2 if self.ext_words else 0, ext_dim=self.ext_dim,
                               n_positions=self.n_positions, n_actions=len(self.actions), n_arc_transitions=n_arc,
                               tag_classes={c: len(vocabs.tag_columns[c]) - TAG_CLASS_OFFSET for c in self.tag_columns})
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
        self.word_counts = np.array(vocabs.words.counts, dtype=np.float64)
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
        return self

    # -- inputs ---------------------------------------------------------------------------

    def inputs(self, sentences: Sequence, rng: np.random.Generator | None = None, given_tags: bool = True,
               char_table: CharTable | None = None) -> dict:
        """Index tensors for a batch; ROOT at position 0.  Sentence ``i``'s token ``w`` is
        row ``offsets[i] + w`` of :meth:`Network.encode`; ``pad_row`` the padding vector.
        With ``rng``, word dropout
        replaces a word seen ``c`` times in training by UNK with probability a/(c+a), and
        tag dropout a tag with probability ``pos_dropout``.  A model that reads its own
        predicted tags (``model.tag_input: predicted`` or ``soft``) reads instead the
        sentences' tags where they are known tags and ``given_tags`` is true (at parse
        time: the user's tags), and predicts the others (in training: all).  A model
        with characters reads their vectors from ``char_table`` where given (it must
        hold every form of the batch), else computes them for the batch."""
        cfg = self.config.model
        width = max(s.n for s in sentences) + 1
        words, tags, ext = self._index_arrays(sentences, width)
        if rng is not None:
            self._drop_inputs(words, tags, rng)
        sizes = [s.n + 1 for s in sentences]
        offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        token_rows = np.concatenate([np.arange(size) + i * width for i, size in enumerate(sizes)])
        reverse = np.tile(np.arange(width, dtype=np.int64), (len(sentences), 1))
        for i, size in enumerate(sizes):
            reverse[i, :size] = reverse[i, size - 1::-1]
        device = self.device
        out = {"words": torch.from_numpy(words).to(device), "tags": torch.from_numpy(tags).to(device),
               "tag_given": torch.from_numpy(tags >= ROOT_ID if given_tags else tags == ROOT_ID).to(device),
               "reverse": torch.from_numpy(reverse).to(device),
               "token_rows": torch.from_numpy(token_rows).to(device),
               "offsets": offsets[:-1].tolist(), "pad_row": int(offsets[-1])}
        if ext is not None:
            out["ext"] = torch.from_numpy(ext).to(device)
        if cfg.char_dim:
            out.update(self._char_inputs(sentences, width, char_table))
        return out

    def _index_arrays(self, sentences: Sequence, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Word, tag and (with external vectors) external-word ids, one padded row per
        sentence, ROOT first."""
        cfg = self.config.model
        batch = len(sentences)
        words = np.zeros((batch, width), dtype=np.int64)
        tags = np.zeros((batch, width), dtype=np.int64)
        word_index, tag_index = self.vocabs.words.index, self.vocabs.tags.index
        word_keys = (lambda forms: map(normalize_form, forms)) if cfg.normalize_words else iter
        ext = np.zeros((batch, width), dtype=np.int64) if self.ext_words else None
        for i, sentence in enumerate(sentences):
            n = sentence.n
            words[i, 0] = ROOT_ID
            words[i, 1:n + 1] = [word_index.get(f, UNK_ID) for f in word_keys(sentence.forms)]
            tags[i, 0] = ROOT_ID
            tags[i, 1:n + 1] = [tag_index.get(t, UNK_ID) for t in getattr(sentence, cfg.pos)]
            if ext is not None:
                ext[i, 0] = EXT_UNK
                ext[i, 1:n + 1] = [lookup_id(self.ext_index, f, EXT_UNK) for f in sentence.forms]
        return words, tags, ext

    def _drop_inputs(self, words: np.ndarray, tags: np.ndarray, rng: np.random.Generator) -> None:
        """Word dropout (a word seen ``c`` times becomes UNK with probability a/(c+a);
        Kiperwasser & Goldberg 2016, implementation details) and tag dropout, in place."""
        cfg = self.config.model
        if cfg.word_dropout > 0:
            alpha = cfg.word_dropout
            drop = rng.random(words.shape) < alpha / (self.word_counts[words] + alpha)
            words[drop & (words > ROOT_ID)] = UNK_ID
        if cfg.pos_dropout > 0:
            tags[(rng.random(tags.shape) < cfg.pos_dropout) & (tags > ROOT_ID)] = UNK_ID

    def _char_inputs(self, sentences: Sequence, width: int, table: CharTable | None = None) -> dict:
        """Each padded position's row of the character vectors: of ``table`` where
        given (``char_vectors``), else of the batch's own distinct forms, whose
        characters are returned for :meth:`Network.char_vectors`."""
        if table is None:
            rows: dict[str, int] = {}
            row_of = lambda form: rows.setdefault(form, len(rows))  # noqa: E731
        else:
            rows, row_of = table.rows, table.rows.__getitem__
        position = np.zeros((len(sentences), width), dtype=np.int64)
        for i, sentence in enumerate(sentences):
            position[i, 0] = row_of(ROOT_FORM)
            position[i, 1:sentence.n + 1] = [row_of(form) for form in sentence.forms]
            position[i, sentence.n + 1:] = -1
        position[position < 0] = len(rows)  # the zero row
        index = torch.from_numpy(position).to(self.device)
        if table is not None:
            return {"char_vectors": table.vectors, "char_index": index}
        chars, lengths = self._char_ids(list(rows))
        return {"chars": chars, "char_lengths": lengths, "char_index": index}

    def _char_ids(self, forms: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded character ids ``[forms, longest]`` of ``forms`` and their lengths."""
        char_index = self.vocabs.chars.index
        longest = max(map(_char_count, forms), default=1)
        chars = np.zeros((len(forms), longest), dtype=np.int64)
        lengths = np.ones(len(forms), dtype=np.int64)
        for t, form in enumerate(forms):
            if form == ROOT_FORM:
                chars[t, 0] = ROOT_ID
                continue
            ids = [char_index.get(c, UNK_ID) for c in form] or [UNK_ID]
            chars[t, :len(ids)] = ids
            lengths[t] = len(ids)
        return torch.from_numpy(chars).to(self.device), torch.from_numpy(lengths)

    def char_table(self, sentences: Sequence, group: int = 1024) -> CharTable:
        """The character vectors of every distinct form of ``sentences`` (and of ROOT),
        each computed once however many batches read it (at parse time, see
        :func:`kgparser.decoding.decode`), up to ``group`` forms of one length at a time."""
        # sorted in full, not in set order: string hashes, and so the groups, change with each process
        forms = sorted({form for sentence in sentences for form in sentence.forms} | {ROOT_FORM},
                       key=lambda form: (_char_count(form), form))
        parts = []
        for _, same_length in itertools.groupby(forms, key=_char_count):
            same_length = list(same_length)
            for start in range(0, len(same_length), group):
                parts.append(self.network.char_vectors(*self._char_ids(same_length[start:start + group])))
        parts.append(parts[0].new_zeros(1, parts[0].shape[1]))
        return CharTable({form: row for row, form in enumerate(forms)}, torch.cat(parts))

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
        }

    @classmethod
    def from_data(cls, data: dict) -> "Model":
        model = cls(config_from_saved(data["config"]), Vocabularies.from_data(data["vocabs"]),
                    data["ext_words"], data["ext_dim"])
        if list(model.actions) != list(data["actions"]) or \
                [[a, label] for a, label in model.transitions] != [list(t) for t in data["transitions"]]:
            raise ValueError("the checkpoint's action inventory differs from the transition system's")
        model.network.load_state_dict(data["weights"])
        model.max_train_length = data.get("max_train_length")  # absent from older checkpoints
        if model.config.model.pretrained.freeze and model.network.ext_emb is not None:
            model.network.ext_emb.weight.requires_grad_(False)
        return model


def _char_count(form: str) -> int:
    """How many characters the character BiLSTM reads for ``form`` (ROOT and the
    empty form read one symbol, see :meth:`Model._char_ids`)."""
    return 1 if form == ROOT_FORM else len(form) or 1


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
