"""The pretrained-encoder path (``model.encoder``) end to end, on tiny BERT models
the tests build and save themselves (a WordPiece vocabulary, random weights;
no download): subword alignment and pooling, windows, the state cache,
checkpoints that name their encoder, and training with it."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

transformers = pytest.importorskip("transformers")

from test_cli_train_parse import write_config  # noqa: E402
from test_model import IGNORE_TINY_MODEL_WARNINGS, TINY_MODEL, tiny_conllu  # noqa: E402

from kgparser.cli import main  # noqa: E402
from kgparser.config import ConfigError, EncoderConfig, config_from_dict  # noqa: E402
from kgparser.inference.parser import Parser  # noqa: E402
from kgparser.io.conllu import parse_conllu, read_conllu  # noqa: E402
from kgparser.model import Model  # noqa: E402
from kgparser.model.checkpoint import CheckpointError  # noqa: E402
from kgparser.model.encoder import Encoder, EncoderError, EncoderNotFound, fingerprint  # noqa: E402
from kgparser.model.inputs import StateCache  # noqa: E402
from kgparser.model.vocab import Vocabularies  # noqa: E402
from kgparser.training.trainer import Trainer  # noqa: E402

pytestmark = IGNORE_TINY_MODEL_WARNINGS
ROOT = Path(__file__).resolve().parents[1]
torch.set_num_threads(1)
transformers.utils.logging.disable_progress_bar()  # the tests' own saving of tiny models

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "dog", "play", "##ing", "##ed", "don", "'", "t", ".", "cat", "run", "##s"] + \
        [f"w{i}" for i in range(10)]
#: positions of the tiny BERT: windows of 22 subwords between [CLS] and [SEP]
MAX_POSITIONS = 24


def tiny_bert(folder, seed: int = 0, words=WORDS, hidden: int = 16, layers: int = 2):
    """A randomly initialised 2-layer BERT with a fast WordPiece tokenizer, saved to ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(SPECIALS + list(words)) + "\n", encoding="utf-8")
    transformers.BertTokenizerFast.from_pretrained(folder).save_pretrained(folder)
    torch.manual_seed(seed)
    config = transformers.BertConfig(vocab_size=len(SPECIALS) + len(words), hidden_size=hidden,
                                     num_hidden_layers=layers, num_attention_heads=2, intermediate_size=2 * hidden,
                                     max_position_embeddings=MAX_POSITIONS)
    transformers.BertModel(config).eval().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return tiny_bert(tmp_path_factory.mktemp("bert") / "tiny-bert")


def direct_states(folder, texts: list[list[str]]) -> torch.Tensor:
    """The hidden states ``[pieces + 2, layers + 1, H]`` of one tokenized window, [CLS] and [SEP] included."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder).eval()
    ids = tokenizer.convert_tokens_to_ids(["[CLS]"] + texts + ["[SEP]"])
    with torch.no_grad():
        output = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    return torch.stack(output.hidden_states, dim=2)[0]


def close(states: torch.Tensor, expected: torch.Tensor) -> bool:
    """Equal up to float16 storage and the kernels' rounding (a padded batch takes other paths)."""
    return states.shape == expected.shape and torch.allclose(states.float(), expected.float(), atol=4e-3, rtol=2e-3)


# -- alignment and pooling ----------------------------------------------------------------

def test_mean_pooling_averages_each_words_subwords(bert):
    states = Encoder(EncoderConfig(path=str(bert))).word_states([["the", "dog", "playing", "don't"]])[0]
    direct = direct_states(bert, ["the", "dog", "play", "##ing", "don", "'", "t"])
    assert states.shape == (5, 3, 16) and states.dtype == torch.float16
    assert close(states[0], direct[0]), "ROOT reads [CLS]"
    assert close(states[1], direct[1]) and close(states[2], direct[2])
    assert close(states[3], direct[3:5].mean(0))
    assert close(states[4], direct[5:8].mean(0)), "a word the tokenizer splits at '"


def test_first_pooling_takes_each_words_first_subword(bert):
    states = Encoder(EncoderConfig(path=str(bert), pooling="first")).word_states([["playing", "don't", "dog"]])[0]
    direct = direct_states(bert, ["play", "##ing", "don", "'", "t", "dog"])
    assert close(states, direct[[0, 1, 3, 6]])


