"""Experiment configuration: one YAML file -> a validated, typed :class:`Config`.

The schema is a tree of dataclasses with defaults (Kiperwasser & Goldberg 2016
sizes).  Unknown keys, wrong types and bad choices raise :class:`ConfigError`
naming the file and the dotted key path.  Command-line overrides use the same
paths: ``--set training.epochs=5 --set model.char_dim=0``; their values are
parsed as YAML scalars (``5``, ``true``, ``null``, ``[a, b]``).

The file and every ``--set`` value are read by :mod:`kgparser.io.yaml_text`
(YAML 1.2 floats, such as ``1e-4``).  A key that has moved (:data:`MOVED_KEYS`)
is still read, its value moved to the new key with a :class:`FutureWarning`.

Relative data paths are resolved against the directory of the YAML file, so a
config keeps working from any current directory; ``output_dir`` is relative
to the current directory (where the user runs ``kgparser train``).
"""
from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
import typing
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from .errors import KgparserError
from .io.yaml_text import parse_yaml, read_text_file

ORACLES = ("static", "dynamic", "static-dynamic")
UNBUILDABLE_POLICIES = ("skip", "dynamic")
POS_COLUMNS = ("upos", "xpos")
#: how the parser sees tags: the file's column, the joint tagger's argmax or its
#: distribution (read by the upper BiLSTM layers, see kgparser/model/network.py), or not at all
TAG_INPUTS = ("gold", "predicted", "soft", "none")
DEVICES = ("cpu", "cuda")
POOLINGS = ("mean", "first")
#: which loose word of a final parser state becomes the root (kgparser/inference/tree_repair.py)
ROOT_CHOICES = ("scored", "first", "last", "multi")


class ConfigError(KgparserError):
    """A config file or override is invalid (the message names file and key)."""


@dataclass
class DataConfig:
    train: Optional[str] = None
    dev: Optional[str] = None
    test: Optional[str] = None
    #: read malformed CoNLL-U leniently (skip what cannot be read)
    lenient: bool = False
    #: make training trees projective (lifting arcs) before training
    projectivize: bool = False
    #: keep only the first N training sentences (null: all)
    max_train_sentences: Optional[int] = None
    #: the language code of the text (spaCy's, e.g. en), for parsing raw text (null: from a UD train file name)
    lang: Optional[str] = None


@dataclass
class SystemConfig:
    name: str = "arc-hybrid"
    #: keyword options of the system, e.g. {regularize_switch: true} for two-planar
    options: dict = field(default_factory=dict)


@dataclass
class PretrainedConfig:
    #: word2vec / GloVe / fastText text file (.gz accepted); null: none
    path: Optional[str] = None
    #: besides training words, keep this many leading words of the file
    max_extra_words: int = 20000
    #: keep the vectors fixed during training
    freeze: bool = False


@dataclass
class EncoderConfig:
    """A pretrained transformer encoder under the BiLSTM: frozen by default (its
    states are features: :mod:`kgparser.model.encoder`, mixed by
    :mod:`kgparser.model.mix`), or fine-tuned with the parser (``finetune``)."""

    #: a Hugging Face model folder (relative: to the YAML file's folder) or a hub name; null: none
    path: Optional[str] = None
    #: run only the bottom N transformer layers (null: all; 0: the token-embedding table alone)
    layers: Optional[int] = None
    #: a word's vector from its subwords' states: their ``mean`` or the ``first``
    pooling: str = "mean"
    #: size of the projected mix of the states, concatenated with the other input vectors
    dim: int = 256
    #: subwords per window for long sentences (null: as many as the model's positions allow)
    window: Optional[int] = None
    #: subwords shared by consecutive windows (null: half a window)
    overlap: Optional[int] = None
    #: the encoder's linear layers in int8 where they do not train (kgparser/model/int8.py: faster on a CPU,
    #: slightly less exact); a fine-tuned encoder's once trained
    quantize: bool = False
    #: train the transformer layers with the parser (their weights go into the checkpoint;
    #: the token-embedding table stays frozen, read from ``path``)
    finetune: bool = False
    #: Adam's learning rate for the fine-tuned layers (the rest trains with training.lr)
    lr: float = 5e-5


