"""Pretrained vectors: the text formats (header or not, .gz), spaCy model folders
(read without spaCy), selection, lookup by form then normalized form, and a model
that uses them."""
import gzip
import json
import struct

import numpy as np
import pytest
import torch
from test_model import TINY_MODEL, tiny_sentences

from kgparser.config import config_from_dict
from kgparser.model import Model
from kgparser.model.embeddings import EmbeddingsError, lookup_id, read_vectors, spacy_hash

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
    model = Model.build(config, sentences)
    assert model.ext_words == ["the", "dog"] and model.ext_dim == 3
    weight = model.network.ext_emb.weight
    assert not weight.requires_grad and torch.allclose(weight[3], torch.tensor([1.0, -1.0, 0.5]))
    inputs = model.inputs([s for s in sentences])
    assert inputs.ext.shape == inputs.words.shape
    restored = type(model).from_data(model.to_data())
    assert restored.ext_words == model.ext_words
    assert torch.equal(restored.network.ext_emb.weight, weight)


# keys spaCy gave these strings (its documentation's "coffee"; en_core_web_md's key2row)
SPACY_KEYS = {"coffee": 3197928453018144401, "1-800-398-3128": 11569298891720326864,
              "stitchdown": 17174828082288864859, "FREE-ELECTION": 12128641523698606755}


def test_spacy_hash_is_spacys():
    assert {text: spacy_hash(text) for text in SPACY_KEYS} == SPACY_KEYS


def msgpack_uint_map(pairs: dict[int, int]) -> bytes:
    """msgpack bytes of a map of unsigned integers, each in its smallest encoding."""
    def number(n):
        if n < 0x80:
            return bytes([n])
        for tag, fmt in ((0xCC, ">B"), (0xCD, ">H"), (0xCE, ">I"), (0xCF, ">Q")):
            if n < 1 << (8 * struct.calcsize(fmt)):
                return bytes([tag]) + struct.pack(fmt, n)
    return b"\xde" + struct.pack(">H", len(pairs)) + b"".join(number(k) + number(v) for k, v in pairs.items())


# a spaCy-style vocab: rows shared by case variants, a row no string names, a key with no string
SPACY_ROWS = {"dog": 0, "Dog": 0, "DOG": 0, "cat": 1, "Cat": 1, "house": 2, "a1": 3, "Zebra": 3}


def write_spacy_model(folder, mode="default", rows=SPACY_ROWS, n_rows=5):
    vocab = folder / "vocab"
    vocab.mkdir(parents=True)
    with open(vocab / "vectors", "wb") as handle:  # spaCy's name: a .npy file without the suffix
        np.save(handle, np.arange(n_rows * 3, dtype=np.float32).reshape(n_rows, 3))
    key2row = {spacy_hash(word): row for word, row in rows.items()} | {12345: 4, 2**63 + 7: 300}
    (vocab / "key2row").write_bytes(msgpack_uint_map(key2row))
    (vocab / "strings.json").write_text(json.dumps(sorted(rows) + ["unvectored"]), encoding="utf-8")
    (vocab / "vectors.cfg").write_text(json.dumps({"mode": mode}), encoding="utf-8")
    return folder


def test_reads_a_spacy_model_folder(tmp_path):
    model = write_spacy_model(tmp_path / "en_model", n_rows=301)
    words, matrix = read_vectors(model, wanted=["Dog", "Horse"], max_extra_words=3)
    # wanted: Dog and its normalized form; then normalized forms, most case variants first
    assert words == ["Dog", "dog", "cat", "house", "Cat"]
    assert matrix.dtype == np.float32 and matrix.shape == (5, 3)
    assert np.array_equal(matrix[:, 0], [0, 0, 3, 6, 3])
    words, _ = read_vectors(model / "vocab", wanted=["Zebra", "a1"], max_extra_words=0)
    assert words == ["Zebra", "a1"]


def test_model_uses_spacy_vectors(tmp_path):
    config = config_from_dict({"model": {**TINY_MODEL, "pretrained": {
        "path": str(write_spacy_model(tmp_path / "m", n_rows=301)), "max_extra_words": 1}}})
    model = Model.build(config, tiny_sentences(3))
    assert model.ext_dim == 3 and "dog" in model.ext_words


@pytest.mark.parametrize("damage, message", [
    ("no vectors", "not a spaCy model"), ("floret", "mode 'floret'"),
    ("short table", "disagree"), ("bad key2row", "cannot read the spaCy vectors")])
def test_bad_spacy_folders_are_reported(tmp_path, damage, message):
    model = write_spacy_model(tmp_path / "m", mode="floret" if damage == "floret" else "default",
                              n_rows=5 if damage == "short table" else 301)
    if damage == "no vectors":
        (model / "vocab" / "vectors").unlink()
    if damage == "bad key2row":
        (model / "vocab" / "key2row").write_bytes(b"\xde\x00\x05\xa3abc")
    with pytest.raises(EmbeddingsError, match=message):
        read_vectors(model, wanted=["dog"], max_extra_words=5)
