"""The network (slot projections equal the plain MLP), inputs, valid-tree repair,
and overfitting a few sentences with every registered transition system."""
import random

import numpy as np
import pytest
import torch

torch.set_num_threads(1)
from kgparser.config import config_from_dict
from kgparser.inference.decode import decode
from kgparser.io.conllu import parse_conllu
from kgparser.model import Model
from kgparser.model.inputs import rounded_width
from kgparser.training.trainer import Trainer
from kgparser.transitions import get_system, system_names
from kgparser.transitions.trees import random_projective_tree

TINY_MODEL = {"word_dim": 12, "pos_dim": 6, "lstm_layers": 1, "lstm_hidden": 16, "mlp_hidden": 16,
              "word_dropout": 0.0}
LABELS = ("nsubj", "obj", "amod", "advmod")
#: TINY_MODEL reads gold UPOS and has seen only short sentences, so parsing untagged or longer
#: input warns; modules where those warnings are not the subject ignore them (they are tested
#: in test_tagging.py and test_parse_safety.py)
IGNORE_TINY_MODEL_WARNINGS = pytest.mark.filterwarnings("ignore::kgparser.inference.tags.TagWarning",
                                                        "ignore::kgparser.inference.parser.LongSentenceWarning",
                                                        "ignore::kgparser.inference.parser.RulesFallback")


def tiny_conllu(count: int, seed: int = 0, max_len: int = 6) -> str:
    """CoNLL-U text of ``count`` random projective trees with random words, tags and labels."""
    rng = random.Random(seed)
    blocks = []
    for s in range(count):
        n = rng.randint(2, max_len)
        heads = random_projective_tree(n, rng)
        tops = [d for d in range(1, n + 1) if heads[d] == 0]
        for extra in tops[1:]:  # UD: a single root word (still projective)
            heads[extra] = tops[0]
        rows = [f"# sent_id = tiny-{s}"]
        for d in range(1, n + 1):
            label = "root" if heads[d] == 0 else rng.choice(LABELS)
            rows.append(f"{d}\tw{rng.randint(0, 9)}\t_\t{rng.choice('ABC')}\t_\t_\t{heads[d]}\t{label}\t_\t_")
        blocks.append("\n".join(rows) + "\n\n")
    return "".join(blocks)


def tiny_sentences(count: int, seed: int = 0, max_len: int = 6):
    return list(parse_conllu(tiny_conllu(count, seed, max_len), "tiny.conllu"))


def tiny_config(system: str = "arc-hybrid", **training):
    return config_from_dict({"system": {"name": system}, "model": dict(TINY_MODEL),
                             "training": {"lr": 0.01, **training}})


def attachment(model: Model, sentences) -> float:
    trees = decode(model, sentences, batch_size=4).trees
    pairs = [(tree[0][d], tree[1][d], s.heads[d], s.deprels[d])
             for s, tree in zip(sentences, trees) for d in range(1, s.n + 1)]
    return sum(h == gh and lab == gl for h, lab, gh, gl in pairs) / len(pairs)


def overfit(config, sentences, epochs: int, explore: bool = False) -> tuple[Model, float]:
    torch.manual_seed(0)
    model = Model.build(config, sentences)
    trainer = Trainer(model, config)
    examples = [e for e in trainer.examples(sentences) if e.buildable]
    rng, np_rng = random.Random(0), np.random.default_rng(0)
    score = 0.0
    for epoch in range(epochs):
        trainer.train_batch(examples, explore, rng, np_rng)
        if epoch % 10 == 9:
            score = attachment(model, [e.sentence for e in examples])
            if score == 1.0:
                break
    return model, score


@pytest.mark.parametrize("name", system_names())
def test_every_system_overfits_a_few_sentences(name):
    sentences = tiny_sentences(4, seed=1)
    oracle = "static-dynamic" if get_system(name).static_actions else "static"
    _, score = overfit(tiny_config(name, oracle=oracle), sentences, epochs=150)
    assert score == 1.0


@pytest.mark.parametrize("options", [{}, {"root": "end"}], ids=["root-first", "root-end"])
def test_dynamic_oracle_with_exploration_overfits(options):
    sentences = tiny_sentences(4, seed=2)
    config = tiny_config("arc-hybrid", oracle="dynamic", p_agg=0.5)
    config.system.options = options
    _, score = overfit(config, sentences, epochs=150, explore=True)
    assert score == 1.0


