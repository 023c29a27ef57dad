"""The learned tokenizer inside a model (issue 48, item 1): trained by
``kgparser train`` (``tokenizer.enabled``), stored in the checkpoint, used by
``--input-format raw`` / ``Parser.parse(text, input_format="raw")``; spaCy's
rules an explicit choice (``--tokenizer rules``) and, with one line saying
so, the fallback of a model without a tokenizer; bad input; damaged
tokenizer fields."""
import json
import subprocess
import sys
import warnings

import pytest
import torch
from rawtext_models import tagged_sentences
from test_model import IGNORE_TINY_MODEL_WARNINGS, tiny_config
from test_parse_safety import save
from test_tokenize import TINY, synthetic_treebank
from test_training import tiny_run

from kgparser.cli import main
from kgparser.config import ConfigError, config_from_dict
from kgparser.errors import KgparserError
from kgparser.inference.parser import Parser, RulesFallback
from kgparser.io.conllu import parse_conllu
from kgparser.io.rawtext import text_of
from kgparser.model import Model
from kgparser.model.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from kgparser.tokenize.train import train_tokenizer
from kgparser.training import train

pytestmark = IGNORE_TINY_MODEL_WARNINGS

TEXT = "the cat sees a dog amen the bird likes cowya. the cow eats fishya amen\n\nthe dog finds a rice."


def tiny_model(tokenizer=None) -> Model:
    config = tiny_config("arc-hybrid")
    config.data.lang = "en"
    config.model.tag_input, config.model.pos_dim = "none", 0
    config.model.tagger.upos = config.model.tagger.xpos = config.model.tagger.feats = True
    model = Model.build(config, tagged_sentences())
    if tokenizer is not None:
        config.tokenizer = tokenizer.config
        model.tokenizer = tokenizer
    return model


@pytest.fixture(scope="module")
def tokenizer():
    torch.set_num_threads(1)
    return train_tokenizer(synthetic_treebank(300, 1), synthetic_treebank(40, 2), TINY, report=lambda epoch: None)


@pytest.fixture(scope="module")
def with_tokenizer(tmp_path_factory, tokenizer):
    return save(tiny_model(tokenizer), tmp_path_factory.mktemp("tok") / "with.pt")


@pytest.fixture(scope="module")
def without_tokenizer(tmp_path_factory):
    return save(tiny_model(), tmp_path_factory.mktemp("tok") / "without.pt")


def words_of(sentences) -> list[list[str]]:
    return [list(s.forms) for s in sentences]


def test_the_checkpoint_keeps_the_tokenizer_and_raw_text_goes_through_it(with_tokenizer, tokenizer):
    parser = Parser.load(with_tokenizer)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RulesFallback)
        sentences = parser.parse(TEXT, input_format="raw")
    assert words_of(sentences) == [["the", "cat", "sees", "a", "dog", "amen"],
                                   ["the", "bird", "likes", "cow", "ya", "."],
                                   ["the", "cow", "eats", "fish", "ya", "amen"],
                                   ["the", "dog", "finds", "a", "rice", "."]]
    assert [form for first, last, form in sentences[1].multiword_tokens] == ["cowya"]
    assert text_of(parse_conllu("".join(s.to_conllu() for s in sentences), require_tree=False)) == TEXT
    assert all(s.heads and all(h >= 0 for h in s.heads[1:]) for s in sentences)
    assert Parser.load(with_tokenizer).model.tokenizer.segment([TEXT]) == tokenizer.segment([TEXT])
    piped = parser.pipe(TEXT, input_format="raw", tokenizer="model")
    assert [s.to_conllu() for s in piped] == [s.to_conllu() for s in sentences]


def test_rules_are_an_explicit_choice(with_tokenizer):
    pytest.importorskip("spacy")
    sentences = Parser.load(with_tokenizer).parse(TEXT, input_format="raw", tokenizer="rules")
    assert "cowya" in [form for s in sentences for form in s.forms]  # spaCy's rules know no such clitic