def test_first_pooling_skips_a_bare_word_boundary_piece(bert):
    encoder = Encoder(EncoderConfig(path=str(bert), pooling="first"))
    encoder.boundary_ids = {encoder.tokenizer.convert_tokens_to_ids("play")}  # "play" plays SentencePiece's "▁"
    ids, owner, pooled = encoder._pieces(["playing", "play", "dog"])
    assert owner.tolist() == [1, 1, 2, 3] and pooled.tolist() == [False, True, True, True], \
        "a word with content skips its boundary pieces; a word of boundary pieces only keeps them"
    states = encoder.word_states([["playing", "play", "dog"]])[0]
    assert close(states, direct_states(bert, ["play", "##ing", "play", "dog"])[[0, 2, 3, 4]])


def test_a_word_the_tokenizer_drops_reads_as_the_unknown_token(bert):
    encoder = Encoder(EncoderConfig(path=str(bert)))
    dropped, unknown = encoder.word_states([["the", "\u200b", "dog"], ["the", "[UNK]", "dog"]])
    assert torch.equal(dropped, unknown)
    assert encoder.word_states([[""]])[0].shape == (2, 3, 16), "an empty form too"


def test_an_empty_sentence_has_root_alone(bert):
    states = Encoder(EncoderConfig(path=str(bert))).word_states([[]])[0]
    assert close(states, direct_states(bert, [])[:1])


def test_layers_zero_is_a_lookup_of_the_token_embeddings(bert):
    encoder = Encoder(EncoderConfig(path=str(bert), layers=0))
    assert encoder.model is None and encoder.n_states == 1
    table = transformers.AutoModel.from_pretrained(bert).get_input_embeddings().weight.detach()
    vocab = encoder.tokenizer.get_vocab()
    states = encoder.word_states([["playing", "dog"] * 30])[0]  # longer than any window: no windows needed
    assert states.shape == (61, 1, 16)
    assert close(states[0, 0], table[vocab["[CLS]"]])
    assert close(states[1, 0], (table[vocab["play"]] + table[vocab["##ing"]]) / 2)
    assert close(states[2, 0], table[vocab["dog"]])


@pytest.mark.parametrize("saved_as", ["float16", "bfloat16", "task model", "pytorch .bin"])
def test_layers_zero_reads_the_table_in_place_without_loading_the_model(bert, tmp_path, monkeypatch, saved_as):
    """The table is memory-mapped from the safetensors file whatever its float
    type or key prefix; a folder without safetensors loads the model instead."""
    folder = tmp_path / "saved"
    shutil.copytree(bert, folder)
    (folder / "model.safetensors").unlink()
    model = transformers.AutoModel.from_pretrained(bert)
    if saved_as == "task model":  # keys under the base-model prefix: bert.embeddings...
        tagger = transformers.BertForTokenClassification(model.config)
        tagger.bert.load_state_dict(model.state_dict(), strict=False)
        tagger.save_pretrained(folder)
    elif saved_as == "pytorch .bin":
        model.config.save_pretrained(folder)
        torch.save(model.state_dict(), folder / "pytorch_model.bin")
    else:
        model.to(getattr(torch, saved_as)).save_pretrained(folder)
    table = transformers.AutoModel.from_pretrained(folder).get_input_embeddings().weight.detach().float()
    if saved_as != "pytorch .bin":
        monkeypatch.setattr(transformers.AutoModel, "from_pretrained", lambda *a, **k: pytest.fail("model loaded"))
    encoder = Encoder(EncoderConfig(path=str(folder), layers=0))
    vocab = encoder.tokenizer.get_vocab()
    states = encoder.word_states([["playing", "dog"]])[0]
    assert torch.equal(states[2, 0], table[vocab["dog"]].to(states.dtype))
    assert close(states[1, 0], (table[vocab["play"]] + table[vocab["##ing"]]) / 2)


def test_fewer_layers_give_the_bottom_states(bert):
    full = Encoder(EncoderConfig(path=str(bert))).word_states([["the", "dog"]])[0]
    one = Encoder(EncoderConfig(path=str(bert), layers=1)).word_states([["the", "dog"]])[0]
    assert close(one, full[:, :2])


