"""The joint tagger (kgparser/model/tagger.py) and tags at parse time
(kgparser/tagging.py): config rules, vocabularies old and new, head shapes and
loss, the hierarchical tag input, the tag modes on mixed input (a given column
never changes), the untagged-input error, plain-text input, tag scores in
evaluation, and an end-to-end run on the shipped sample."""
import contextlib
import json
import random

import numpy as np
import pytest
import torch
from test_model import TINY_MODEL, tiny_conllu

from kgparser.cli import main
from kgparser.config import ConfigError, config_from_dict
from kgparser.errors import KgparserError
from kgparser.evaluation.scores import evaluate
from kgparser.inference.decode import decode
from kgparser.inference.parser import Parser
from kgparser.inference.tags import TagWarning, UntaggedInput
from kgparser.io.conllu import ConlluError, parse_conllu, read_conllu, sample_data_path, write_conllu
from kgparser.io.reader import read
from kgparser.model import Model
from kgparser.model.tagger import IGNORED, TAG_CLASS_OFFSET, tag_targets, tagging_loss
from kgparser.model.vocab import Vocabularies, column_value, column_values
from kgparser.training import train
from kgparser.training.trainer import EpochStats, Trainer

torch.set_num_threads(1)

TAGGER_MODEL = {**TINY_MODEL, "lstm_layers": 2, "tag_input": "predicted",
                "tagger": {"upos": True, "xpos": True, "feats": True, "lemma": True}}
COLUMNS = ("upos", "xpos", "feats", "lemma")


def tagged_conllu(count: int, seed: int = 0) -> str:
    """tiny_conllu's random trees with tags that follow the word: UPOS, XPOS, FEATS
    and LEMMA (``w`` for an even word ``wK``, the form itself for an odd one)."""
    rows = []
    for line in tiny_conllu(count, seed).split("\n"):
        cols = line.split("\t")
        if len(cols) == 10:
            k = int(cols[1][1:])
            cols[2] = cols[1] if k % 2 else "w"
            cols[3:6] = "ABC"[k % 3], f"x{k % 4}", (f"Number={'Sing' if k % 2 else 'Plur'}" if k < 6 else "_")
        rows.append("\t".join(cols))
    return "\n".join(rows)


def tagged_sentences(count: int, seed: int = 0):
    return list(parse_conllu(tagged_conllu(count, seed), "tagged.conllu"))


def strip_tags(sentences):
    copies = [s.copy() for s in sentences]
    for sentence in copies:
        sentence.set_tags({column: [None] * sentence.n for column in COLUMNS})
    return copies


def run_config(folder, model: dict, epochs: int = 2, train_file=None, sections: dict | None = None, **data):
    """A short run's config (``sections``: more top-level blocks, such as ``lemmatizer``)."""
    return config_from_dict({"output_dir": str(folder / "run"), "threads": 1,
                             "data": {"train": str(train_file or folder / "train.conllu"), **data}, "model": model,
                             "training": {"epochs": epochs, "batch_size": 4, "lr": 0.01, "tensorboard": False,
                                          "progress": False}, **(sections or {})})


@pytest.fixture(scope="module")
def tagger_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tagger")
    (folder / "train.conllu").write_text(tagged_conllu(30, seed=1), encoding="utf-8")
    (folder / "dev.conllu").write_text(tagged_conllu(5, seed=2), encoding="utf-8")
    train(run_config(folder, TAGGER_MODEL, dev=str(folder / "dev.conllu")), log=lambda line: None)
    return folder / "run" / "best.pt"


@pytest.fixture(scope="module")
def gold_checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gold")
    (folder / "train.conllu").write_text(tagged_conllu(10, seed=3), encoding="utf-8")
    train(run_config(folder, TINY_MODEL, epochs=1), log=lambda line: None)
    return folder / "run" / "best.pt"


# -- config and vocabularies ----------------------------------------------------------------