def test_a_model_without_a_tokenizer_falls_back_to_the_rules_with_one_warning(without_tokenizer):
    pytest.importorskip("spacy")
    parser = Parser.load(without_tokenizer)
    with pytest.warns(RulesFallback, match="no tokenizer of its own .* spaCy's rules for 'en'") as caught:
        sentences = parser.parse("A text. Another one.", input_format="raw")
    assert len(caught) == 1 and len(sentences) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", RulesFallback)
        parser.parse("A text.", input_format="raw", tokenizer="rules")
        parser.parse([["A", "text"]])  # other formats need no tokenizer
    with pytest.raises(KgparserError, match=r"^this model has no tokenizer .*--tokenizer rules"):
        parser.parse("A text.", input_format="raw", tokenizer="model")
    with pytest.raises(KgparserError, match="^tokenizer: 'spacy' is not one of auto, model, rules$"):
        parser.parse("A text.", input_format="raw", tokenizer="spacy")


def test_the_command_line_says_so_in_one_line(without_tokenizer, with_tokenizer, tmp_path, capsys):
    pytest.importorskip("spacy")
    (tmp_path / "in.txt").write_text("A text.\n", encoding="utf-8")
    # in a child process: pytest records warnings, the command line shows them
    done = subprocess.run([sys.executable, "-m", "kgparser.cli", "parse", "-m", str(without_tokenizer),
                           "--input-format", "raw", str(tmp_path / "in.txt"), "-o", str(tmp_path / "out.conllu")],
                          capture_output=True, text=True, check=True)
    notes = [line for line in done.stderr.splitlines() if "tokenizer" in line]
    assert notes == ["kgparser parse: warning: this model has no tokenizer of its own (trained without "
                     "tokenizer.enabled): raw text is tokenized by spaCy's rules for 'en'"]
    assert main(["parse", "-m", str(without_tokenizer), "--input-format", "raw", "--tokenizer", "model",
                 str(tmp_path / "in.txt"), "-o", str(tmp_path / "none.conllu")]) == 1
    assert capsys.readouterr().err.strip().startswith("kgparser parse: error: this model has no tokenizer")
    assert not (tmp_path / "none.conllu").exists()
    (tmp_path / "in.txt").write_text(TEXT, encoding="utf-8")
    assert main(["parse", "-m", str(with_tokenizer), "--input-format", "raw", str(tmp_path / "in.txt"),
                 "-o", str(tmp_path / "out.conllu"), "-q"]) == 0
    assert "tokenizer" not in capsys.readouterr().err
    assert "4-5\tcowya\t" in (tmp_path / "out.conllu").read_text(encoding="utf-8")


@pytest.mark.parametrize("text", ["", " \n\t ", "\n\n\n", "\x00\x07\x1b"])
def test_empty_and_blank_text_give_no_sentences(with_tokenizer, text):
    assert list(Parser.load(with_tokenizer).parse(text, input_format="raw")) == []


def test_control_characters_and_invalid_utf8(with_tokenizer, tmp_path, capsys):
    text = "the\x00cat sees\x07a dog amen"
    sentences = Parser.load(with_tokenizer).parse(text, input_format="raw")
    assert text_of(parse_conllu("".join(s.to_conllu() for s in sentences), require_tree=False)) == text
    (tmp_path / "bad.txt").write_bytes(b"the cat \xff sees a dog amen\n")
    assert main(["parse", "-m", str(with_tokenizer), "--input-format", "raw", str(tmp_path / "bad.txt"),
                 "-o", str(tmp_path / "out.conllu")]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"kgparser parse: error: {tmp_path / 'bad.txt'}") and "UTF-8" in line
    assert not (tmp_path / "out.conllu").exists()