def test_a_batch_gives_each_sentence_its_own_states(bert):
    encoder = Encoder(EncoderConfig(path=str(bert)))
    sentences = [["the", "dog"], ["cat", "runs", "playing", "."], [], ["w1"] * 30]
    together = encoder.word_states(sentences)
    for sentence, states in zip(sentences, together):
        assert close(states, encoder.word_states([sentence])[0].float())


# -- windows --------------------------------------------------------------------------------

def brute_force_states(folder, pieces: list[str], window: int, overlap: int) -> torch.Tensor:
    """Each piece's states from the window (of ``window`` pieces, starting every
    ``window - overlap`` and the last at the end) where it is most central, the
    earliest on a tie; row 0: [CLS] of the first window."""
    m = len(pieces)
    starts = list(range(0, m - window, window - overlap)) + [m - window]
    runs = [direct_states(folder, pieces[s:s + window]) for s in starts]
    rows = [runs[0][0]]
    for p in range(m):
        centrality = [min(p - s, s + window - 1 - p) if s <= p < s + window else -1 for s in starts]
        k = centrality.index(max(centrality))
        rows.append(runs[k][1 + p - starts[k]])
    return torch.stack(rows)


@pytest.mark.parametrize("window, overlap", [(6, 2), (5, 4), (22, 11), (7, 0)])
def test_long_sentences_take_each_subword_from_its_most_central_window(bert, window, overlap):
    words = [WORDS[k % 9 + 9] for k in range(40)]  # one piece each: cat run ##s ... w5
    words = [w for w in words if not w.startswith("#")]
    states = Encoder(EncoderConfig(path=str(bert), window=window, overlap=overlap)).word_states([words])[0]
    assert close(states, brute_force_states(bert, words, window, overlap))


def test_a_sentence_far_longer_than_the_model_is_encoded_whole(bert):
    words = ["playing", "dog", "don't"] * 100  # 600 subwords, 22 per window
    states = Encoder(EncoderConfig(path=str(bert))).word_states([words])[0]
    assert states.shape == (301, 3, 16) and bool(states.isfinite().all())


def test_a_short_sentence_is_one_window_whatever_the_window(bert):
    words = ["the", "dog", "playing", "."]
    narrow = Encoder(EncoderConfig(path=str(bert), window=5)).word_states([words])[0]
    wide = Encoder(EncoderConfig(path=str(bert))).word_states([words])[0]
    assert torch.equal(narrow, wide)


def test_a_window_beyond_the_models_positions_is_refused(bert):
    with pytest.raises(EncoderError, match="model.encoder.window: 23: .* at most 22 subwords"):
        Encoder(EncoderConfig(path=str(bert), window=23))


# -- cache and inputs ----------------------------------------------------------------------------

def test_the_cache_gives_the_states_computed_directly(bert):
    encoder = Encoder(EncoderConfig(path=str(bert)))
    sentences = list(parse_conllu(tiny_conllu(12, seed=3)))
    cache = StateCache(limit=None)
    first = cache.states(encoder, sentences)
    again = cache.states(encoder, sentences[::-1])[::-1]
    direct = encoder.word_states([s.forms for s in sentences])
    assert all(a is b for a, b in zip(first, again)), "computed once"
    assert all(close(a, d.float()) for a, d in zip(first, direct))


def test_the_parse_time_cache_is_bounded(bert):
    encoder = Encoder(EncoderConfig(path=str(bert)))
    cache = StateCache(limit=3)
    sentences = list(parse_conllu(tiny_conllu(8, seed=3)))
    cache.states(encoder, sentences)
    assert len(cache.items) == 3 and list(cache.items) == [tuple(s.forms) for s in sentences[-3:]]


