"""YAML config: defaults, validation errors naming file and key, overrides, saving."""
from pathlib import Path

import pytest
import yaml

from kgparser.config import Config, ConfigError, config_from_saved, load_config

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_follow_kiperwasser_goldberg(tmp_path):
    config = load_config(write(tmp_path, "data: {train: t.conllu}\n"))
    assert (config.model.word_dim, config.model.pos_dim, config.model.lstm_layers) == (100, 25, 2)
    assert (config.model.lstm_hidden, config.model.mlp_hidden, config.model.word_dropout) == (125, 100, 0.25)
    assert (config.training.oracle, config.training.lr, config.training.p_agg) == ("dynamic", 1e-3, 0.1)
    assert config.system.name == "arc-hybrid"
    assert config.data.train == str((tmp_path / "t.conllu").resolve())


@pytest.mark.parametrize("text, fragments", [
    ("training: {epoch: 3}\n", ["exp.yaml", "training.epoch", "did you mean 'epochs'"]),
    ("bogus: 1\n", ["exp.yaml", "'bogus'"]),
    ("training: {epochs: three}\n", ["exp.yaml", "training.epochs", "integer"]),
    ("training: {epochs: 2.5}\n", ["training.epochs", "integer"]),
    ("model: {lstm_hidden: true}\n", ["model.lstm_hidden", "integer"]),
    ("training: {oracle: dynamc}\n", ["training.oracle", "dynamc"]),
    ("system: {name: arc-hybrd}\n", ["system.name", "arc-hybrid"]),
    ("system: {name: arc-hybrid, options: {nope: 1}}\n", ["system.options", "nope"]),
    ("model: [1, 2]\n", ["exp.yaml", "model", "mapping"]),
    ("training: {p_agg: 1.5}\n", ["training.p_agg"]),
    ("training: {batch_size: 0}\n", ["training.batch_size", "> 0"]),
    ("model: {input_dropout: 1.0}\n", ["model.input_dropout", "[0, 1)"]),
    ("model: {recurrent_dropout: -0.1}\n", ["model.recurrent_dropout", "[0, 1)"]),
    ("data: {train: [a]}\n", ["data.train", "string"]),
    ("[1, 2]\n", ["exp.yaml", "mapping"]),
    ("training: {epochs: 3\n", ["exp.yaml", "invalid YAML"]),
])
def test_errors_name_the_file_and_the_key(tmp_path, text, fragments):
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, text))
    for fragment in fragments:
        assert fragment in str(error.value)


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.yaml")


def test_overrides(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "exp.yaml"
    path.write_text("data: {train: a.conllu, dev: b.conllu}\ntraining: {epochs: 3}\n", encoding="utf-8")
    config = load_config(path, ["training.epochs=7", "model.char_dim=20", "data.dev=c.conllu",
                                "system.options={}", "data.test=null"])
    assert config.training.epochs == 7 and config.model.char_dim == 20
    assert config.data.train == str((tmp_path / "sub" / "a.conllu").resolve())
    assert config.data.dev == str((tmp_path / "c.conllu").resolve())  # command line: relative to cwd
    assert config.data.test is None
    with pytest.raises(ConfigError, match="--set"):
        load_config(path, ["training.epochs"])
    with pytest.raises(ConfigError, match="training.epochs"):
        load_config(path, ["training.epochs=x"])
    with pytest.raises(ConfigError, match="unknown key 'training.nope'"):
        load_config(path, ["training.nope=1"])


def test_saved_config_round_trips(tmp_path):
    config = load_config(write(tmp_path, "training: {epochs: 4}\nsystem: {name: arc-hybrid}\n"))
    config.save(tmp_path / "saved.yaml")
    again = load_config(tmp_path / "saved.yaml")
    assert again == config
    assert config_from_saved(yaml.safe_load((tmp_path / "saved.yaml").read_text())) == config
    assert Config().to_dict()["training"]["epochs"] == 30


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_shipped_configs_are_valid(path):
    config = load_config(path)
    assert config.data.train and config.data.dev


def test_one_config_per_system_and_oracle():
    from kgparser.transitions import get_system, system_names

    names = {p.stem for p in CONFIGS}
    for system in system_names():
        dynamic = "static-dynamic" if get_system(system).static_actions else "dynamic"
        assert {f"{system}-static", f"{system}-{dynamic}"} <= names
    assert "quickstart" in names
