"""The lemmatizer of unseen words (kgparser/model/lemmatizer.py) and its stage
after the parser (kgparser/training/lemma_stage.py): it learns an ending the
linear LEMMA head is not told apart by the dictionary's rules, it is stored in
and read back from the checkpoint, a finished run resumed with it gets one
(the parser unchanged) and is not trained again, the config refuses it
without a LEMMA column, and seen words keep the dictionary's lemma."""
import json
import random

import pytest
import torch
from test_tagging import run_config as tagging_run

from kgparser.config import ConfigError
from kgparser.inference.parser import Parser
from kgparser.io.conllu import parse_conllu
from kgparser.model import Model
from kgparser.model.checkpoint import load_checkpoint
from kgparser.training import train

torch.set_num_threads(1)

MODEL = {"word_dim": 12, "pos_dim": 6, "lstm_layers": 2, "lstm_hidden": 16, "mlp_hidden": 16, "tag_input": "predicted",
         "tagger": {"upos": True, "lemma": True, "lemma_gradient": False}}
LEMMATIZER = {"enabled": True, "char_dim": 16, "char_hidden": 24, "hidden": 32, "epochs": 12, "dropout": 0.1}


def word(rng: random.Random) -> tuple[str, str]:
    """A made-up word and its lemma: ``-os`` is an ending cut from the stem,
    except after ``i``, where it is part of the stem, as ``-as`` always is.  The
    dictionary's rules cannot tell ``-ios`` from ``-eos`` (cutting ``os`` and
    keeping the form fit both), and a model without characters sees an unseen
    word as unknown: only the lemmatizer reads its letters."""
    stem = "".join(rng.choice("ptkmnr") + rng.choice("aeiu") for _ in range(rng.randint(1, 3)))
    ending = rng.choice(("os", "as"))
    return (stem + ending, stem + ending) if ending == "as" or stem.endswith("i") else (stem + ending, stem)


def conllu(count: int, seed: int) -> str:
    rng = random.Random(seed)
    blocks = []
    for s in range(count):
        words = [word(rng) for _ in range(rng.randint(2, 6))]
        rows = [f"# sent_id = w-{seed}-{s}"]
        rows += [f"{i}\t{form}\t{lemma}\tNOUN\t_\t_\t{i - 1}\t{'root' if i == 1 else 'dep'}\t_\t_"
                 for i, (form, lemma) in enumerate(words, start=1)]
        blocks.append("\n".join(rows) + "\n\n")
    return "".join(blocks)