def test_a_damaged_tokenizer_is_one_line(with_tokenizer, tmp_path):
    data = load_checkpoint(with_tokenizer)
    weights = data["model"]["tokenizer"]["weights"]
    name = next(iter(weights))
    weights[name] = weights[name].clone().fill_(float("nan"))
    save_checkpoint(data, tmp_path / "nan.pt")
    with pytest.raises(CheckpointError, match=f"tokenizer.{name} holds NaN"):
        Parser.load(tmp_path / "nan.pt")
    data = load_checkpoint(with_tokenizer)
    data["model"]["tokenizer"]["characters"] = "abc"
    save_checkpoint(data, tmp_path / "chars.pt")
    with pytest.raises(CheckpointError, match=r"model.tokenizer.characters is str, not list"):
        Parser.load(tmp_path / "chars.pt")
    data = load_checkpoint(with_tokenizer)
    del data["model"]["tokenizer"]["weights"][name]
    save_checkpoint(data, tmp_path / "missing.pt")
    with pytest.raises(CheckpointError, match="inconsistent checkpoint"):
        Parser.load(tmp_path / "missing.pt")


def test_config_block_is_checked():
    with pytest.raises(ConfigError, match="tokenizer.hidden: must be > 0"):
        config_from_dict({"tokenizer": {"hidden": 0}})
    with pytest.raises(ConfigError, match="tokenizer.dropout: must be within"):
        config_from_dict({"tokenizer": {"dropout": 1.0}})
    assert not config_from_dict({}).tokenizer.enabled


TINY_BLOCK = {"enabled": True, "epochs": 2, "char_dim": 8, "class_dim": 4, "hidden": 8, "window": 64, "context": 8,
              "epoch_characters": 0}
#: a model that reads no tags parses raw text (one that reads gold tags has none to read there)
UNTAGGED = {"tag_input": "none", "pos_dim": 0}


def test_a_run_trains_it_first_keeps_it_in_every_checkpoint_and_scores_raw_text(tmp_path):
    lines: list[str] = []
    train(tiny_run(tmp_path, epochs=1, tokenizer=TINY_BLOCK, model=UNTAGGED), log=lines.append)
    out = tmp_path / "run"
    assert lines[0].startswith("training the tokenizer on the running text of 12 sentences")
    assert [line.split(":")[0] for line in lines[1:3]] == ["tokenizer epoch 1", "tokenizer epoch 2"]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r.get("tokenizer_epoch") for r in records] == [1, 2, None, None]
    assert "dev_token_end_f1" in records[0] and records[2]["epoch"] == 1
    assert {"test_raw_tokens", "test_raw_sentences", "test_raw_words", "test_raw_las"} <= set(records[-1])
    assert any(line.startswith("test from raw text (aligned F1): tokens ") for line in lines)
    best, last = (Model.load(out / name) for name in ("best.pt", "last.pt"))
    assert best.tokenizer is not None and last.tokenizer is not None
    assert best.tokenizer.segment(["w1 w2 w3"]) == last.tokenizer.segment(["w1 w2 w3"])

    lines.clear()
    train(tiny_run(tmp_path, epochs=2, tokenizer=TINY_BLOCK, model=UNTAGGED), resume=True, log=lines.append)
    assert not any("tokenizer" in line for line in lines)  # taken from last.pt, not trained again
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r.get("tokenizer_epoch") for r in records][:2] == [1, 2]
    resumed = Model.load(out / "last.pt").tokenizer
    assert all(torch.equal(a, b) for a, b in zip(resumed.tagger.state_dict().values(),
                                                 last.tokenizer.tagger.state_dict().values()))


def test_a_model_that_reads_gold_tags_says_why_raw_text_is_not_scored(tmp_path):
    lines: list[str] = []
    train(tiny_run(tmp_path, epochs=1, tokenizer=dict(TINY_BLOCK, epochs=1)), log=lines.append)
    assert any(line.startswith("note: the test file's raw text is not scored: ") for line in lines)
    assert not any(key.startswith("test_raw_") for key in
                   json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1]))
