"""The parsing model: transition system + vocabularies + network, built, saved and loaded.

:class:`Model` ties the pieces a checkpoint holds: the resolved config, the
vocabularies, the action inventory (:mod:`kgparser.model.inventory`: the
columns of the score matrix), the network weights, the fingerprint of its
encoder (whose weights stay where they are: :mod:`kgparser.model.encoder`)
and, where the run learned them, the tokenizer of raw text
(:mod:`kgparser.tokenize`) and the lemmatizer of unseen words
(:mod:`kgparser.model.lemmatizer`).
What a batch of sentences turns into is :attr:`Model.inputs`
(:mod:`kgparser.model.inputs`); the checkpoint's layout is
:mod:`kgparser.model.checkpoint`.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import torch

from ..config import Config, config_from_saved
from ..errors import KgparserError
from ..transitions import get_system
from .checkpoint import CheckpointError, checkpoint_data, load_checkpoint, save_checkpoint
from .encoder import Encoder, EncoderError, EncoderNotFound
from .inputs import Batch, CharTable, Inputs
from .int8 import quantized
from .inventory import ActionInventory
from .lemmatizer import Lemmatizer
from .memory import check_weight_memory
from .network import SLOTS_PER_POSITION, Network
from .stepper import Encoded
from .tagger import TAG_CLASS_OFFSET
from .vocab import Vocabularies

if TYPE_CHECKING:
    from ..io.conllu import Sentence
    from ..tokenize.model import Tokenizer

__all__ = ["CharTable", "Model", "Network", "SLOTS_PER_POSITION"]


class Model:
    """Everything needed to score transitions for a batch of sentences."""

    def __init__(self, config: Config, vocabs: Vocabularies, ext_words: Sequence[str] = (),
                 ext_dim: int = 0) -> None:
        self.config = config
        self.system = get_system(config.system.name, **config.system.options)
        self.vocabs = vocabs
        self.ext_words = list(ext_words)
        self.ext_dim = ext_dim if self.ext_words else 0
        #: the (action, label) columns the network scores
        self.inventory = ActionInventory(self.system.actions, self.system.arc_actions, vocabs.labels.items)
        cfg = config.model
        self.tag_columns = _checked_tag_columns(config, vocabs)
        check_weight_memory(cfg, n_words=len(vocabs.words), n_slots=self.n_slots)
        self.encoder = _encoder(config)
        self.network = Network(cfg, n_words=len(vocabs.words), n_tags=len(vocabs.tags), n_chars=len(vocabs.chars),
                               n_ext=len(self.ext_words) + 2 if self.ext_words else 0, ext_dim=self.ext_dim,
                               n_positions=len(self.system.feature_names), n_actions=len(self.inventory.actions),
                               n_arc_transitions=self.inventory.n_arc_columns,
                               tag_classes={c: len(vocabs.tag_columns[c]) - TAG_CLASS_OFFSET for c in self.tag_columns},
                               encoder_states=(self.encoder.n_states, self.encoder.dim) if self.encoder else (0, 0),
                               finetuned=self.encoder.model if self.encoder and self.encoder.trainable else None)
        ext_index = {w: i + 2 for i, w in enumerate(self.ext_words)}
        #: the tensors a batch of sentences turns into: ``model.inputs(sentences, ...)``
        self.inputs = Inputs(config, vocabs, ext_index, self.network, self.encoder)
        self.device = torch.device("cpu")
        #: words in the longest training sentence (set by training; None when unknown),
        #: saved so that the parser can warn about longer input
        self.max_train_length: int | None = None
        #: the learned tokenizer of raw text (``tokenizer.enabled``: :mod:`kgparser.tokenize`), or None
        self.tokenizer: Tokenizer | None = None
        #: the lemmatizer of unseen words (``lemmatizer.enabled``: :mod:`kgparser.model.lemmatizer`), or None
        self.lemmatizer: Lemmatizer | None = None

    @property
    def n_slots(self) -> int:
        """Feature rows per state (:mod:`kgparser.model.features`): each position the
        transition system declares, with its leftmost and rightmost modifier."""
        return len(self.system.feature_names) * SLOTS_PER_POSITION

    @classmethod
    def build(cls, config: Config, train_sentences: Sequence[Sentence]) -> Model:
        """A new model: vocabularies from the training data, pretrained vectors
        if configured, fresh weights."""
        vocabs = Vocabularies.from_sentences(train_sentences, pos=config.model.pos,
                                             normalize_words=config.model.normalize_words,
                                             tag_columns=config.model.tagger.columns())
        pre = config.model.pretrained
        if not pre.path:
            return cls(config, vocabs)
        from .embeddings import read_vectors

        words, vectors = read_vectors(pre.path, vocabs.words.items, pre.max_extra_words)
        model = cls(config, vocabs, words, vectors.shape[1])
        if words:
            model.network.set_pretrained(torch.from_numpy(vectors), pre.freeze)
        return model

    def encode(self, batch: Batch, with_tags: bool = True) -> Encoded:
        """The batch as the stepper reads it: every token's BiLSTM vector
        projected by the MLP's first layer and, ``with_tags``, the joint
        tagger's scores (and with a lemmatizer what it reads); what the trainer
        and the decoder both run."""
        vectors, tag_scores, lemma_inputs = self.network.encode_all(
            batch, with_tags=with_tags, with_lemma_inputs=with_tags and self.lemmatizer is not None)
        return Encoded(batch, self.network.project(vectors), tag_scores, lemma_inputs)

    def to(self, device: str | torch.device) -> Model:
        self.device = torch.device(device)
        self.network.to(self.device)
        if self.lemmatizer is not None:
            self.lemmatizer.to(self.device)
        self.inventory.to(self.device)
        self.inputs.device = self.device
        if self.encoder is not None:
            self.encoder.to(self.device)
        return self

    # -- checkpoints ----------------------------------------------------------------------

    def save(self, path: str | Path, epoch: int, dev: dict[str, Any] | None,
             training: dict[str, Any] | None = None) -> None:
        """Write the checkpoint of this model after ``epoch`` to ``path``, atomically
        (``training``: what ``--resume`` needs, :mod:`kgparser.model.checkpoint`)."""
        save_checkpoint(checkpoint_data(self, epoch, dev, training), path)

    @classmethod
    def load(cls, path: str | Path, encoder: str | Path | None = None, quantize: bool | None = None) -> Model:
        """The model of checkpoint ``path`` (on the CPU); ``encoder``, ``quantize``: see :meth:`from_data`."""
        data = load_checkpoint(path)
        try:
            return cls.from_data(data["model"], encoder=encoder, quantize=quantize)
        except (KeyError, ValueError, RuntimeError) as exc:
            # one line: torch lists the weights that do not fit on lines of their own
            raise CheckpointError(f"{path}: inconsistent checkpoint: {' '.join(str(exc).split())}") from None
        except EncoderError as error:
            raise type(error)(f"{path}: {error}") from None

    def to_data(self) -> dict[str, Any]:
        """Plain data: config, vocabularies, inventories and CPU weights (no pickled objects)."""
        left_out = self._frozen_table_keys()
        return {
            "config": self.config.to_dict(),
            "vocabs": self.vocabs.to_data(),
            "ext_words": self.ext_words,
            "ext_dim": self.ext_dim,
            **self.inventory.to_data(),
            "weights": {k: v.detach().cpu() for k, v in self.network.state_dict().items()
                        if k not in left_out},
            "max_train_length": self.max_train_length,
            "encoder_fingerprint": self.encoder.fingerprint if self.encoder else None,
            **({"tokenizer": self.tokenizer.to_data()} if self.tokenizer else {}),
            **({"lemmatizer": self.lemmatizer.to_data()} if self.lemmatizer else {}),
        }

    @classmethod
    def from_data(cls, data: dict[str, Any], encoder: str | Path | None = None,
                  quantize: bool | None = None) -> Model:
        """The model of :meth:`to_data`; ``encoder``: where its encoder is now (a
        folder or hub name), if not where the config says; ``quantize``: its
        encoder's linear layers in int8 (True) or float32 (False) whatever
        ``model.encoder.quantize`` it was trained with (:mod:`kgparser.model.int8`;
        a fine-tuned encoder's once its trained weights are loaded)."""
        config = config_from_saved(data["config"])
        _override_encoder(config, encoder, quantize)
        try:
            model = cls(config, Vocabularies.from_data(data["vocabs"]), data["ext_words"], data["ext_dim"])
        except EncoderNotFound as error:
            raise EncoderNotFound(f"{error}; give the place of the encoder the model was trained with: "
                                  f"--encoder PATH (Parser.load(..., encoder=PATH))") from None
        _check_fingerprint(model.encoder, data.get("encoder_fingerprint"))
        if not model.inventory.matches(data):
            raise ValueError("the checkpoint's action inventory differs from the transition system's")
        missing, unexpected = model.network.load_state_dict(data["weights"], strict=False)
        left_out = model._frozen_table_keys()
        missing = [key for key in missing if key not in left_out]
        if missing or unexpected:
            found = [f"{what}: {', '.join(keys[:3])}"
                     for what, keys in (("missing", missing), ("unexpected", unexpected))
                     if keys]
            raise ValueError(f"the checkpoint's weights do not fit the network ({'; '.join(found)})")
        model.max_train_length = data.get("max_train_length")  # absent from older checkpoints
        if "tokenizer" in data:
            from ..tokenize.model import Tokenizer

            model.tokenizer = Tokenizer.from_data(data["tokenizer"], model.config.tokenizer)
        if "lemmatizer" in data:
            model.lemmatizer = Lemmatizer.from_data(data["lemmatizer"], model.config.lemmatizer)
        if model.encoder is not None and model.encoder.trainable and config.model.encoder.quantize:
            quantized(model.encoder.model, keep_float=True)  # the trained weights, now loaded
        if model.config.model.pretrained.freeze and model.network.ext_emb is not None:
            model.network.ext_emb.weight.requires_grad_(False)
        return model

    def _frozen_table_keys(self) -> set[str]:
        """The network's weights that checkpoints leave out: a fine-tuned encoder's
        frozen token-embedding table, which its folder holds (fingerprinted)."""
        if self.encoder is None or not self.encoder.trainable:
            return set()
        table = self.encoder.frozen_table()
        return {f"{name}.{key}" for name, module in self.network.named_modules() if module is table
                for key in module.state_dict()}


def _override_encoder(config: Config, encoder: str | Path | None, quantize: bool | None) -> None:
    """A saved config's encoder moved to ``encoder`` and quantized as ``quantize`` says (None: as saved)."""
    if (encoder is not None or quantize) and not config.model.encoder.path:
        option = "--encoder (Parser.load(..., encoder=...))" if encoder is not None else \
            "--quantize (Parser.load(..., quantize=...))"
        raise EncoderError(f"this model was trained without a pretrained encoder (model.encoder); leave out {option}")
    if encoder is not None:
        config.model.encoder.path = str(Path(encoder).resolve()) if Path(encoder).exists() else str(encoder)
    if quantize is not None:
        config.model.encoder.quantize = quantize


def _encoder(config: Config) -> Encoder | None:
    """The encoder of ``model.encoder`` (None without one)."""
    return Encoder(config.model.encoder) if config.model.encoder.path else None


def _check_fingerprint(encoder: Encoder | None, saved: str | None) -> None:
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