@pytest.mark.parametrize("model, message", [
    ({"tagger": {"upos": True}}, "would read the gold UPOS it predicts"),
    ({"tag_input": "predicted"}, "set model.tagger.upos: true"),
    ({"tag_input": "soft", "pos": "xpos", "tagger": {"upos": True}}, "set model.tagger.xpos: true"),
    ({"tag_input": "predicted", "tagger": {"upos": True}, "lstm_layers": 1}, "lstm_layers >= 2"),
    ({"tag_input": "guessed"}, "model.tag_input: 'guessed' is not one of gold, predicted, soft, none"),
    ({"tagger": {"upoz": True}}, "did you mean 'upos'"),
    ({"tagger": {"hidden": -1}}, "model.tagger.hidden: must be >= 0"),
    ({"tagger": {"lemma": True, "lemma_chars": True}}, "lemma_chars needs model.tagger.lemma: true and a character"),
    ({"tagger": {"upos": True, "lemma_chars": True}, "char_dim": 8, "tag_input": "none"}, "lemma_chars needs"),
])
def test_config_refuses_taggers_that_would_read_what_they_predict(model, message):
    with pytest.raises(ConfigError, match=message):
        config_from_dict({"model": model})


def test_config_defaults_are_the_old_model_and_sound_taggers_are_accepted():
    model = config_from_dict({}).model
    assert model.tag_input == "gold" and model.tagger.columns() == []
    for ok in ({"tag_input": "none", "tagger": {"upos": True, "feats": True}},
               {"tagger": {"xpos": True, "feats": True}},  # gold UPOS in, XPOS and FEATS out: a pipeline
               {"pos_dim": 0, "tagger": {"upos": True}},
               {"tag_input": "soft", "tagger": {"upos": True, "hidden": 50, "loss_weight": 0.5}}):
        config_from_dict({"model": ok})


def test_vocabularies_hold_the_predicted_columns_and_read_old_checkpoints():
    sentences = tagged_sentences(20, seed=4)
    sentences[0].set_tags({"xpos": [None] * sentences[0].n})
    vocabs = Vocabularies.from_sentences(sentences, tag_columns=COLUMNS)
    assert set(vocabs.tag_columns) == set(COLUMNS)
    assert vocabs.tag_columns["upos"].items == vocabs.tags.items
    assert "_" in vocabs.tag_columns["feats"] and "Number=Sing" in vocabs.tag_columns["feats"]
    again = Vocabularies.from_data(vocabs.to_data())
    assert {c: v.items for c, v in again.tag_columns.items()} == {c: v.items for c, v in vocabs.tag_columns.items()}
    plain = Vocabularies.from_sentences(sentences)
    assert "tag_columns" not in plain.to_data() and Vocabularies.from_data(plain.to_data()).tag_columns == {}
    assert set(vocabs.tag_columns["lemma"].items[TAG_CLASS_OFFSET:]) == {"l0:0:0:", "l0:1:0:"}
    assert again.lexicon is not None and again.lexicon.lemmas == vocabs.lexicon.lemmas
    assert again.lexicon.cuts == {"l0:0:0:": {"\t"}, "l0:1:0:": {"\t" + str(k) for k in range(0, 10, 2)}}
    assert plain.lexicon is None and "lemma_lexicon" not in plain.to_data()
    for sentence in sentences:  # a treebank without FEATS teaches no FEATS
        sentence.set_tags({"feats": [None] * sentence.n})
    assert set(Vocabularies.from_sentences(sentences, tag_columns=COLUMNS).tag_columns) == {"upos", "xpos", "lemma"}


def test_lemma_classes_are_the_edit_scripts_of_the_training_words():
    sentence = parse_conllu("1\tDogs\tdog\t_\t_\t_\t_\t_\t_\t_\n2\tbarked\t_\t_\t_\t_\t_\t_\t_\t_\n"
                            "3\t.\t.\t_\t_\t_\t_\t_\t_\t_\n\n", require_tree=False)[0]
    assert column_values(sentence, "lemma") == ["l0:1:0:", None, "l0:0:0:"]
    assert column_value("lemma", "l0:2:0:", "barked") == "bark" and column_value("upos", "VERB", "barked") == "VERB"
    vocab = Vocabularies.from_sentences([sentence], tag_columns=("lemma",)).tag_columns["lemma"]
    assert set(vocab.items[TAG_CLASS_OFFSET:]) == {"l0:1:0:", "l0:0:0:"}
    sentence.set_tags({"lemma": [None] * 3})  # a treebank without lemmas teaches none
    assert Vocabularies.from_sentences([sentence], tag_columns=("lemma",)).tag_columns == {}


