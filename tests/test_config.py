"""YAML config: defaults, validation errors naming file and key, overrides, saving."""
import re
import sys
from pathlib import Path

import pytest
import yaml

from kgparser.config import Config, ConfigError, config_from_saved, load_config

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

#: Python refuses to read integers of over 4300 digits (3.10.7 and later)
LIMITED_INT_STRINGS = pytest.mark.skipif(not hasattr(sys, "get_int_max_str_digits"), reason="no digit limit")
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


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_shipped_config_trains_a_model_that_parses_untagged_text(path):
    """Issue 21: no shipped recipe needs gold tags at parse time."""
    model = load_config(path).model
    assert model.tag_input in ("predicted", "soft") and model.tagger.upos


def test_one_config_per_system_and_oracle():
    from kgparser.transitions import get_system, system_names

    names = {p.stem for p in CONFIGS}
    for system in system_names():
        dynamic = "static-dynamic" if get_system(system).static_actions else "dynamic"
        assert {f"{system}-static", f"{system}-{dynamic}"} <= names
    assert "quickstart" in names


FLOAT_SPELLINGS = [("1e-4", 1e-4), ("1E-4", 1e-4), ("1e4", 1e4), ("1.5e4", 1.5e4), (".5", 0.5), ("5.", 5.0),
                   ("-1.5e+3", -1500.0), ("+1e3", 1000.0), ("-.5", -0.5), ("1_000.0", 1000.0), ("1.0e-4", 1e-4),
                   ("2", 2.0)]


@pytest.mark.parametrize("spelling, value", FLOAT_SPELLINGS)
def test_every_float_spelling_is_a_number_in_files_and_overrides(tmp_path, spelling, value):
    path = write(tmp_path, f"training:\n  beta1: {spelling}\n  lr: {spelling.lstrip('-')}\n")
    config = load_config(path)
    assert config.training.beta1 == value and config.training.lr == abs(value)
    assert load_config(write(tmp_path, ""), [f"training.beta1={spelling}"]).training.beta1 == value


@pytest.mark.parametrize("spelling, fragment", [
    ("true", "got bool True"), ("yes", "got bool True"), ("1e-", "got str '1e-'"), ("e4", "got str 'e4'"),
    ("1.2.3", "got str '1.2.3'"), ("1:30.5", "got str '1:30.5'"), ("._", "got str '._'"),
    (".inf", "finite number"), ("-.inf", "finite number"), (".nan", "finite number"),
    ("1e400", "finite number"), ("0x" + "f" * 20, "out of range"),
])
def test_non_numbers_for_float_keys_name_the_key_and_the_file(tmp_path, spelling, fragment):
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, f"training: {{beta1: {spelling}}}\n"))
    assert str(error.value).startswith(f"{tmp_path / 'exp.yaml'}: training.beta1: ")
    assert fragment in str(error.value)


def test_integer_keys_stay_integers(tmp_path):
    assert load_config(write(tmp_path, "training: {epochs: 1_000}\n")).training.epochs == 1000
    with pytest.raises(ConfigError, match="training.epochs: expected an integer, got float 1000.0"):
        load_config(write(tmp_path, "training: {epochs: 1e3}\n"))
    with pytest.raises(ConfigError, match="seed: number out of range"):
        load_config(write(tmp_path, "seed: 0x" + "f" * 5000 + "\n"))


@pytest.mark.parametrize("text, fragment", [
    ("seed: 2001-02-30\n", "line 1, column 7: cannot read '2001-02-30' as timestamp"),
    ("seed: !!int x\n", "line 1, column 7: cannot read 'x' as int"),
    ("seed: 0b_\n", "cannot read '0b_' as int"),
    ("seed: !!bool maybe\n", "cannot read 'maybe' as bool"),
    ("seed: !!timestamp soon\n", "cannot read 'soon' as timestamp"),
    ("seed: !!float x\n", "cannot read 'x' as float"),
    pytest.param("seed: " + "1" * 5000 + "\n", "as int (Exceeds the limit", marks=LIMITED_INT_STRINGS),
    ("seed: " + "[" * 2000 + "\n", "nested too deeply"),
    ("seed: 1\n  bad: [\n", "line 2"),
    ("seed: \x01\n", "character #x0001 at position 6"),
])
@pytest.mark.exhaustive
def test_malformed_yaml_is_one_line_naming_file_and_place(tmp_path, text, fragment):
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, text))
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'exp.yaml'}: invalid YAML: ") and "\n" not in message
    assert fragment in message