@pytest.mark.parametrize("separate", [False, True])
def test_slot_projections_equal_the_concatenated_mlp(separate):
    sentences = tiny_sentences(3, seed=3)
    config = tiny_config()
    config.model.separate_label_mlp = separate
    model = Model.build(config, sentences)
    network = model.network
    inputs = model.inputs(sentences)
    vectors = network.encode(inputs)
    rows = torch.tensor([[0, 1, len(vectors) - 1, 2, 3, 0, 1, 1, 1, 4, 2, 0]])
    slots = model.n_slots
    flat = rows * slots + torch.arange(slots)
    fast = network.hidden(network.project(vectors), flat)
    features = vectors[rows[0]].reshape(1, -1)
    weight = network.w1.view(vectors.shape[1], slots, -1).permute(1, 0, 2).reshape(-1, network.mlp_hidden)
    plain = torch.tanh(features @ weight + network.b1)
    assert torch.allclose(fast, plain, atol=1e-5)


def test_separate_label_mlp_gives_each_head_its_own_hidden_layer():
    sentences = tiny_sentences(3, seed=3)
    config = tiny_config()
    config.model.separate_label_mlp = True
    network = Model.build(config, sentences).network
    hidden = torch.randn(5, 2 * config.model.mlp_hidden)
    actions, labels = network.head_scores(hidden)
    changed = hidden.clone()
    changed[:, config.model.mlp_hidden:] += 1.0  # only the label head's units
    new_actions, new_labels = network.head_scores(changed)
    assert torch.equal(actions, new_actions) and not torch.allclose(labels, new_labels)
    _, score = overfit(config, sentences, epochs=150)
    assert score == 1.0


def test_encode_rows_follow_sentence_offsets():
    sentences = tiny_sentences(3, seed=4)
    model = Model.build(tiny_config(), sentences)
    inputs = model.inputs(sentences)
    vectors = model.network.encode(inputs)
    assert inputs.offsets[0] == 0
    assert inputs.pad_row == sum(s.n + 1 for s in sentences) == len(vectors) - 1
    alone = model.network.encode(model.inputs(sentences[1:2]))
    start = inputs.offsets[1]
    assert torch.allclose(vectors[start:start + sentences[1].n + 1], alone[:-1], atol=1e-5)


def test_word_dropout_replaces_rare_words_more_often():
    sentences = tiny_sentences(30, seed=5)
    config = config_from_dict({"model": {**TINY_MODEL, "word_dropout": 0.25}})
    model = Model.build(config, sentences)
    rng = np.random.default_rng(0)
    dropped = np.zeros(len(model.vocabs.words))
    seen = np.zeros(len(model.vocabs.words))
    for _ in range(200):
        clean = model.inputs(sentences).words.numpy()
        noisy = model.inputs(sentences, rng=rng).words.numpy()
        np.add.at(seen, clean, 1)
        np.add.at(dropped, clean, noisy != clean)
    counts = np.array(model.vocabs.words.counts)
    for word in range(3, len(counts)):
        expected = 0.25 / (counts[word] + 0.25)
        assert abs(dropped[word] / seen[word] - expected) < 0.05
    assert dropped[2] == 0  # ROOT is never dropped


def test_tag_dropout():
    sentences = tiny_sentences(30, seed=5)
    model = Model.build(config_from_dict({"model": {**TINY_MODEL, "pos_dropout": 0.5}}), sentences)
    clean = model.inputs(sentences).tags.numpy()
    noisy = model.inputs(sentences, rng=np.random.default_rng(0)).tags.numpy()
    real = clean > 2
    assert 0.4 < (noisy[real] == 1).mean() < 0.6
    assert (noisy[~real] == clean[~real]).all()


@pytest.mark.parametrize("key", ["input_dropout", "lstm_dropout", "recurrent_dropout"])
def test_bilstm_dropout_only_while_training(key):
    sentences = tiny_sentences(4, seed=7)
    model = Model.build(config_from_dict({"model": {**TINY_MODEL, "lstm_layers": 2, key: 0.5}}), sentences)
    inputs = model.inputs(sentences)
    network = model.network
    network.train()
    torch.manual_seed(0)
    first, second = network.encode(inputs), network.encode(inputs)
    assert not torch.equal(first, second)
    network.eval()
    assert torch.equal(network.encode(inputs), network.encode(inputs))
    plain = Model.build(config_from_dict({"model": {**TINY_MODEL, "lstm_layers": 2}}), sentences).network
    plain.train()
    assert torch.equal(plain.encode(inputs), plain.encode(inputs))