def test_an_old_checkpoint_without_tagger_keys_loads_and_parses_the_same(gold_checkpoint):
    data = torch.load(gold_checkpoint, weights_only=True)
    assert "tag_columns" not in data["model"]["vocabs"]
    assert not [k for k in data["model"]["weights"] if k.startswith("taggers")]
    old = dict(data["model"], config=json.loads(json.dumps(data["model"]["config"])))
    del old["config"]["model"]["tag_input"], old["config"]["model"]["tagger"]
    sentences = tagged_sentences(6, seed=9)
    first = [s.heads for s in Parser(Model.from_data(data["model"])).parse(sentences)]
    assert first == [s.heads for s in Parser(Model.from_data(old)).parse(sentences)]


# -- heads, loss, hierarchical input --------------------------------------------------------

@pytest.mark.parametrize("hidden", [0, 7])
def test_tag_heads_score_every_token_row(hidden):
    sentences = tagged_sentences(5, seed=5)
    model = Model.build(config_from_dict({"model": {**TAGGER_MODEL, "tagger": {**TAGGER_MODEL["tagger"],
                                                                                "hidden": hidden}}}), sentences)
    inputs = model.inputs(sentences)
    scores = model.network.tag_scores(inputs)
    rows = sum(s.n + 1 for s in sentences)
    for column in COLUMNS:
        assert scores[column].shape == (rows, len(model.vocabs.tag_columns[column]) - TAG_CLASS_OFFSET)
    vectors, again, _ = model.network.encode_all(inputs)
    assert vectors.shape == (rows + 1, 2 * TINY_MODEL["lstm_hidden"])
    assert all(torch.equal(again[c], scores[c]) for c in COLUMNS)
    layers = [type(m).__name__ for m in model.network.taggers.heads["upos"].modules()]
    assert ("Tanh" in layers) == bool(hidden)


def test_the_lemma_head_can_read_the_character_vectors_too():
    sentences = tagged_sentences(5, seed=5)
    config = {**TAGGER_MODEL, "char_dim": 8, "char_hidden": 5,
              "tagger": {**TAGGER_MODEL["tagger"], "lemma_chars": True}}
    model = Model.build(config_from_dict({"model": config}), sentences)
    lemma, upos = (model.network.taggers.heads[column] for column in ("lemma", "upos"))
    assert (lemma.in_features, upos.in_features) == (2 * TINY_MODEL["lstm_hidden"] + 10, 2 * TINY_MODEL["lstm_hidden"])
    model.network.eval()
    inputs = model.inputs(sentences)
    before = model.network.tag_scores(inputs)
    assert torch.equal(lemma(model.network.lemma_inputs(inputs)), before["lemma"])  # what the lemmatizer reads
    with torch.no_grad():  # the lemma head's weights on the character vectors, and only those
        lemma.weight[:, 2 * TINY_MODEL["lstm_hidden"]:] += 1.0
    after = model.network.tag_scores(inputs)
    assert torch.equal(before["upos"], after["upos"]) and not torch.equal(before["lemma"], after["lemma"])
    assert all(torch.equal(after[c], s) for c, s in model.network.encode_all(inputs)[1].items())


@pytest.mark.parametrize("gradient", [True, False])
@pytest.mark.parametrize("chars", [False, True])  # the accurate recipes: no gradient, character vectors read
def test_without_its_gradient_the_lemma_loss_trains_only_the_lemma_head(gradient, chars):
    sentences = tagged_sentences(5, seed=5)
    config = {**TAGGER_MODEL, "char_dim": 8, "char_hidden": 5,
              "tagger": {**TAGGER_MODEL["tagger"], "lemma_gradient": gradient, "lemma_chars": chars}}
    model = Model.build(config_from_dict({"model": config}), sentences)
    scores = model.network.tag_scores(model.inputs(sentences))
    loss, _ = tagging_loss({"lemma": scores["lemma"]}, {"lemma": tag_targets(model, sentences)["lemma"]})
    loss.backward()
    assert model.network.taggers.heads["lemma"].weight.grad.abs().sum() > 0
    for shared in (model.network.forward_lstms[0], model.network.char_lstm):
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in shared.parameters()) == gradient


