"""Size settings far too large for the memory are one line naming the setting
and the memory, before anything is allocated (issue 36)."""
import pytest
import torch
from test_model import TINY_MODEL, tiny_sentences

from kgparser.config import config_from_dict
from kgparser.model import Model, memory
from kgparser.model.memory import ModelTooLarge, weight_bytes_lower_bound

torch.set_num_threads(1)


def _config(**model):
    return config_from_dict({"model": dict(TINY_MODEL, **model)})


@pytest.mark.parametrize("model, share", [
    ({}, 0.85), ({"lstm_layers": 3}, 0.9), ({"separate_label_mlp": True}, 0.85), ({"word_dim": 0}, 0.85),
    ({"char_dim": 8, "tag_input": "none", "tagger": {"upos": True, "hidden": 10}}, 0.2),
])
def test_the_bound_never_exceeds_the_weights_built(model, share):
    """A lower bound, close to the weights where the BiLSTM and MLP dominate
    (the tiny character model here is not counted)."""
    built = Model.build(_config(**model), tiny_sentences(6))
    weights = sum(p.numel() * p.element_size() for p in built.network.parameters())
    bound = weight_bytes_lower_bound(built.config.model, len(built.vocabs.words), built.n_slots)
    assert share * weights < bound <= weights


@pytest.mark.parametrize("setting, value, needed", [
    ("word_dim", 10 ** 11, "at least 50.6 TiB"),
    ("lstm_hidden", 10 ** 8, "at least 284.2 PiB"),
    ("lstm_layers", 10 ** 9, "at least 22.4 TiB"),
])
def test_a_model_too_large_for_the_memory_names_the_setting(monkeypatch, setting, value, needed):
    monkeypatch.setattr(memory, "available_memory", lambda: 2 ** 30)
    monkeypatch.setattr("kgparser.model.Network", lambda *a, **k: pytest.fail("the network was built"))
    with pytest.raises(ModelTooLarge) as refused:
        Model.build(_config(**{setting: value}), tiny_sentences(6))
    assert str(refused.value) == (f"model.{setting}={value}: the network's weights would need {needed} of "
                                  f"memory, more than the 1.0 GiB available; choose a smaller value")


def test_a_model_that_fits_is_built(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: None)  # unknown: nothing is refused
    assert isinstance(Model.build(_config(word_dim=64), tiny_sentences(6)), Model)