def test_recurrent_dropout_drops_whole_columns_of_every_recurrent_matrix():
    sentences = tiny_sentences(4, seed=7)
    config = config_from_dict({"model": {**TINY_MODEL, "char_dim": 5, "char_hidden": 4, "recurrent_dropout": 0.5}})
    model = Model.build(config, sentences)
    network = model.network
    network.train()
    torch.manual_seed(0)
    network.encode(model.inputs(sentences)).sum().backward()
    for lstm in [*network.forward_lstms, *network.backward_lstms, network.char_lstm]:
        for name in lstm._flat_weights_names:
            if name.startswith("weight_hh"):
                unused = (getattr(lstm, name).grad == 0).all(dim=0)
                assert 0 < unused.sum() < len(unused), name
    input_weights = network.forward_lstms[0].weight_ih_l0.grad
    assert not (input_weights == 0).all(dim=0).any()


def test_normalized_words_share_an_embedding_and_keep_their_characters():
    text = ("1\tThe\t_\tA\t_\t_\t2\tdet\t_\t_\n2\tthe\t_\tB\t_\t_\t0\troot\t_\t_\n"
            "3\tRoom12\t_\tB\t_\t_\t2\tobj\t_\t_\n\n")
    sentences = list(parse_conllu(text, "case.conllu"))
    config = config_from_dict({"model": {**TINY_MODEL, "char_dim": 5, "char_hidden": 4, "normalize_words": True}})
    model = Model.build(config, sentences)
    assert "the" in model.vocabs.words and "The" not in model.vocabs.words
    assert model.vocabs.words.counts[model.vocabs.words.get("the")] == 2
    assert "T" in model.vocabs.chars and "R" in model.vocabs.chars
    unseen = list(parse_conllu(text.replace("Room12", "ROOM47"), "case.conllu"))
    words = model.inputs(unseen).words[0].tolist()
    assert words[1] == words[2] == model.vocabs.words.get("the")
    assert words[3] == model.vocabs.words.get("room00")
    plain = Model.build(config_from_dict({"model": TINY_MODEL}), sentences)
    assert "The" in plain.vocabs.words and "the" in plain.vocabs.words


def test_char_model_and_xpos_inputs():
    sentences = tiny_sentences(3, seed=6)
    config = config_from_dict({"model": {**TINY_MODEL, "char_dim": 5, "char_hidden": 4, "pos": "xpos"}})
    model = Model.build(config, sentences)
    vectors = model.network.encode(model.inputs(sentences))
    assert vectors.shape == (sum(s.n + 1 for s in sentences) + 1, 32)


def char_model_and_sentences():
    """A character model and sentences whose forms vary in length (including one
    longer than any training form, with unseen characters)."""
    text = "".join(tiny_conllu(6, seed=3)).replace("\tw1\t", "\twalked\t").replace("\tw2\t", "\tzq\t")
    sentences = list(parse_conllu(text, "chars.conllu"))
    model = Model.build(config_from_dict({"model": {**TINY_MODEL, "char_dim": 5, "char_hidden": 4}}), sentences)
    model.network.eval()
    sentences[0].forms[0] = "Überlängenwort"
    return model, sentences


def test_a_char_table_gives_each_form_the_vector_its_batch_computes():
    model, sentences = char_model_and_sentences()
    table = model.inputs.char_table(sentences, group=3)
    with torch.no_grad():
        for batch in (sentences[:2], sentences[2:]):
            alone = model.inputs(batch)
            shared = model.inputs(batch, char_table=table)
            assert shared.chars is None and shared.char_vectors is table.vectors
            assert torch.allclose(model.network.encode(alone), model.network.encode(shared), atol=1e-6)
    assert set(table.rows) == {form for s in sentences for form in s.forms} | {"\0root"}
    assert not table.vectors[-1].any() and len(table.vectors) == len(table.rows) + 1
    with pytest.raises(KeyError):
        model.inputs(list(parse_conllu("1\tunseen\t_\tA\t_\t_\t0\troot\t_\t_\n\n")), char_table=table)