def test_tagging_loss_is_the_summed_cross_entropy_of_the_tagged_words():
    sentences = tagged_sentences(4, seed=6)
    sentences[1].set_tags({"upos": [None] + sentences[1].upos[1:]})  # a word without gold UPOS
    model = Model.build(config_from_dict({"model": TAGGER_MODEL}), sentences)
    targets = tag_targets(model, sentences)
    starts = np.cumsum([0] + [s.n + 1 for s in sentences[:-1]])
    assert (targets["upos"][starts] == IGNORED).all()  # ROOT rows
    assert targets["upos"][starts[1] + 1] == IGNORED
    vocab = model.vocabs.tag_columns["feats"]
    assert targets["feats"][1] == vocab.get(sentences[0].feats[0] or "_") - TAG_CLASS_OFFSET
    scores = model.network.tag_scores(model.inputs(sentences))
    total, words = tagging_loss(scores, targets)
    expected = sum(torch.nn.functional.cross_entropy(scores[c][targets[c] != IGNORED],
                                                     targets[c][targets[c] != IGNORED], reduction="sum")
                   for c in COLUMNS)
    assert torch.allclose(total, expected)
    assert words == len(COLUMNS) * sum(s.n for s in sentences) - 1


def test_trainer_adds_the_weighted_tagging_loss_per_scored_state():
    sentences = tagged_sentences(4, seed=7)
    config = config_from_dict({"model": {**TAGGER_MODEL, "tagger": {"upos": True, "loss_weight": 0.5},
                                         "tag_input": "soft"}})
    model = Model.build(config, sentences)
    trainer = Trainer(model, config)
    examples = trainer.examples(sentences)
    scores = model.network.tag_scores(model.inputs(sentences, given_tags=False))
    summed, words = tagging_loss(scores, tag_targets(model, sentences))
    stats = EpochStats(scored=5)
    loss = trainer._with_tagging_loss(torch.tensor(2.0), scores, examples, stats)
    assert torch.allclose(loss, 2.0 + 0.5 * summed / 5)
    assert stats.tagged == words == sum(s.n for s in sentences)
    assert stats.tag_loss == pytest.approx(float(summed.detach()))
    assert trainer._with_tagging_loss(None, {}, examples, EpochStats()) is None


def test_joint_training_learns_tags_that_follow_the_words():
    sentences = tagged_sentences(30, seed=8)
    config = config_from_dict({"model": TAGGER_MODEL, "training": {"lr": 0.01}})
    torch.manual_seed(0)
    model = Model.build(config, sentences)
    trainer = Trainer(model, config)
    examples = [e for e in trainer.examples(sentences) if e.buildable]
    rng, np_rng = random.Random(0), np.random.default_rng(0)
    losses = [trainer.train_batch(examples, False, rng, np_rng).tag_loss for _ in range(40)]
    assert losses[-1] < losses[0] / 10
    predicted = decode(model, sentences, with_tags=True).tags
    for column in COLUMNS:
        assert [p[column] for p in predicted] == [[v or "_" for v in getattr(s, column)] for s in sentences]


def test_a_hierarchical_model_reads_given_tags_only_at_parse_time():
    sentences = tagged_sentences(5, seed=10)
    untagged = strip_tags(sentences)
    model = Model.build(config_from_dict({"model": TAGGER_MODEL}), sentences)
    network = model.network.eval()
    assert network.forward_lstms[0].input_size == TINY_MODEL["word_dim"]
    assert network.forward_lstms[1].input_size == 2 * TINY_MODEL["lstm_hidden"] + TINY_MODEL["pos_dim"]

    def encoded(batch, given):
        return network.encode(model.inputs(batch, given_tags=given))

    assert torch.equal(encoded(sentences, False), encoded(untagged, False))  # training: its own tags only
    assert torch.equal(encoded(untagged, True), encoded(untagged, False))
    assert not torch.equal(encoded(sentences, True), encoded(untagged, True))  # parsing: the user's tags


@pytest.mark.parametrize("tag_input, reaches", [("soft", True), ("predicted", False)])
def test_only_soft_tags_pass_the_parser_loss_to_the_tagger(tag_input, reaches):
    sentences = tagged_sentences(4, seed=11)
    model = Model.build(config_from_dict({"model": {**TAGGER_MODEL, "tag_input": tag_input}}), sentences)
    model.network.encode(model.inputs(sentences, given_tags=False)).sum().backward()
    grad = model.network.taggers.heads["upos"].weight.grad
    assert (grad is not None and bool(grad.abs().sum() > 0)) == reaches


# -- tags at parse time ---------------------------------------------------------------------