def test_the_cache_makes_room_before_the_encoder_runs(bert, monkeypatch):
    """At parse time the cache and a new pass's states together stay within its
    bound: the least recently used sentences go before the encoder runs (a
    sentence asked for again stays)."""
    encoder = Encoder(EncoderConfig(path=str(bert)))
    cache = StateCache(limit=4)
    sentences = list(parse_conllu(tiny_conllu(7, seed=3)))
    cache.states(encoder, sentences[:4])
    held = []
    word_states = encoder.word_states
    monkeypatch.setattr(encoder, "word_states", lambda missing, *mix: held.append(len(cache.items))
                        or word_states(missing, *mix))
    cache.states(encoder, [sentences[0], *sentences[4:7]])
    assert held == [1] and list(cache.items) == [tuple(s.forms) for s in [sentences[0], *sentences[4:7]]]


def test_a_models_inputs_carry_the_padded_states(bert):
    config = config_from_dict({"model": {**TINY_MODEL, "encoder": {"path": str(bert), "dim": 8}}})
    sentences = list(parse_conllu(tiny_conllu(4, seed=2)))
    model = Model(config, Vocabularies.from_sentences(sentences))
    inputs = model.inputs(sentences)
    width = max(s.n for s in sentences) + 1
    assert inputs.encoder.shape == (4, width, 3, 16)
    states = model.encoder.word_states([sentences[1].forms])[0]
    assert torch.equal(inputs.encoder[1, :sentences[1].n + 1], states)
    assert not inputs.encoder[1, sentences[1].n + 1:].any(), "padding is zero"
    vectors = model.network.encode(inputs)
    assert vectors.shape[0] == sum(s.n + 1 for s in sentences) + 1


def test_quantized_encoder_gives_states_close_to_float(bert):
    words = [["the", "dog", "playing", "."]]
    exact = Encoder(EncoderConfig(path=str(bert))).word_states(words)[0].float()
    quantized = Encoder(EncoderConfig(path=str(bert), quantize=True)).word_states(words)[0].float()
    assert quantized.shape == exact.shape and not torch.equal(quantized, exact)
    assert torch.nn.functional.cosine_similarity(quantized.flatten(), exact.flatten(), dim=0) > 0.98


# -- errors ----------------------------------------------------------------------------------------