@dataclass
class TaggerConfig:
    """The joint tagger: a softmax head per predicted column on the shared BiLSTM,
    trained with the parser (multi-task, as UDPipe 2; see kgparser/model/tagger.py)."""

    #: predict UPOS
    upos: bool = False
    #: predict XPOS (skipped where the training data has none)
    xpos: bool = False
    #: predict FEATS, the whole string as one class per word (as UDPipe); skipped where the data has none
    feats: bool = False
    #: predict LEMMA as an edit script of the form learned from the training words (as UDPipe; see
    #: kgparser/lemma.py); skipped where the data has none
    lemma: bool = False
    #: 0: a linear softmax layer on the BiLSTM vectors; N: one tanh hidden layer of N units first
    hidden: int = 0
    #: the LEMMA head also reads the word's character vector (the character BiLSTM's final states,
    #: as UDPipe 2's lemmatizer reads its character embeddings), not only the BiLSTM's; needs
    #: model.char_dim > 0
    lemma_chars: bool = False
    #: false: the LEMMA head's loss trains the head alone, not the BiLSTM the parser shares (its gradient
    #: stops at the head's input), so that predicting lemmas cannot cost the parser accuracy
    lemma_gradient: bool = True
    #: weight of the tagging cross-entropy (summed over words and columns) against the parser's hinge loss
    loss_weight: float = 1.0

    def columns(self) -> list[str]:
        """The columns to predict, in the order UPOS, XPOS, FEATS, LEMMA."""
        return [column for column in ("upos", "xpos", "feats", "lemma") if getattr(self, column)]


@dataclass
class ModelConfig:
    word_dim: int = 100
    #: look words up by their normalized form (lower-cased, digits as 0), as the BIST
    #: parser and UUParser do; the character model still reads the form as written
    normalize_words: bool = False
    #: which column feeds the tag embeddings
    pos: str = "upos"
    pos_dim: int = 25
    #: replace a tag by UNK with this probability in training (lets a model parse untagged input)
    pos_dropout: float = 0.0
    #: what the tag embedding reads: ``gold`` the input file's column; ``predicted`` the joint
    #: tagger's best tag (the tagger reads the first BiLSTM layer, the upper layers read its
    #: tags, so no layer reads the tags it predicts); ``soft`` the tagger's distribution
    #: (probabilities times the tag embeddings); ``none``: no tag embedding
    tag_input: str = "gold"
    #: the joint tagger (off by default)
    tagger: TaggerConfig = field(default_factory=TaggerConfig)
    #: character BiLSTM embedding size; 0 disables the character model
    char_dim: int = 0
    #: character BiLSTM units per direction
    char_hidden: int = 50
    lstm_layers: int = 2
    #: BiLSTM units per direction
    lstm_hidden: int = 125
    #: dropout on the vectors fed to the first BiLSTM layer (word, tag, pretrained and character vectors)
    input_dropout: float = 0.0
    #: dropout between BiLSTM layers
    lstm_dropout: float = 0.0
    #: dropout on the recurrent state of every LSTM (word and character), one mask per batch
    #: and LSTM, as the variational dropout of Gal & Ghahramani (2016) that UUParser uses
    recurrent_dropout: float = 0.0
    mlp_hidden: int = 100
    #: give the labeled head its own tanh hidden layer of mlp_hidden units, as the BIST and
    #: UUParser implementations do, instead of sharing the action head's
    separate_label_mlp: bool = False
    #: replace a word by UNK with probability alpha / (count + alpha)
    word_dropout: float = 0.25
    pretrained: PretrainedConfig = field(default_factory=PretrainedConfig)
    encoder: EncoderConfig = field(default_factory=EncoderConfig)


@dataclass
class DecodingConfig:
    """How the trained network's transitions become trees (read when parsing and
    when scoring the dev set in training)."""

    #: which loose word of a final state becomes the root and where the others go:
    #: ``scored`` (by the network), ``first``, ``last`` or ``multi`` (kgparser/inference/tree_repair.py)
    root_choice: str = "scored"