MIXED = ("# sent_id = tagged\n"
         "1\tw1\t_\tZ-GIVEN\tgx\tGiven=Yes\t_\t_\t_\t_\n"
         "2\tw2\t_\tB\tgx\t_\t_\t_\t_\t_\n\n"
         "# sent_id = untagged\n"
         "1\tw3\t_\t_\t_\t_\t_\t_\t_\t_\n"
         "2\tw4\t_\t_\t_\t_\t_\t_\t_\t_\n"
         "3\tw5\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
         "# sent_id = mixed\n"
         "1\tw6\tlemma\tC\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
         "2\tw7\t_\t_\t_\tF=1\t_\t_\t_\t_\n\n")


def mixed():
    return list(parse_conllu(MIXED, "mixed.conllu", require_tree=False))


def columns_of(sentences):
    return [[getattr(s, c) for c in COLUMNS] for s in sentences]


def test_auto_fills_only_what_is_missing_and_never_changes_a_given_column(tagger_checkpoint):
    parser = Parser.load(tagger_checkpoint)
    given = mixed()
    predicted = decode(parser.model, given, with_tags=True).tags
    out = parser.parse(given)
    feats = [None if v == "_" else v for v in predicted[1]["feats"]]  # "_": no features
    assert columns_of(out) == [
        [["Z-GIVEN", "B"], ["gx", "gx"], ["Given=Yes", None], predicted[0]["lemma"]],
        [predicted[1]["upos"], predicted[1]["xpos"], feats, predicted[1]["lemma"]],
        [["C", predicted[2]["upos"][1]], predicted[2]["xpos"], [None, "F=1"], ["lemma", predicted[2]["lemma"][1]]]]
    assert parser.tag_report.predicted == {"upos": 4, "xpos": 5, "feats": 3, "lemma": 6}
    assert parser.tag_report.missing == {"upos": 4, "xpos": 5, "feats": 3, "lemma": 6}
    assert "LEMMA predicted for 6 of 7 words" in parser.tag_report.summary()
    # a predicted lemma is one of the training words' edit scripts applied to the form
    assert all(lemma in ("w", form) for p, s in zip(predicted, given) for lemma, form in zip(p["lemma"], s.forms))
    lines = out[2].to_conllu().splitlines()
    assert lines[1].split("\t")[2:4] == ["lemma", "C"] and lines[1].endswith("SpaceAfter=No")
    assert columns_of(given) == columns_of(mixed())  # the input objects are left alone


def test_a_word_seen_in_training_gets_its_training_lemma_from_the_checkpoints_lexicon(tagger_checkpoint):
    parser = Parser.load(tagger_checkpoint)
    training = tagged_sentences(30, seed=1)
    assert parser.model.vocabs.lexicon is not None
    assert [s.lemma for s in parser.parse(strip_tags(training))] == [s.lemma for s in training]


def test_input_writes_nothing_and_predict_parses_with_the_taggers_tags(tagger_checkpoint):
    parser = Parser.load(tagger_checkpoint)
    kept = parser.parse(mixed(), tags="input")
    assert columns_of(kept) == columns_of(mixed()) and parser.tag_report.predicted == {}
    predict = parser.parse(mixed(), tags="predict")
    assert columns_of(predict) == columns_of(parser.parse(mixed()))  # given columns stay, gaps filled
    untagged = parser.parse(strip_tags(mixed()))
    assert [(s.heads, s.deprels) for s in predict] == [(s.heads, s.deprels) for s in untagged]


def test_a_gold_tag_model_refuses_untagged_input_and_warns_about_gaps(gold_checkpoint, tmp_path, capsys):
    parser = Parser.load(gold_checkpoint)
    with pytest.raises(UntaggedInput, match="model.tagger.upos: true with model.tag_input: predicted"):
        parser.parse([["w1", "w2"], ["w3"]])
    with pytest.warns(TagWarning, match="1 of 3 words have no UPOS tag"):
        parser.parse([[("w1", "A"), ("w2", None)], [("w3", "B")]])
    with pytest.warns(TagWarning, match="3 of 3 words"):
        parser.parse([["w1", "w2"], ["w3"]], tags="input")
    with pytest.raises(KgparserError, match="this model has no tagger"):
        parser.parse([[("w1", "A")]], tags="predict")
    with pytest.raises(KgparserError, match="tags: expected one of auto, input, predict"):
        parser.parse([[("w1", "A")]], tags="guess")
    source = tmp_path / "untagged.conllu"
    write_conllu(strip_tags(tagged_sentences(2)), source)
    assert main(["parse", "-m", str(gold_checkpoint), str(source)]) == 1
    assert "error: the input has no UPOS tags" in capsys.readouterr().err


