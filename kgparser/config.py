"""Experiment configuration: one YAML file -> a validated, typed :class:`Config`.

The schema is a tree of dataclasses with defaults (Kiperwasser & Goldberg 2016
sizes).  Unknown keys, wrong types and bad choices raise :class:`ConfigError`
naming the file and the dotted key path.  Command-line overrides use the same
paths: ``--set training.epochs=5 --set model.char_dim=0``; their values are
parsed as YAML scalars (``5``, ``true``, ``null``, ``[a, b]``).

Relative data paths are resolved against the directory of the YAML file, so a
config keeps working from any current directory; ``output_dir`` is relative
to the current directory (where the user runs ``kgparser train``).
"""
from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from .errors import KgparserError

ORACLES = ("static", "dynamic", "static-dynamic")
UNBUILDABLE_POLICIES = ("skip", "dynamic")
POS_COLUMNS = ("upos", "xpos")
DEVICES = ("cpu", "cuda")


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
    #: torch intra-op threads (0: leave torch's default)
    threads: int = 0
    data: DataConfig = field(default_factory=DataConfig)
    system: SystemConfig = field(default_factory=SystemConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)

    def to_dict(self) -> dict:
        """Plain nested dict (YAML/JSON/checkpoint-friendly)."""
        return dataclasses.asdict(self)

    def save(self, path: str | Path) -> None:
        from .atomic import write_text

        write_text(path, yaml.safe_dump(self.to_dict(), sort_keys=False))


_CHOICES = {
    "training.oracle": ORACLES,
    "training.unbuildable": UNBUILDABLE_POLICIES,
    "model.pos": POS_COLUMNS,
    "device": DEVICES,
}
_NON_NEGATIVE = {
    "seed", "threads", "model.word_dim", "model.pos_dim", "model.char_dim", "model.lstm_dropout",
    "model.word_dropout", "model.pretrained.max_extra_words", "training.epochs",
    "training.explore_after_epochs", "training.margin", "training.clip", "data.max_train_sentences",
}
_POSITIVE = {
    "model.char_hidden", "model.lstm_layers", "model.lstm_hidden", "model.mlp_hidden",
    "training.batch_size", "training.lr",
}
_DATA_PATHS = ("train", "dev", "test")


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _check_scalar(value: Any, kind: type, where: str) -> Any:
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true/false, got {_describe(value)}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {_describe(value)}")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {_describe(value)}")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {_describe(value)}")
        return value
    if kind is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a mapping, got {_describe(value)}")
        return dict(value)
    raise TypeError(f"unsupported config type {kind}")


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
            import difflib

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
        if dataclasses.is_dataclass(kind):
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
        if _get(config, path) <= 0:
            raise ConfigError(f"{source}: {path}: must be > 0, got {_get(config, path)!r}")
    if not 0.0 <= config.training.p_agg <= 1.0:
        raise ConfigError(f"{source}: training.p_agg: must be within [0, 1], got {config.training.p_agg!r}")
    if not 0.0 <= config.model.pos_dropout <= 1.0:
        raise ConfigError(f"{source}: model.pos_dropout: must be within [0, 1], got {config.model.pos_dropout!r}")
    for path in ("model.input_dropout", "model.lstm_dropout", "model.recurrent_dropout", "training.ema_decay"):
        if not 0.0 <= _get(config, path) < 1.0:
            raise ConfigError(f"{source}: {path}: must be within [0, 1), got {_get(config, path)!r}")
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


def _get(config: Any, path: str) -> Any:
    for part in path.split("."):
        config = getattr(config, part)
    return config


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"a.b=value"`` -> (["a", "b"], YAML-parsed value)."""
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected KEY.PATH=VALUE")
    key, _, value = text.partition("=")
    parts = [p for p in key.strip().split(".")]
    if not all(parts):
        raise ConfigError(f"--set {text!r}: empty key path")
    try:
        parsed = yaml.safe_load(value) if value.strip() else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {text!r}: cannot parse value: {exc}") from None
    return parts, parsed


def apply_overrides(raw: dict, overrides: list[str]) -> dict:
    """Set each ``a.b=value`` override into the raw mapping (creating sub-mappings)."""
    for text in overrides or ():
        parts, value = parse_override(text)
        node = raw
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError(f"--set {text!r}: {part!r} is not a mapping")
            node = child
        node[parts[-1]] = value
    return raw


def config_from_dict(raw: dict, source: str = "<config>", base_dir: str | Path | None = None,
                     cwd_keys: frozenset = frozenset()) -> Config:
    """Validate a raw mapping; relative input paths are resolved against ``base_dir``
    (those named in ``cwd_keys``, set on the command line, against the current directory)."""
    config = _build(Config, raw, "", source)
    _validate(config, source)
    if base_dir is not None:
        _resolve_paths(config, Path(base_dir), cwd_keys)
    return config


_INPUT_PATHS = tuple(f"data.{name}" for name in _DATA_PATHS) + ("model.pretrained.path",)


def _resolve_paths(config: Config, base: Path, cwd_keys: frozenset) -> None:
    for path in _INPUT_PATHS:
        value = _get(config, path)
        if value and not Path(value).is_absolute():
            root = Path.cwd() if path in cwd_keys else base
            owner_path, _, attr = path.rpartition(".")
            setattr(_get(config, owner_path), attr, str((root / value).resolve()))


def load_config(path: str | Path, overrides: list[str] | None = None) -> Config:
    """Read, override and validate a YAML config file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: top level: expected a mapping, got {_describe(raw)}")
    apply_overrides(raw, overrides or [])
    cwd_keys = frozenset(".".join(parse_override(text)[0]) for text in overrides or ())
    return config_from_dict(raw, str(path), base_dir=path.parent, cwd_keys=cwd_keys)


def config_from_saved(data: dict) -> Config:
    """Rebuild a config stored in a checkpoint (already resolved)."""
    return config_from_dict(data, "<checkpoint config>")