@dataclass
class TokenizerConfig:
    """The learned tokenizer, sentence splitter and multiword-token expander
    for raw text (:mod:`kgparser.tokenize`): a character BiLSTM trained on the
    running text of ``data.train`` before the parser's first epoch, the best
    epoch on ``data.dev``'s text kept, stored in the checkpoint so that one
    model file turns raw text into trees."""

    #: learn it (``kgparser train``); without one, raw text is tokenized by spaCy's rules for ``data.lang``
    enabled: bool = False
    #: size of a character's embedding (of its lower-cased form)
    char_dim: int = 48
    #: size of a character class's embedding (case, digit, punctuation, space ...)
    class_dim: int = 8
    #: BiLSTM state size, each direction
    hidden: int = 64
    #: BiLSTM layers
    layers: int = 1
    #: dropout on the embeddings and the BiLSTM output, in training
    dropout: float = 0.1
    #: characters labelled per chunk of a paragraph
    window: int = 256
    #: characters of text read on either side of a chunk, for context
    context: int = 32
    #: characters seen fewer times in the training text are unknown
    min_char_count: int = 2
    #: Adam's learning rate
    learning_rate: float = 3e-3
    #: chunks per training step
    batch: int = 16
    #: epochs (the best on the development text is kept)
    epochs: int = 20
    #: characters an epoch reads at least: a short training text is read several times per epoch
    #: (cut elsewhere each time), so that a small treebank gets as many updates as a large one
    epoch_characters: int = 500_000
    #: epochs without improvement on the development text before training stops
    patience: int = 4


@dataclass
class LemmatizerConfig:
    """The lemmatizer (:mod:`kgparser.model.lemmatizer`): the LEMMA class of the words
    the lemma dictionary does not know, from the vectors the LEMMA head reads and a
    character BiLSTM of its own; trained after the parser's last epoch on the
    finished network (the best epoch on ``data.dev`` kept) and stored in the
    checkpoint.  Needs ``model.tagger.lemma``."""

    #: train it (``kgparser train``); without one, the joint tagger's LEMMA head decides unseen words
    enabled: bool = False
    #: size of a character's embedding
    char_dim: int = 64
    #: character BiLSTM state size, each direction
    char_hidden: int = 256
    #: size of the tanh hidden layer
    hidden: int = 256
    #: dropout on the hidden layer's input and output, in training
    dropout: float = 0.3
    #: Adam's learning rate
    learning_rate: float = 1e-3
    #: words per training step
    batch: int = 64
    #: epochs (the best on the development data is kept)
    epochs: int = 15


@dataclass
class TrainingConfig:
    epochs: int = 30
    oracle: str = "dynamic"
    #: sentences per batch (one BiLSTM call, states advanced in lock-step)
    batch_size: int = 8
    #: hinge margin between the best correct and the best wrong transition
    margin: float = 1.0
    #: error exploration starts after this many epochs (dynamic oracles)
    explore_after_epochs: int = 1
    #: aggressive exploration: follow a wrong action within the margin with this probability
    p_agg: float = 0.1
    #: trees the system cannot build: skip them or train on them with the dynamic oracle
    unbuildable: str = "skip"
    lr: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.9
    #: gradient clipping by global norm (0 disables)
    clip: float = 5.0
    #: evaluate and save an exponential moving average of the weights with this decay (0: off)
    ema_decay: float = 0.0
    #: write TensorBoard event files
    tensorboard: bool = True
    #: progress bars on stderr
    progress: bool = True