def test_without_transformers_the_error_says_what_to_install(bert, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(EncoderError, match=r'pip install "kgparser\[transformers\]"'):
        Encoder(EncoderConfig(path=str(bert)))


def test_a_missing_encoder_is_named(tmp_path):
    with pytest.raises(EncoderNotFound, match=f"model.encoder.path: {tmp_path / 'absent'}: no such folder"):
        Encoder(EncoderConfig(path=str(tmp_path / "absent")))


def test_too_many_layers_are_refused(bert):
    with pytest.raises(EncoderError, match="model.encoder.layers: 3: .* has 2 layers"):
        Encoder(EncoderConfig(path=str(bert), layers=3))


# -- training and checkpoints ---------------------------------------------------------------------

def write_run(tmp_path, encoder: str, epochs: int = 1) -> str:
    return write_config(tmp_path, model_extra=f"  encoder: {{path: {encoder}, dim: 8}}\n", sentences=(12, 4),
                        epochs=epochs)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run trained with an encoder given by a path relative to its config."""
    folder = tmp_path_factory.mktemp("trained")
    tiny_bert(folder / "encoders" / "bert")
    assert main(["train", write_run(folder, "encoders/bert"), "--quiet"]) == 0
    return folder


def test_a_checkpoint_names_its_encoder_and_holds_none_of_its_weights(trained):
    data = torch.load(trained / "run" / "best.pt", weights_only=True)["model"]
    assert data["config"]["model"]["encoder"]["path"] == str(trained / "encoders" / "bert")
    assert len(data["encoder_fingerprint"]) == 64
    assert not [name for name in data["weights"] if "embeddings" in name or "attention" in name]
    assert {name for name in data["weights"] if name.startswith("encoder_mix.")} == \
        {"encoder_mix.weights", "encoder_mix.gamma", "encoder_mix.projection.weight", "encoder_mix.projection.bias"}


@pytest.mark.parametrize("run", ["trained", "finetuned"])
def test_a_loaded_checkpoint_parses_as_training_evaluated_it(run, request):
    folder = request.getfixturevalue(run)
    dev = str(folder / "dev.conllu")
    parsed = Parser.load(folder / "run" / "best.pt").parse(dev)
    gold = read_conllu(dev)
    las = sum(p.heads[d] == g.heads[d] and p.deprels[d] == g.deprels[d]
              for p, g in zip(parsed, gold) for d in range(1, g.n + 1)) / sum(g.n for g in gold)
    records = [json.loads(line) for line in (folder / "run" / "metrics.jsonl").read_text().splitlines()]
    assert las == pytest.approx(max(r["dev_las"] for r in records if "dev_las" in r))


def test_the_decoder_encodes_the_sentences_of_many_batches_in_one_pass(trained, monkeypatch):
    """Batches of one sentence, but one encoder pass over the 4 dev sentences
    (:meth:`Inputs.states_ahead`), whose states the batches then read from the cache."""
    parser = Parser.load(trained / "run" / "best.pt", batch_size=1)
    passes = []
    word_states = parser.model.encoder.word_states
    monkeypatch.setattr(parser.model.encoder, "word_states", lambda sentences, *mix: passes.append(len(sentences))
                        or word_states(sentences, *mix))
    parser.parse(str(trained / "dev.conllu"))
    assert passes == [4]


def test_at_parse_time_the_encoder_mixes_each_subword_before_pooling(trained):
    """A parse caches one mixed vector per word (its network's weights of the
    states, :meth:`EncoderMix.layer_weights`), which the mix then projects as it
    would have mixed and projected all the states; training keeps every state."""
    model = Parser.load(trained / "run" / "best.pt").model
    model.network.eval()
    sentences = read_conllu(trained / "dev.conllu")
    mixed = model.inputs(sentences).encoder
    model.inputs.states = StateCache(limit=None)
    every = model.inputs(sentences).encoder
    assert mixed.shape[2] == 1 and every.shape[2] == model.encoder.n_states > 1
    with torch.no_grad():
        assert torch.allclose(model.network.encoder_mix(mixed), model.network.encoder_mix(every), atol=1e-2)
    model.network.train()
    assert model.inputs._fixed_mix() is None


def test_the_cache_forgets_states_mixed_otherwise(bert):
    encoder = Encoder(EncoderConfig(path=str(bert)))
    cache = StateCache()
    sentences = list(parse_conllu(tiny_conllu(2, seed=3)))
    first = cache.states(encoder, sentences, torch.tensor([1.0, 0.0, 0.0]))[0]
    again = cache.states(encoder, sentences, torch.tensor([0.0, 0.0, 1.0]))[0]
    assert first.shape[1] == 1 and not torch.equal(first, again)
    assert torch.equal(again, encoder.word_states([sentences[0].forms])[0][:, 2:].to(again.dtype))


def test_a_moved_encoder_is_found_with_encoder(trained, tmp_path, capsys):
    model, dev = str(trained / "run" / "best.pt"), str(trained / "dev.conllu")
    assert main(["parse", "--model", model, dev]) == 0
    expected = capsys.readouterr().out
    moved = shutil.copytree(trained / "encoders" / "bert", tmp_path / "elsewhere")
    shutil.move(trained / "encoders", tmp_path / "gone")
    try:
        assert main(["parse", "--model", model, dev]) == 1
        error = capsys.readouterr().err
        assert len(error.strip().splitlines()) == 1
        assert str(trained / "encoders" / "bert") in error and "--encoder PATH" in error
        with pytest.raises(EncoderNotFound, match="--encoder PATH"):
            Parser.load(model)
        assert main(["parse", "--model", model, dev, "--encoder", str(moved)]) == 0
        assert capsys.readouterr().out == expected
        again = Parser.load(model, encoder=moved).parse(dev)
        assert "".join(s.to_conllu() for s in again) == expected
    finally:
        shutil.move(tmp_path / "gone", trained / "encoders")


def test_encoder_given_to_a_model_without_one_is_one_line(trained, tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    assert main(["train", write_config(plain), "--quiet"]) == 0
    capsys.readouterr()
    model = str(plain / "run" / "best.pt")
    assert main(["parse", "--model", model, str(plain / "dev.conllu"),
                 "--encoder", str(trained / "encoders" / "bert")]) == 1
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and model in error and "trained without a pretrained encoder" in error


def test_another_encoder_is_refused_by_its_fingerprint(trained, tmp_path, capsys):
    other = tiny_bert(tmp_path / "other", seed=1)
    model = str(trained / "run" / "best.pt")
    assert main(["parse", "--model", model, str(trained / "dev.conllu"), "--encoder", str(other)]) == 1
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1
    assert f"the encoder at {other} differs from the one the model was trained with" in error
    with pytest.raises(EncoderError, match="fingerprint"):
        Parser.load(model, encoder=other)


def upos_bert(folder, sentences):
    """A BERT whose vocabulary is the training words and whose token embeddings
    are the one-hot UPOS each word has most often in training (layers: 0 reads
    just these): a deterministic encoder that carries part-of-speech signal."""
    counts: dict[str, dict[str, int]] = {}
    for sentence in sentences:
        for form, upos in zip(sentence.forms, sentence.upos):
            tally = counts.setdefault(form.lower(), {})
            tally[upos] = tally.get(upos, 0) + 1
    words = sorted(w for w in counts if w.isascii() and (w.isalnum() or len(w) == 1))
    tags = sorted({t for tally in counts.values() for t in tally})
    tiny_bert(folder, words=words, hidden=len(tags) + len(tags) % 2, layers=1)
    model = transformers.AutoModel.from_pretrained(folder)
    table = torch.zeros(len(SPECIALS) + len(words), len(tags) + len(tags) % 2)
    for row, word in enumerate(words, len(SPECIALS)):
        table[row, tags.index(max(counts[word], key=counts[word].get))] = 1.0
    with torch.no_grad():
        model.get_input_embeddings().weight.copy_(table)
    model.save_pretrained(folder)
    return folder


def test_training_with_a_signal_bearing_encoder_beats_training_without(tmp_path):
    """What this shows: the encoder's states reach the parser and its training
    uses them.  The encoder is a stand-in (a BERT whose token embeddings are the
    UPOS of the training words, read with ``layers: 0``), not a real pretrained
    model, and the parser reads no tags of its own, so the gain is that of
    knowing each word's usual part of speech.  300 sentences of the EWT sample,
    5 epochs, the same seed with and without the encoder (measured: best dev
    LAS 43.3 against 32.8)."""
    sample = "kgparser/resources/en_ewt_sample"
    train = read_conllu(f"{sample}/train.conllu")[:300]
    upos_bert(tmp_path / "upos-bert", train)
    (tmp_path / "train.conllu").write_text("".join(s.to_conllu() for s in train), encoding="utf-8")
    dev = read_conllu(f"{sample}/dev.conllu")[:60]
    (tmp_path / "dev.conllu").write_text("".join(s.to_conllu() for s in dev), encoding="utf-8")
    results = {}
    for name, encoder in (("without", "null"), ("with", str(tmp_path / "upos-bert"))):
        config = tmp_path / f"{name}.yaml"
        config.write_text(f"output_dir: {tmp_path / name}\ndata: {{train: train.conllu, dev: dev.conllu}}\n"
                          f"model: {{word_dim: 32, pos_dim: 0, tag_input: none, lstm_hidden: 32, mlp_hidden: 32,"
                          f" encoder: {{path: {encoder}, layers: 0, dim: 16}}}}\n"
                          f"training: {{epochs: 5, batch_size: 4, lr: 0.01, tensorboard: false}}\n", encoding="utf-8")
        assert main(["train", str(config), "--quiet"]) == 0
        lines = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        results[name] = max(json.loads(line).get("dev_las", 0) for line in lines)
    assert results["with"] > results["without"] + 0.05, results


def test_a_run_resumes_with_its_encoder_moved(tmp_path):
    config = write_run(tmp_path, str(tiny_bert(tmp_path / "bert")))
    assert main(["train", config, "--quiet"]) == 0
    shutil.move(tmp_path / "bert", tmp_path / "moved")
    assert main(["train", config, "--quiet", "--resume", "--set", "training.epochs=2"]) == 1, "its encoder is gone"
    assert main(["train", config, "--quiet", "--resume", "--set", "training.epochs=2",
                 "--set", f"model.encoder.path={tmp_path / 'moved'}"]) == 0
    saved = torch.load(tmp_path / "run" / "last.pt", weights_only=True)
    assert saved["epoch"] == 2 and saved["model"]["config"]["model"]["encoder"]["path"] == str(tmp_path / "moved")


# -- fine-tuning ------------------------------------------------------------------------------

TOKEN_TABLE = "embeddings.word_embeddings.weight"


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
    """A run whose encoder's layers train with the parser (a large rate, so they move)."""
    folder = tmp_path_factory.mktemp("finetuned")
    tiny_bert(folder / "bert")
    config = write_config(folder, model_extra="  encoder: {path: bert, dim: 8, finetune: true, lr: 0.01}\n",
                          sentences=(12, 4), epochs=2)
    assert main(["train", config, "--quiet"]) == 0
    return folder


def saved_encoder_weights(checkpoint) -> dict[str, torch.Tensor]:
    weights = torch.load(checkpoint, weights_only=True)["model"]["weights"]
    prefix = "finetuned_encoder."
    return {name[len(prefix):]: value for name, value in weights.items() if name.startswith(prefix)}


def test_finetuning_trains_the_layers_and_saves_all_but_the_token_table(finetuned):
    original = transformers.AutoModel.from_pretrained(finetuned / "bert").state_dict()
    saved = saved_encoder_weights(finetuned / "run" / "best.pt")
    assert set(saved) == set(original) - {TOKEN_TABLE}
    changed = {name.split(".")[2] for name in saved if name.startswith("encoder.layer.")
               and not torch.equal(saved[name], original[name])}
    assert changed == {"0", "1"}, "both layers trained"


def test_finetuning_leaves_the_token_table_as_the_encoder_folder_has_it(finetuned):
    model = Model.load(finetuned / "run" / "best.pt")
    original = transformers.AutoModel.from_pretrained(finetuned / "bert").get_input_embeddings().weight
    assert torch.equal(model.encoder.frozen_table().weight, original)
    assert not model.encoder.frozen_table().weight.requires_grad


def test_a_finetuned_encoders_states_are_computed_anew_with_gradients(finetuned):
    model = Model.load(finetuned / "run" / "best.pt")
    sentences = read_conllu(str(finetuned / "dev.conllu"))[:2]
    model.network.train()
    states = model.inputs(sentences).encoder
    assert states.requires_grad and states.dtype == torch.float32 and not model.inputs.states.items
    states.sum().backward()
    layer = model.network.finetuned_encoder.encoder.layer[0].attention.self.query.weight
    assert layer.grad is not None and layer.grad.abs().sum() > 0
    assert model.encoder.frozen_table().weight.grad is None


def test_the_finetuned_layers_train_at_their_own_rate(finetuned):
    model = Model.load(finetuned / "run" / "best.pt")
    groups = Trainer(model, model.config).optimizer.param_groups
    encoder = {id(p) for p in model.network.finetuned_encoder.parameters() if p.requires_grad}
    assert [group["lr"] for group in groups] == [model.config.training.lr, 0.01]
    assert {id(p) for p in groups[1]["params"]} == encoder
    assert not encoder & {id(p) for p in groups[0]["params"]}


def test_a_finetuned_checkpoint_missing_a_layer_is_inconsistent(finetuned, tmp_path):
    data = torch.load(finetuned / "run" / "best.pt", weights_only=True)
    del data["model"]["weights"]["finetuned_encoder.encoder.layer.1.output.dense.weight"]
    torch.save(data, tmp_path / "broken.pt")
    with pytest.raises(CheckpointError, match="inconsistent checkpoint: .*missing: finetuned_encoder.encoder.layer.1"):
        Model.load(tmp_path / "broken.pt")


def test_a_finetuned_run_resumes_to_the_same_model(tmp_path):
    """The encoder's dropout and weights are part of what ``--resume`` restores:
    one epoch and a resumed second end where two epochs in one go end."""
    encoder = f"  encoder: {{path: {tiny_bert(tmp_path / 'bert')}, dim: 8, finetune: true, lr: 0.01}}\n"
    for name, epochs in (("whole", 2), ("parts", 1)):
        folder = tmp_path / name
        folder.mkdir()
        config = write_config(folder, model_extra=encoder, sentences=(12, 4), epochs=epochs,
                              extra="  ema_decay: 0.9\n")
    assert main(["train", str(tmp_path / "whole" / "exp.yaml"), "--quiet"]) == 0
    assert main(["train", config, "--quiet"]) == 0
    assert main(["train", config, "--quiet", "--resume", "--set", "training.epochs=2"]) == 0
    whole = saved_encoder_weights(tmp_path / "whole" / "run" / "last.pt")
    parts = saved_encoder_weights(tmp_path / "parts" / "run" / "last.pt")
    assert whole.keys() == parts.keys() and len(whole) > 10
    for name, value in whole.items():
        assert torch.allclose(value, parts[name], atol=1e-6), name


def test_finetuning_what_cannot_train_is_refused(bert):
    with pytest.raises(ConfigError, match="model.encoder.finetune: needs transformer layers"):
        config_from_dict({"model": {"encoder": yaml.safe_load(f"{{path: {bert}, finetune: true, layers: 0}}")}})


def test_a_hub_name_loads_from_the_hugging_face_cache_without_network(bert, tmp_path):
    """A hub name is read from the cache first (so a cached model needs no
    network); its fingerprint is that of the cached snapshot's files."""
    snapshot = tmp_path / "hub" / "models--tiny--bert" / "snapshots" / "0123abcd"
    shutil.copytree(bert, snapshot)
    (tmp_path / "hub" / "models--tiny--bert" / "refs").mkdir()
    (tmp_path / "hub" / "models--tiny--bert" / "refs" / "main").write_text("0123abcd")
    code = ("from kgparser.config import EncoderConfig; from kgparser.model.encoder import Encoder; "
            "encoder = Encoder(EncoderConfig(path='tiny/bert')); print(encoder.fingerprint, encoder.n_states)")
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "0"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [fingerprint(bert), "3"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_an_encoder_model_trains_and_parses_on_cuda(tmp_path):
    config = write_run(tmp_path, str(tiny_bert(tmp_path / "bert")))
    assert main(["train", config, "--quiet", "--set", "device=cuda"]) == 0
    checkpoint, dev = tmp_path / "run" / "best.pt", tmp_path / "dev.conllu"
    on_cpu = Parser.load(checkpoint).parse(dev)
    on_gpu = Parser.load(checkpoint, device="cuda").parse(dev)
    assert [s.to_conllu() for s in on_gpu] == [s.to_conllu() for s in on_cpu]


def test_a_compact_encoder_keeps_the_states_of_its_treebanks(bert, tmp_path):
    """experiments/compact_encoder.py (how the encoder travels to a lent GPU
    machine): the embedding rows no word of the treebank uses are zero, the
    others and the layers unchanged, and the unpacked folder loads."""
    treebank = tmp_path / "tb.conllu"
    treebank.write_text("".join(f"{i}\t{w}\t_\t_\t_\t_\t{i - 1}\tdep\t_\t_\n"
                                for i, w in enumerate(["the", "dogs", "played", "."], 1)) + "\n", encoding="utf-8")
    script = str(ROOT / "experiments" / "compact_encoder.py")
    for command in (["pack", str(bert), str(tmp_path / "packed"), str(treebank)],
                    ["unpack", str(tmp_path / "packed"), str(tmp_path / "unpacked")]):
        done = subprocess.run([sys.executable, script, *command], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    packed = {p.name for p in (tmp_path / "packed").iterdir()}
    assert packed == {p.name for p in bert.iterdir()} - {"model.safetensors", "tokenizer.json"} | {
        "model.safetensors.xz", "tokenizer.json.xz"}
    full, compact = (transformers.AutoModel.from_pretrained(path).eval() for path in (bert, tmp_path / "unpacked"))
    table, packed_table = full.embeddings.word_embeddings.weight, compact.embeddings.word_embeddings.weight
    vocabulary = transformers.AutoTokenizer.from_pretrained(tmp_path / "unpacked").get_vocab()
    kept = {vocabulary[piece] for piece in SPECIALS + ["the", "dog", "##s", "play", "##ed", "."]}
    for row in range(table.shape[0]):
        assert torch.equal(packed_table[row], table[row] if row in kept else torch.zeros_like(table[row])), row
    assert all(torch.equal(a, b) for (name, a), (_, b) in zip(full.named_parameters(), compact.named_parameters())
               if "word_embeddings" not in name)