def test_override_values_with_bad_yaml_name_the_override():
    from kgparser.config import parse_override

    with pytest.raises(ConfigError) as error:
        parse_override("training.lr=[1e-4")
    message = str(error.value)
    assert message.startswith("--set 'training.lr=[1e-4': invalid YAML: line 1") and "\n" not in message
    with pytest.raises(ConfigError, match="cannot read '2001-02-30' as timestamp"):
        parse_override("seed=2001-02-30")


def test_config_files_must_be_utf8_readable_files(tmp_path, monkeypatch):
    path = tmp_path / "exp.yaml"
    path.write_bytes(b"seed: 1\ndata: {train: caf\xe9.conllu}\n")
    with pytest.raises(ConfigError, match=r"exp.yaml, line 2, column 18: config is not valid UTF-8 \(byte 0xe9\)"):
        load_config(path)
    path.write_bytes(b"\xef\xbb\xbfseed: 3\n")
    assert load_config(path).seed == 3
    with pytest.raises(ConfigError, match=f"{tmp_path}: cannot read config: Is a directory"):
        load_config(tmp_path)

    def refuse(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(ConfigError, match="exp.yaml: cannot read config: Permission denied"):
        load_config(path)


@pytest.mark.parametrize("value", [r'"a\0b"', r'"a\ud800b"'])
def test_strings_that_no_file_can_hold_are_refused(tmp_path, value):
    with pytest.raises(ConfigError, match="data.train: str .* contains a NUL or an unpaired surrogate"):
        load_config(write(tmp_path, f"data: {{train: {value}}}\n"))


def test_grid_files_read_floats_as_config_files_do(tmp_path):
    from kgparser.experiments.grid import load_grid, run_config

    write(tmp_path, "data: {train: t.conllu, dev: d.conllu}\n")
    grid = tmp_path / "grid.yaml"
    grid.write_text("base: exp.yaml\nset: {training.lr: 1e-4}\naxes: {seed: [1]}\n", encoding="utf-8")
    loaded = load_grid(grid)
    assert run_config(loaded, loaded.runs[0]).training.lr == 1e-4


@pytest.mark.parametrize("text, fragment", [
    ("model: {encoder: {pooling: last}}", "model.encoder.pooling: 'last' is not one of mean, first"),
    ("model: {encoder: {dim: 0}}", "model.encoder.dim: must be > 0"),
    ("model: {encoder: {layers: -1}}", "model.encoder.layers: must be >= 0"),
    ("model: {encoder: {window: 0}}", "model.encoder.window: must be > 0"),
    ("model: {encoder: {window: 8, overlap: 8}}", "model.encoder.overlap: must be < model.encoder.window (8)"),
    ("model: {encoder: {quantise: true}}", "unknown key 'model.encoder.quantise' (did you mean 'quantize'?)"),
])
def test_encoder_settings_are_checked(tmp_path, text, fragment):
    with pytest.raises(ConfigError, match=re.escape(f"exp.yaml: {fragment}")):
        load_config(write(tmp_path, text))


def test_an_encoder_path_is_a_folder_beside_the_config_or_a_hub_name(tmp_path):
    (tmp_path / "bert").mkdir()
    assert load_config(write(tmp_path, "model: {encoder: {path: bert}}")).model.encoder.path == \
        str((tmp_path / "bert").resolve())
    assert load_config(write(tmp_path, "model: {encoder: {path: FacebookAI/xlm-roberta-base}}")).model.encoder.path \
        == "FacebookAI/xlm-roberta-base"
    # a relative path that names no folder yet stays a path (so the error names the folder), not a hub name
    assert load_config(write(tmp_path, "model: {encoder: {path: ../models/e5}}")).model.encoder.path == \
        str((tmp_path / "../models/e5").resolve())