@dataclass
class Config:
    output_dir: str = "runs/default"
    seed: int = 1
    device: str = "cpu"
    #: torch intra-op threads (0: leave torch's default, one per core; with other jobs on the
    #: cores, several threads stall each other at every LSTM step: docs/history/training-and-parsing-speed.md,
    #: "Parsing on a busy machine")
    threads: int = 1
    data: DataConfig = field(default_factory=DataConfig)
    system: SystemConfig = field(default_factory=SystemConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    lemmatizer: LemmatizerConfig = field(default_factory=LemmatizerConfig)

    def to_dict(self) -> dict:
        """Plain nested dict (YAML/JSON/checkpoint-friendly)."""
        return dataclasses.asdict(self)

    def save(self, path: str | Path) -> None:
        from .io.atomic import write_text

        write_text(path, yaml.safe_dump(self.to_dict(), sort_keys=False))


_CHOICES = {
    "training.oracle": ORACLES,
    "training.unbuildable": UNBUILDABLE_POLICIES,
    "model.pos": POS_COLUMNS,
    "model.tag_input": TAG_INPUTS,
    "decoding.root_choice": ROOT_CHOICES,
    "model.encoder.pooling": POOLINGS,
    "device": DEVICES,
}
_NON_NEGATIVE = {
    "seed", "threads", "model.word_dim", "model.pos_dim", "model.char_dim", "model.lstm_dropout",
    "model.word_dropout", "model.pretrained.max_extra_words",
    "training.explore_after_epochs", "training.margin", "training.clip",
    "model.tagger.hidden", "model.tagger.loss_weight", "model.encoder.layers", "model.encoder.overlap",
    "tokenizer.context", "tokenizer.min_char_count", "tokenizer.patience", "tokenizer.epoch_characters",
}
#: a run trains at least one epoch on at least one sentence (``data.max_train_sentences: null``: all)
_POSITIVE = {
    "model.char_hidden", "model.lstm_layers", "model.lstm_hidden", "model.mlp_hidden",
    "training.batch_size", "training.lr", "training.epochs", "data.max_train_sentences",
    "model.encoder.dim", "model.encoder.window", "model.encoder.lr",
    "tokenizer.char_dim", "tokenizer.class_dim", "tokenizer.hidden", "tokenizer.layers", "tokenizer.window",
    "tokenizer.learning_rate", "tokenizer.batch", "tokenizer.epochs",
    "lemmatizer.char_dim", "lemmatizer.char_hidden", "lemmatizer.hidden", "lemmatizer.learning_rate",
    "lemmatizer.batch", "lemmatizer.epochs",
}
_DATA_PATHS = ("train", "dev", "test")


#: integers must fit in 64 bits (torch refuses larger seeds, sizes...)
_INT_LIMIT = 2 ** 63
#: characters no file name (and no UTF-8 file) can hold; YAML escapes can write them
_UNUSABLE_CHARACTER = re.compile("[\0\ud800-\udfff]")


def _describe(value: Any) -> str:
    """Type and (shortened) value, for messages."""
    try:
        text = repr(value)
    except ValueError:  # an integer of over 4300 digits
        text = "(too long to show)"
    return f"{type(value).__name__} {text if len(text) <= 80 else text[:77] + '...'}"


_EXPECTED = {bool: "true/false", int: "an integer", float: "a number", str: "a string", dict: "a mapping"}


def _check_scalar(value: Any, kind: type, where: str) -> Any:
    if kind not in _EXPECTED:
        raise TypeError(f"unsupported config type {kind}")
    if not _is_kind(value, kind):
        raise ConfigError(f"{where}: expected {_EXPECTED[kind]}, got {_describe(value)}")
    problem = _bad_value(value, kind)
    if problem:
        raise ConfigError(f"{where}: {problem}")
    return float(value) if kind is float else dict(value) if kind is dict else value


def _is_kind(value: Any, kind: type) -> bool:
    """``value`` is of config type ``kind`` (an int is a float; a bool is no number)."""
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind) and (kind is bool or not isinstance(value, bool))


def _bad_value(value: Any, kind: type) -> str | None:
    """What is wrong with a value of the right type, or None."""
    if kind in (int, float) and isinstance(value, int) and abs(value) >= _INT_LIMIT:
        return f"number out of range (at most {_INT_LIMIT - 1} in size)"
    if kind is float and not math.isfinite(value):
        return f"expected a finite number, got {value!r}"
    if kind is str and _UNUSABLE_CHARACTER.search(value):
        return f"{_describe(value)} contains a NUL or an unpaired surrogate character"
    return None