def test_set_tags_rewrites_only_the_tag_columns():
    sentence = mixed()[2]
    sentence.set_tags({"upos": ["X", None], "feats": ["A=B", "_"]})
    assert sentence.to_conllu().splitlines()[1:3] == ["1\tw6\tlemma\tX\t_\tA=B\t_\t_\t_\tSpaceAfter=No",
                                                     "2\tw7\t_\t_\t_\t_\t_\t_\t_\t_"]
    assert (sentence.upos, sentence.feats) == (["X", None], ["A=B", None])
    with pytest.raises(ValueError, match="expected n = 2"):
        sentence.set_tags({"xpos": ["a"]})
    with pytest.raises(ValueError, match="contains whitespace"):
        sentence.set_tags({"xpos": ["a b", "c"]})


@pytest.mark.parametrize("column, value", [(3, "DET x"), (4, "N\u00a0sg"), (5, "Number=Sing |Case=Nom")])
def test_a_tag_with_white_space_beside_untagged_words_is_refused_at_reading(tagger_checkpoint, tmp_path, capsys,
                                                                          column, value):
    spaced = ["1", "w1", "_", "_", "_", "_", "_", "_", "_", "_"]
    spaced[column] = value
    source, out = tmp_path / "in.conllu", tmp_path / "out.conllu"
    source.write_text("\t".join(spaced) + "\n2\tw2" + "\t_" * 8 + "\n\n1\tw3" + "\t_" * 8 + "\n\n",
                      encoding="utf-8")
    assert main(["parse", "-m", str(tagger_checkpoint), str(source)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"kgparser parse: error: {source}:1: ") and "holds white space" in err
    assert err.count("\n") == 1
    assert main(["parse", "-m", str(tagger_checkpoint), str(source), "--keep-skipped", "-o", str(out)]) == 0
    kept, parsed = out.read_text(encoding="utf-8").split("\n\n")[:2]
    assert kept == source.read_text(encoding="utf-8").split("\n\n")[0]
    assert all(t is not None for t in parse_conllu(parsed + "\n")[0].upos)


# -- plain text -----------------------------------------------------------------------------

def test_pretokenized_text_reads_one_sentence_per_line():
    sentences = read(["The  dog barks .\n", "   \n", "\tHi\tthere\n"], "text")
    assert [s.forms for s in sentences] == [["The", "dog", "barks", "."], ["Hi", "there"]]
    assert [(s.sent_id, s.text, s.line) for s in sentences] == [("1", "The dog barks .", 1), ("2", "Hi there", 3)]
    assert sentences[0].upos == [None] * 4 and sentences[0].heads == [-1] * 5


def test_pretokenized_text_with_crlf_line_ends_and_control_characters(tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(b"The dog\r\n\r\nbarks .\r\n")
    assert [s.to_conllu().count("\r") for s in read(source, "text")] == [0, 0]
    source.write_bytes(b"The dog\r\nba\x00rks .\r\n")
    with pytest.raises(ConlluError, match=r"in\.txt:2: token 1 holds the control character U\+0000"):
        read(source, "text")


def test_plain_text_in_conllu_out(tagger_checkpoint, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("w1 w2 w3\n\nw4 w5\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert main(["parse", "-m", str(tagger_checkpoint), str(source), "--input-format", "text", "-o", str(out)]) == 0
    assert "tags (auto): UPOS predicted for 5 of 5 words" in capsys.readouterr().err
    parsed = read_conllu(out)  # a complete tree for every sentence
    assert [(s.sent_id, s.text, s.forms) for s in parsed] == [("1", "w1 w2 w3", ["w1", "w2", "w3"]),
                                                              ("2", "w4 w5", ["w4", "w5"])]
    assert all(t is not None for s in parsed for t in s.upos + s.xpos)
    again = Parser.load(tagger_checkpoint).parse(["w1 w2 w3", "w4 w5"], input_format="text")
    assert [s.to_conllu() for s in again] == [s.to_conllu() for s in parsed]


# -- evaluation and training logs ------------------------------------------------------------

GOLD = ("1\ta\t_\tNOUN\tNN\tNumber=Sing|Foo=Bar\t2\tnsubj\t_\t_\n"
        "2\tb\t_\tVERB\tVB\tTense=Past|Mood=Ind\t0\troot\t_\t_\n"
        "3\tc\t_\tPUNCT\t.\t_\t2\tpunct\t_\t_\n\n")
PRED = ("1\ta\t_\tNOUN\tNNS\tNumber=Sing\t2\tnsubj\t_\t_\n"
        "2\tb\t_\tAUX\tVB\tMood=Ind|Tense=Past\t0\troot\t_\t_\n"
        "3\tc\t_\tPUNCT\t.\tX=Y\t2\tpunct\t_\t_\n\n")


def test_evaluation_reports_tag_accuracies(tmp_path, capsys):
    scores = evaluate(parse_conllu(GOLD), parse_conllu(PRED))
    assert scores.tag_accuracy("upos") == pytest.approx(2 / 3) and scores.tag_accuracy("xpos") == pytest.approx(2 / 3)
    assert scores.tag_accuracy("ufeats") == 1.0  # Foo and X are not universal features; order does not matter
    assert scores.tag_accuracy("feats") == pytest.approx(1 / 3)
    no_xpos = GOLD.replace("\tNN\t", "\t_\t").replace("\tVB\t", "\t_\t").replace("\t.\t", "\t_\t")
    assert evaluate(parse_conllu(no_xpos), parse_conllu(PRED)).tag_accuracy("xpos") is None
    (tmp_path / "gold.conllu").write_text(GOLD, encoding="utf-8")
    (tmp_path / "pred.conllu").write_text(PRED, encoding="utf-8")
    assert main(["evaluate", str(tmp_path / "gold.conllu"), str(tmp_path / "pred.conllu"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["upos"] == pytest.approx(2 / 3) and data["ufeats"] == 1.0
    assert main(["evaluate", str(tmp_path / "gold.conllu"), str(tmp_path / "pred.conllu")]) == 0
    text = capsys.readouterr().out
    assert "UPOS                 66.67  (2/3)" in text and "UFeats              100.00  (3/3)" in text


def test_training_logs_dev_tag_accuracy_and_saves_plain_data(tagger_checkpoint):
    records = [json.loads(line) for line in (tagger_checkpoint.parent / "metrics.jsonl").read_text().splitlines()]
    assert all(0 <= records[0][f"dev_{c}"] <= 1 for c in COLUMNS)
    data = torch.load(tagger_checkpoint, weights_only=True)
    assert set(data["model"]["vocabs"]["tag_columns"]) == set(COLUMNS)
    assert Model.load(tagger_checkpoint).tag_columns == list(COLUMNS)  # the lemma column comes back
    assert data["dev"]["upos"] == records[data["epoch"] - 1]["dev_upos"]


# -- end to end -----------------------------------------------------------------------------

def test_a_joint_tagger_parses_untagged_text_better_than_a_gold_tag_model(tmp_path):
    """Trained for 3 epochs on 250 sentences of the EWT sample (about 10 CPU seconds),
    parsing 100 dev sentences without tags: the tagger model beats the gold-tag model
    forced to read them (``tags="input"``); on this data 0.25 LAS against 0.02."""
    write_conllu(read_conllu(sample_data_path("train"))[:250], tmp_path / "train.conllu")
    dev = read_conllu(sample_data_path("dev"))[:100]
    small = {"word_dim": 32, "pos_dim": 12, "lstm_layers": 2, "lstm_hidden": 32, "mlp_hidden": 32}
    las = {}
    for name, extra, tags in [("gold", {}, "input"), ("tagger", {"tag_input": "predicted", "tagger": {"upos": True}},
                                                      "auto")]:
        train(run_config(tmp_path / name, {**small, **extra}, epochs=3, train_file=tmp_path / "train.conllu"),
              log=lambda line: None)
        with pytest.warns(TagWarning) if name == "gold" else contextlib.nullcontext():
            parsed = Parser.load(tmp_path / name / "run" / "best.pt").parse(strip_tags(dev), tags=tags)
        scores = evaluate(dev, parsed)
        las[name] = scores.las
        if name == "tagger":
            assert scores.tag_accuracy("upos") > 0.5
    assert las["tagger"] > las["gold"] + 0.1, las