def test_a_char_table_runs_torchs_own_lstm_kernels_and_leaves_onednn_on(monkeypatch):
    """oneDNN would compile a kernel for every (forms, length) group shape a corpus brings."""
    model, sentences = char_model_and_sentences()
    seen = []
    original = model.network.char_vectors
    monkeypatch.setattr(model.network, "char_vectors",
                        lambda chars, lengths: seen.append(torch.backends.mkldnn.enabled) or original(chars, lengths))
    model.inputs.char_table(sentences)
    assert seen and not any(seen)
    assert torch.backends.mkldnn.enabled


def test_rounded_widths_are_few_never_smaller_and_exact_up_to_16():
    widths = [rounded_width(w) for w in range(1, 513)]
    assert widths[:16] == list(range(1, 17))
    assert all(r >= w for w, r in zip(range(1, 513), widths)) and widths == sorted(widths)
    assert all(r <= w * 1.25 for w, r in zip(range(1, 513), widths))
    assert len(set(widths)) == 16 + 4 * 5  # 4 per doubling from 17 to 512
    assert all(rounded_width(r) == r for r in widths)


def test_a_rounded_width_changes_no_token_vector_or_tag_score():
    model, sentences = char_model_and_sentences()
    long = "".join(f"{d}\tw{d % 7}\t_\tA\t_\t_\t{0 if d == 1 else 1}\t{'root' if d == 1 else 'obj'}\t_\t_\n"
                   for d in range(1, 19))  # width 19, padded to 20
    sentences = sentences + list(parse_conllu(long + "\n"))
    with torch.no_grad():
        exact = model.inputs(sentences)
        padded = model.inputs(sentences, round_width=True)
        assert padded.words.shape[1] == rounded_width(exact.words.shape[1]) > exact.words.shape[1]
        vectors, scores, _ = model.network.encode_all(exact)
        padded_vectors, padded_scores, _ = model.network.encode_all(padded)
    assert torch.allclose(vectors, padded_vectors, atol=1e-6, rtol=0)
    assert scores.keys() == padded_scores.keys()
    for column in scores:
        assert torch.allclose(scores[column], padded_scores[column], atol=1e-6, rtol=0)


def test_decoding_runs_the_character_lstm_once_per_distinct_form(monkeypatch):
    model, sentences = char_model_and_sentences()
    plain = decode(model, sentences, batch_size=2).trees
    counted = []
    original = model.network.char_vectors
    monkeypatch.setattr(model.network, "char_vectors",
                        lambda chars, lengths: counted.append(len(lengths)) or original(chars, lengths))
    assert decode(model, sentences, batch_size=2).trees == plain
    assert sum(counted) == len({form for s in sentences for form in s.forms}) + 1  # and ROOT


@pytest.mark.parametrize("name", system_names())
def test_every_system_trains_with_aggressive_exploration_on_any_tree(name):
    """Exploration leads the oracles off the gold path, also on non-projective gold."""
    rng = random.Random(7)
    sentences = tiny_sentences(3, seed=8)
    text = "".join(s.to_conllu() for s in sentences)
    heads = [-1, 3, 4, 0, 1, 3]  # 1 <- 4 crosses 2 -> ... : non-projective
    rows = [f"{d}\tw{rng.randint(0, 9)}\t_\tA\t_\t_\t{heads[d]}\t{'root' if heads[d] == 0 else 'obj'}\t_\t_"
            for d in range(1, 6)]
    sentences = list(parse_conllu(text + "\n".join(rows) + "\n\n"))
    oracle = "static-dynamic" if get_system(name).static_actions else "dynamic"
    config = tiny_config(name, oracle=oracle, p_agg=1.0, unbuildable="dynamic")
    model = Model.build(config, sentences)
    trainer = Trainer(model, config)
    examples = trainer.examples(sentences)
    for _ in range(2):
        stats = trainer.train_batch(examples, True, random.Random(0), np.random.default_rng(0))
        assert stats.scored > 0 and stats.wrong_followed <= stats.transitions
    for heads, _labels in decode(model, sentences).trees:
        assert sum(1 for h in heads[1:] if h == 0) == 1