def _build(cls: type, raw: Any, prefix: str, source: str):
    """Instantiate dataclass ``cls`` from ``raw``, validating every key."""
    if raw is None:
        raw = {}
    where = f"{source}: {prefix or 'top level'}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping, got {_describe(raw)}")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    for key in raw:
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            path = f"{prefix}.{key}" if prefix else str(key)
            raise ConfigError(f"{source}: unknown key {path!r}{hint}; known keys here: {', '.join(names)}")
    values = {}
    for name in names:
        if name not in raw:
            continue
        path = f"{prefix}.{name}" if prefix else name
        kind = hints[name]
        optional = typing.get_origin(kind) is typing.Union and type(None) in typing.get_args(kind)
        if optional:
            kind = next(a for a in typing.get_args(kind) if a is not type(None))
        value = raw[name]
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            values[name] = _build(kind, value, path, source)
        elif value is None:
            if not optional:
                raise ConfigError(f"{source}: {path}: may not be null")
            values[name] = None
        else:
            values[name] = _check_scalar(value, kind, f"{source}: {path}")
    return cls(**values)


def _validate(config: Config, source: str) -> None:
    for path, choices in _CHOICES.items():
        value = _get(config, path)
        if value not in choices:
            raise ConfigError(f"{source}: {path}: {value!r} is not one of {', '.join(choices)}")
    for path in _NON_NEGATIVE:
        value = _get(config, path)
        if value is not None and value < 0:
            raise ConfigError(f"{source}: {path}: must be >= 0, got {value!r}")
    for path in _POSITIVE:
        if _get(config, path) is not None and _get(config, path) <= 0:
            raise ConfigError(f"{source}: {path}: must be > 0, got {_get(config, path)!r}")
    if not 0.0 <= config.training.p_agg <= 1.0:
        raise ConfigError(f"{source}: training.p_agg: must be within [0, 1], got {config.training.p_agg!r}")
    if not 0.0 <= config.model.pos_dropout <= 1.0:
        raise ConfigError(f"{source}: model.pos_dropout: must be within [0, 1], got {config.model.pos_dropout!r}")
    for path in ("model.input_dropout", "model.lstm_dropout", "model.recurrent_dropout", "training.ema_decay",
                 "tokenizer.dropout", "lemmatizer.dropout"):
        if not 0.0 <= _get(config, path) < 1.0:
            raise ConfigError(f"{source}: {path}: must be within [0, 1), got {_get(config, path)!r}")
    _validate_tagging(config.model, config.lemmatizer, source)
    _validate_encoder(config.model.encoder, source)
    from .transitions import system_class

    try:
        cls = system_class(config.system.name)
    except ValueError as exc:
        raise ConfigError(f"{source}: system.name: {exc}") from None
    import inspect

    known = [name for name, p in inspect.signature(cls.__init__).parameters.items()
             if name != "self" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for key in config.system.options:
        if key not in known:
            raise ConfigError(f"{source}: system.options.{key}: {config.system.name} has no option {key!r} "
                              f"(options: {', '.join(known) or 'none'})")
    try:
        cls(**config.system.options)
    except (TypeError, ValueError, KgparserError) as exc:
        raise ConfigError(f"{source}: system.options: {exc}") from None


def _validate_tagging(model: ModelConfig, lemmatizer: LemmatizerConfig, source: str) -> None:
    """The tag input and the tagger must fit together: a tagger trained on a BiLSTM
    that reads the gold column it predicts would learn to copy it, and predicted tags
    need a lower layer to tag from (the hierarchical design of kgparser/model/network.py)."""
    predicts_pos = getattr(model.tagger, model.pos)
    if model.tag_input == "gold" and model.pos_dim and predicts_pos:
        raise ConfigError(f"{source}: model.tagger.{model.pos}: the tagger would read the gold {model.pos.upper()} "
                          f"it predicts (model.tag_input: gold); set model.tag_input: predicted (or soft, or none)")
    if model.tagger.lemma_chars and not (model.tagger.lemma and model.char_dim):
        raise ConfigError(f"{source}: model.tagger.lemma_chars needs model.tagger.lemma: true and a character "
                          f"model (model.char_dim > 0)")
    if lemmatizer.enabled and not model.tagger.lemma:
        raise ConfigError(f"{source}: lemmatizer.enabled needs model.tagger.lemma: true (its classes are the "
                          f"LEMMA head's)")
    if model.tag_input in ("predicted", "soft"):
        if not predicts_pos:
            raise ConfigError(f"{source}: model.tag_input: {model.tag_input} needs the tagger to predict the "
                              f"model.pos column: set model.tagger.{model.pos}: true")
        if model.lstm_layers < 2 or not model.pos_dim:
            raise ConfigError(f"{source}: model.tag_input: {model.tag_input} needs model.lstm_layers >= 2 and "
                              f"model.pos_dim > 0 (the tagger reads the first BiLSTM layer, the upper layers "
                              f"its tags); or use model.tag_input: none")


def _validate_encoder(encoder: EncoderConfig, source: str) -> None:
    """Windows must advance: the overlap is shorter than the window.  Fine-tuning
    needs transformer layers (which train in float32 also with ``quantize``: they
    are quantized once trained, :mod:`kgparser.model.int8`)."""
    if encoder.finetune and encoder.layers == 0:
        raise ConfigError(f"{source}: model.encoder.finetune: needs transformer layers to train "
                          f"(model.encoder.layers is 0: the token-embedding table alone, which stays frozen)")
    if encoder.window is not None and encoder.overlap is not None and encoder.overlap >= encoder.window:
        raise ConfigError(f"{source}: model.encoder.overlap: must be < model.encoder.window ({encoder.window}), "
                          f"got {encoder.overlap}")


def _get(config: Any, path: str) -> Any:
    for part in path.split("."):
        config = getattr(config, part)
    return config


#: keys that have moved, old -> new: a config file, an override or a grid file that
#: sets the old key has its value moved to the new one with a warning; a checkpoint
#: silently, so an old model keeps its choices
MOVED_KEYS = {"model.root_choice": "decoding.root_choice"}


def config_keys(cls: type = Config, prefix: str = "") -> dict[str, Any]:
    """Every dotted key of the schema below ``cls``, sections included, with its
    type (``model``, ``model.encoder``, ``model.encoder.path``...)."""
    hints = typing.get_type_hints(cls)
    keys = {}
    for name in (f.name for f in dataclasses.fields(cls)):
        keys[prefix + name] = hints[name]
        if dataclasses.is_dataclass(hints[name]):
            keys.update(config_keys(hints[name], f"{prefix}{name}."))
    return keys


def key_problem(key: str) -> str | None:
    """What is wrong with dotted ``key`` as a config key, with the nearest keys; None
    for a key of the schema, an entry of a mapping (``system.options.NAME``) or a moved key."""
    keys = config_keys()
    parts = key.split(".")
    if key in keys or key in MOVED_KEYS or any(keys.get(".".join(parts[:i])) is dict for i in range(1, len(parts))):
        return None
    close = difflib.get_close_matches(key, keys, n=3)
    return f"unknown config key {key!r}" + (f" (nearest: {', '.join(close)})" if close else "")


def moved_key(key: str, source: str) -> str:
    """Dotted ``key`` as it is named now: where it has moved, the new key, with a
    warning naming ``source``."""
    new = MOVED_KEYS.get(key)
    if new is None:
        return key
    warnings.warn(f"{source}: {key} is read as {new}; write {new}", FutureWarning, stacklevel=3)
    return new


def _move_keys(raw: Any, source: str, warn: bool) -> Any:
    """``raw`` (a config mapping, left unchanged) with the values of moved keys
    under their new keys; the two keys set to different values are an error."""
    for old, new in MOVED_KEYS.items():
        owner, name = _owner(raw, old)
        if owner is None or name not in owner:
            continue
        target, new_name = _owner(raw, new)
        if target is not None and target.get(new_name, owner[name]) != owner[name]:
            raise ConfigError(f"{source}: {old} is {owner[name]!r} but {new} is {target[new_name]!r}; "
                              f"write only {new} ({old} is its old name)")
        if warn:
            moved_key(old, source)
        raw = copy.deepcopy(raw)
        copied_owner = _owner(raw, old)[0]
        assert copied_owner is not None  # a copy of ``owner``, found above
        _set(raw, new.split("."), copied_owner.pop(name), source)
    return raw


def _owner(raw: Any, key: str) -> tuple[dict | None, str]:
    """The mapping of ``raw`` that holds dotted ``key`` (None where there is none
    on the way) and the key's last part."""
    *parents, name = key.split(".")
    for part in parents:
        raw = raw.get(part) if isinstance(raw, dict) else None
    return (raw if isinstance(raw, dict) else None), name


def _set(raw: dict, parts: list[str], value: Any, source: str) -> None:
    """Set ``value`` at key path ``parts`` of ``raw``, creating sub-mappings."""
    node = raw
    for part in parts[:-1]:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"{source}: {part!r} is not a mapping")
        node = child
    node[parts[-1]] = value


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"a.b=value"`` -> (["a", "b"], YAML-parsed value)."""
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected KEY.PATH=VALUE")
    key, _, value = text.partition("=")
    parts = [p for p in key.strip().split(".")]
    if not all(parts):
        raise ConfigError(f"--set {text!r}: empty key path")
    return parts, parse_yaml(value, f"--set {text!r}", ConfigError) if value.strip() else None


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """Set each ``a.b=value`` override into the raw mapping (creating sub-mappings);
    a moved key sets its new key, with a warning."""
    for text in overrides or ():
        parts, value = parse_override(text)
        source = f"--set {text!r}"
        _set(raw, moved_key(".".join(parts), source).split("."), value, source)
    return raw


def config_from_dict(raw: dict, source: str = "<config>", base_dir: str | Path | None = None,
                     cwd_keys: frozenset = frozenset()) -> Config:
    """Validate a raw mapping; relative input paths are resolved against ``base_dir``
    (those named in ``cwd_keys``, set on the command line, against the current directory).
    Moved keys are read with a warning."""
    config = _build(Config, _move_keys(raw, source, warn=True), "", source)
    _validate(config, source)
    if base_dir is not None:
        _resolve_paths(config, Path(base_dir), cwd_keys)
    return config


#: config keys holding input paths, relative to the config file that names them
INPUT_PATHS = tuple(f"data.{name}" for name in _DATA_PATHS) + ("model.pretrained.path", "model.encoder.path")
#: input paths that may instead name a model on the Hugging Face hub: resolved only where the folder exists
_HUB_PATHS = ("model.encoder.path",)


def resolved_input_path(key: str, value: str, root: Path) -> str:
    """The value of input path ``key`` (one of :data:`INPUT_PATHS`) resolved
    against the folder ``root``; absolute paths, and hub names that name no
    folder there, stay as they are."""
    if Path(value).is_absolute() or \
            (key in _HUB_PATHS and not (root / value).exists() and _could_be_hub_name(value)):
        return value
    return str((root / value).resolve())


def _resolve_paths(config: Config, base: Path, cwd_keys: frozenset) -> None:
    for path in INPUT_PATHS:
        value = _get(config, path)
        if value:
            owner_path, _, attr = path.rpartition(".")
            setattr(_get(config, owner_path), attr,
                    resolved_input_path(path, value, Path.cwd() if path in cwd_keys else base))


def _could_be_hub_name(value: str) -> bool:
    """Whether ``value`` has the form of a Hugging Face hub id (``name`` or
    ``namespace/name``) rather than of a relative path (``../models/e5``)."""
    return not value.startswith(".") and value.count("/") <= 1


def load_config(path: str | Path, overrides: list[str] | None = None) -> Config:
    """Read, override and validate a YAML config file."""
    path = Path(path)
    raw = parse_yaml(read_text_file(path, ConfigError, "config"), str(path), ConfigError)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: top level: expected a mapping, got {_describe(raw)}")
    # the file's moved keys move before the overrides, which may set their new keys
    raw = apply_overrides(_move_keys(raw, str(path), warn=True), overrides or [])
    cwd_keys = frozenset(".".join(parse_override(text)[0]) for text in overrides or ())
    return config_from_dict(raw, str(path), base_dir=path.parent, cwd_keys=cwd_keys)


def config_from_saved(data: dict) -> Config:
    """Rebuild a config stored in a checkpoint (already resolved); keys that have
    moved since it was saved move silently."""
    source = "<checkpoint config>"
    return config_from_dict(_move_keys(data, source, warn=False), source)
