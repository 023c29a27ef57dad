"""The ``decoding`` section of the config and its moved key: ``model.root_choice``
is still read (from files and ``--set`` with a warning, from checkpoints silently)
as ``decoding.root_choice``."""
import re
import warnings

import pytest

from kgparser.config import Config, ConfigError, config_from_saved, load_config

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)


def write(tmp_path, text: str):
    path = tmp_path / "exp.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def load_silently(*args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_config(*args)


def test_decoding_root_choice_is_read_without_a_warning(tmp_path):
    assert Config().decoding.root_choice == "scored"
    assert load_silently(write(tmp_path, "decoding: {root_choice: last}\n")).decoding.root_choice == "last"
    assert load_silently(write(tmp_path, "{}\n"), ["decoding.root_choice=first"]).decoding.root_choice == "first"


def test_a_bad_root_choice_names_the_file_and_the_key(tmp_path):
    with pytest.raises(ConfigError, match="exp.yaml: decoding.root_choice: 'middle' is not one of scored"):
        load_config(write(tmp_path, "decoding: {root_choice: middle}\n"))


def test_the_old_key_in_a_file_moves_with_a_warning_naming_the_file(tmp_path):
    path = write(tmp_path, "model: {root_choice: last}\n")
    with pytest.warns(FutureWarning, match=re.escape(f"{path}: model.root_choice is read as decoding.root_choice; "
                                                     "write decoding.root_choice")):
        config = load_config(path)
    assert config.decoding.root_choice == "last"
    assert "root_choice" not in config.to_dict()["model"]


def test_the_old_key_in_an_override_moves_with_a_warning_naming_it(tmp_path):
    path = write(tmp_path, "decoding: {root_choice: first}\n")
    with pytest.warns(FutureWarning, match=r"--set 'model.root_choice=multi': .*write decoding.root_choice"):
        assert load_config(path, ["model.root_choice=multi"]).decoding.root_choice == "multi"


def test_an_override_of_the_new_key_replaces_the_old_key_of_the_file(tmp_path):
    with pytest.warns(FutureWarning, match="exp.yaml: model.root_choice"):
        config = load_config(write(tmp_path, "model: {root_choice: first}\n"), ["decoding.root_choice=last"])
    assert config.decoding.root_choice == "last"


def test_both_keys_with_different_values_are_an_error_naming_both(tmp_path):
    text = "model: {root_choice: first}\ndecoding: {root_choice: last}\n"
    with pytest.raises(ConfigError, match="exp.yaml: model.root_choice is 'first' but decoding.root_choice "
                                          "is 'last'; write only decoding.root_choice"):
        load_config(write(tmp_path, text))
    with pytest.warns(FutureWarning):
        same = load_config(write(tmp_path, "model: {root_choice: last}\ndecoding: {root_choice: last}\n"))
    assert same.decoding.root_choice == "last"


def test_an_old_saved_config_keeps_its_choice_without_a_warning():
    saved = Config().to_dict()
    del saved["decoding"]
    saved["model"]["root_choice"] = "first"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = config_from_saved(saved)
    assert config.decoding.root_choice == "first"
    assert saved["model"]["root_choice"] == "first"  # the checkpoint's own data is left as it was


def test_a_new_saved_config_round_trips():
    config = Config()
    config.decoding.root_choice = "multi"
    assert config_from_saved(config.to_dict()) == config


def test_an_old_checkpoint_loads_with_its_choice():
    from test_root_choice import tiny_covington_model

    from kgparser.model import Model

    data = tiny_covington_model().to_data()
    del data["config"]["decoding"]
    data["config"]["model"]["root_choice"] = "last"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Model.from_data(data).config.decoding.root_choice == "last"