def run_config(folder, lemmatizer: dict | None = None, model: dict = MODEL):
    return tagging_run(folder, model, epochs=1, sections={"lemmatizer": lemmatizer or {}},
                       dev=str(folder / "dev.conllu"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lemmatizer")
    (folder / "train.conllu").write_text(conllu(150, seed=1), encoding="utf-8")
    (folder / "dev.conllu").write_text(conllu(30, seed=2), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def finished(folder):
    """A run trained without the lemmatizer, then resumed with it; the
    checkpoint data before and after, and the log of the resumed run."""
    train(run_config(folder), log=lambda line: None)
    before = load_checkpoint(folder / "run" / "best.pt")
    lines: list[str] = []
    train(run_config(folder, LEMMATIZER), resume=True, log=lines.append)
    return before, load_checkpoint(folder / "run" / "best.pt"), lines


def without_lemmas(sentences) -> list:
    """Copies of ``sentences`` with LEMMA ``_`` (a given lemma is kept at parse time)."""
    copies = [sentence.copy() for sentence in sentences]
    for sentence in copies:
        sentence.set_tags({"lemma": [None] * sentence.n})
    return copies


def unseen_cut_accuracy(folder, checkpoint) -> float:
    """The share of made-up ``-os`` words the training file does not have whose
    lemma ``checkpoint`` gets right (:func:`word`)."""
    seen = {form for sentence in parse_conllu((folder / "train.conllu").read_text(), "train")
            for form in sentence.forms}
    sentences = list(parse_conllu(conllu(200, seed=3), "test.conllu"))
    parsed = Parser.load(checkpoint).parse(without_lemmas(sentences), tags="predict")
    right = [p == g for gold, predicted in zip(sentences, parsed)
             for form, g, p in zip(gold.forms, gold.lemma, predicted.lemma) if form.endswith("os") and form not in seen]
    assert len(right) > 150
    return sum(right) / len(right)


def test_the_lemmatizer_learns_the_ending_the_dictionary_cannot_tell(folder, finished, tmp_path):
    before, _, _ = finished
    torch.save(before, tmp_path / "head.pt")
    head = unseen_cut_accuracy(folder, tmp_path / "head.pt")
    lemmatizer = unseen_cut_accuracy(folder, folder / "run" / "best.pt")
    print(head, lemmatizer)
    assert lemmatizer >= 0.95 and head < 0.85


def test_it_is_stored_in_the_checkpoint_and_read_back(folder, finished):
    _, after, lines = finished
    assert set(after["model"]["lemmatizer"]) == {"characters", "in_dim", "classes", "weights"}
    assert after["model"]["config"]["lemmatizer"]["char_hidden"] == LEMMATIZER["char_hidden"]
    model = Model.load(folder / "run" / "best.pt")
    assert model.lemmatizer is not None and not model.lemmatizer.training
    again = Model.from_data(model.to_data())
    inputs = torch.randn(3, model.lemmatizer.in_dim)
    forms = ["pakos", "mias", "pakos"]
    assert torch.equal(model.lemmatizer(inputs, forms), again.lemmatizer(inputs, forms))
    assert any(line.startswith("lemmatizer epoch 12:") for line in lines)
    records = [json.loads(line) for line in (folder / "run" / "metrics.jsonl").read_text().splitlines()]
    epochs = [r for r in records if "lemmatizer_epoch" in r]
    assert [r["lemmatizer_epoch"] for r in epochs] == list(range(1, 13))
    assert all(0 <= r["dev_unseen_lemma"] <= 1 for r in epochs)


def test_the_parser_is_unchanged_and_a_lemmatizer_is_not_trained_twice(folder, finished):
    before, after, _ = finished
    assert before["model"]["weights"].keys() == after["model"]["weights"].keys()
    assert all(torch.equal(before["model"]["weights"][k], after["model"]["weights"][k])
               for k in before["model"]["weights"])
    assert before["epoch"] == after["epoch"] and before["dev"] == after["dev"]
    lines: list[str] = []
    train(run_config(folder, LEMMATIZER), resume=True, log=lines.append)
    assert not any("lemmatizer" in line for line in lines)
    again = load_checkpoint(folder / "run" / "best.pt")
    assert all(torch.equal(after["model"]["lemmatizer"]["weights"][k], v)
               for k, v in again["model"]["lemmatizer"]["weights"].items())


def test_seen_words_keep_the_dictionary_lemma(folder, finished):
    sentences = list(parse_conllu((folder / "train.conllu").read_text(), "train"))[:40]
    parsed = Parser.load(folder / "run" / "best.pt").parse(without_lemmas(sentences), tags="predict")
    assert [s.lemma for s in parsed] == [s.lemma for s in sentences]


def test_the_config_refuses_a_lemmatizer_without_a_lemma_column(tmp_path):
    model = {**MODEL, "tagger": {"upos": True}}
    with pytest.raises(ConfigError, match="lemmatizer.enabled needs model.tagger.lemma: true"):
        run_config(tmp_path, LEMMATIZER, model)


def test_without_lemmas_in_the_data_the_stage_says_so(tmp_path):
    text = "".join(line if line.count("\t") != 9 else "\t".join(
        [*line.split("\t")[:2], "_", *line.split("\t")[3:]]) for line in conllu(20, seed=4).splitlines(True))
    (tmp_path / "train.conllu").write_text(text, encoding="utf-8")
    (tmp_path / "dev.conllu").write_text(text, encoding="utf-8")
    lines: list[str] = []
    train(run_config(tmp_path, LEMMATIZER), log=lines.append)
    assert "note: no lemmatizer: the model predicts no LEMMA (the training data has none)" in lines
    assert "lemmatizer" not in load_checkpoint(tmp_path / "run" / "best.pt")["model"]
