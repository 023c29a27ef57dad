"""Pretrained vectors: the text formats (header or not, .gz), selection, lookup
by form then normalized form, and a model that uses them."""
import gzip

import numpy as np
import pytest
import torch

from kgparser.config import config_from_dict
from kgparser.model.embeddings import EmbeddingsError, lookup_id, read_vectors
from kgparser.training.run import build_model
from test_model import TINY_MODEL, tiny_sentences

torch.set_num_threads(1)

ROWS = [("the", [0.1, 0.2, 0.3]), ("dog", [1.0, -1.0, 0.5]), ("0000", [2.0, 2.0, 2.0]),
        ("paris", [0.0, 0.5, 1.0]), ("rare", [9.0, 9.0, 9.0])]


def write_vectors(path, header: bool):
    lines = [f"{len(ROWS)} 3"] if header else []
    lines += [f"{word} {' '.join(str(x) for x in vector)}" for word, vector in ROWS]
    text = "\n".join(lines) + "\n"
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name, header", [("v.txt", False), ("v.vec", True), ("v.txt.gz", True),
                                          ("w.gz", False)])
def test_reads_every_text_format(tmp_path, name, header):
    words, matrix = read_vectors(write_vectors(tmp_path / name, header), wanted=["Dog", "Paris"],
                                 max_extra_words=1)
    assert words == ["the", "dog", "paris"]  # wanted (normalized) + the first other word
    assert matrix.dtype == np.float32 and matrix.shape == (3, 3)
    assert np.allclose(matrix[1], [1.0, -1.0, 0.5])


def test_lookup_by_form_then_normalized_form():
    index = {"dog": 2, "0000": 3, "Dog": 4}
    assert lookup_id(index, "Dog", 1) == 4
    assert lookup_id(index, "DOG", 1) == 2
    assert lookup_id(index, "1984", 1) == 3
    assert lookup_id(index, "cat", 1) == 1


def test_bad_files_are_reported(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("a 1 2 3\nb 1 2\n", encoding="utf-8")
    with pytest.raises(EmbeddingsError, match="bad.txt, line 2"):
        read_vectors(bad, wanted=["b"])
    with pytest.raises(EmbeddingsError, match="cannot read"):
        read_vectors(tmp_path / "absent.txt")


def test_model_uses_pretrained_vectors(tmp_path):
    path = write_vectors(tmp_path / "v.txt", header=False)
    sentences = tiny_sentences(3)
    config = config_from_dict({"model": {**TINY_MODEL, "pretrained": {"path": str(path), "max_extra_words": 2,
                                                                     "freeze": True}}})
    model = build_model(config, sentences)
    assert model.ext_words == ["the", "dog"] and model.ext_dim == 3
    weight = model.network.ext_emb.weight
    assert not weight.requires_grad and torch.allclose(weight[3], torch.tensor([1.0, -1.0, 0.5]))
    inputs = model.inputs([s for s in sentences])
    assert inputs["ext"].shape == inputs["words"].shape
    restored = type(model).from_data(model.to_data())
    assert restored.ext_words == model.ext_words
    assert torch.equal(restored.network.ext_emb.weight, weight)
