"""An encoder's folder read without transformers (issue 49): the tokenizer
through the ``tokenizers`` library, a BERT / XLM-R in plain torch from its
safetensors weights, the fingerprint remembered while the files are
unchanged.  Each must give exactly what transformers gives, and stand aside
where it cannot."""
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from test_encoder import MAX_POSITIONS, tiny_bert, write_run  # noqa: E402
from test_model import IGNORE_TINY_MODEL_WARNINGS  # noqa: E402

from kgparser.cli import main  # noqa: E402
from kgparser.config import EncoderConfig  # noqa: E402
from kgparser.io.conllu import read_conllu  # noqa: E402
from kgparser.model import encoder as encoder_module  # noqa: E402
from kgparser.model import fingerprint as fingerprint_module  # noqa: E402
from kgparser.model.bert import PlainEncoder  # noqa: E402
from kgparser.model.encoder import Encoder, fingerprint  # noqa: E402
from kgparser.model.subwords import FolderTokenizer  # noqa: E402
from kgparser.model.token_table import TokenTable  # noqa: E402

pytestmark = IGNORE_TINY_MODEL_WARNINGS
ROOT = Path(__file__).resolve().parents[1]
E5 = ROOT / "embeddings" / "multilingual-e5-small"
torch.set_num_threads(1)
transformers.utils.logging.disable_progress_bar()

#: sentences over the tiny vocabulary: short, padded next to longer ones, and longer than a window
SENTENCES = [["the", "dog", "playing", "don't"], ["cat", "runs", "."], ["w1", "w2", "the", "dogs"] * 9,
             ["played"], [], ["the", "\u200b", "dog"]]


def generic(folder: Path) -> Path:
    """Make ``folder``'s tokenizer the generic fast one (``PreTrainedTokenizerFast``)."""
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": MAX_POSITIONS, "unk_token": "[UNK]",
        "pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]"}), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return generic(tiny_bert(tmp_path_factory.mktemp("generic") / "bert", layers=3))


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Fingerprints remembered in this test's folder, not the user's cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def through_transformers(monkeypatch):
    """Make encoders load their tokenizer and model with transformers, as before issue 49."""
    monkeypatch.setattr(encoder_module, "folder_tokenizer", lambda folder: None)
    monkeypatch.setattr(encoder_module, "plain_encoder", lambda *args: None)


def both(monkeypatch, cfg: EncoderConfig) -> tuple[Encoder, Encoder]:
    """The encoder of ``cfg`` read directly, and read by transformers."""
    direct = Encoder(cfg)
    with monkeypatch.context() as patch:
        through_transformers(patch)
        loaded = Encoder(cfg)
    return direct, loaded


@pytest.mark.parametrize("layers", [None, 2, 0])
def test_a_generic_folder_gives_the_states_transformers_gives_to_the_bit(folder, monkeypatch, layers):
    direct, loaded = both(monkeypatch, EncoderConfig(path=str(folder), layers=layers))
    assert isinstance(direct.tokenizer, FolderTokenizer) and not isinstance(loaded.tokenizer, FolderTokenizer)
    assert isinstance(direct.model, PlainEncoder) == bool(layers != 0)
    assert not isinstance(loaded.model, PlainEncoder)
    assert (direct.prefix, direct.suffix, direct.window, direct.overlap, direct.n_states, direct.dim) == \
        (loaded.prefix, loaded.suffix, loaded.window, loaded.overlap, loaded.n_states, loaded.dim)
    for mine, theirs in zip(direct.word_states(SENTENCES), loaded.word_states(SENTENCES)):
        assert torch.equal(mine, theirs)
    assert direct.fingerprint == loaded.fingerprint == fingerprint(folder)


def test_the_plain_encoder_reads_the_token_table_in_place(folder):
    """Its word embeddings are no parameter but rows read from the file at each
    lookup (and a table survives pickling, as a model sent to a worker)."""
    encoder = Encoder(EncoderConfig(path=str(folder), layers=1))
    table = encoder.model.table
    assert isinstance(table, TokenTable) and len(encoder.model.layers) == 1
    assert [name for name, _ in encoder.model.named_parameters() if "word" in name] == []
    expected = transformers.AutoModel.from_pretrained(folder).get_input_embeddings().weight.detach()
    ids = torch.tensor([[3, 4, 5, 9], [0, 21, 21, 4]])
    assert torch.equal(table(ids), expected[ids])
    assert torch.equal(pickle.loads(pickle.dumps(table))(ids), expected[ids])
    with pytest.raises(IndexError):
        table(torch.tensor([len(expected)]))


def test_the_subwords_of_the_ewt_sample_are_those_of_transformers(folder):
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    encoder = Encoder(EncoderConfig(path=str(folder)))
    sample = read_conllu(ROOT / "kgparser" / "resources" / "en_ewt_sample" / "dev.conllu")
    for sentence in sample:
        encoded = tokenizer([sentence.forms], is_split_into_words=True, add_special_tokens=False)
        assert encoder._tokenized(sentence.forms) == (encoded["input_ids"][0], encoded.word_ids(0))


@pytest.mark.parametrize("architecture", ["xlm-roberta", "task model", "quantized"])
def test_other_layouts_give_the_states_of_transformers(folder, tmp_path, monkeypatch, architecture):
    """XLM-R (positions counted from the padding id), the weights of a task
    model (under ``bert.``), and int8 layers read the same either way."""
    copy = shutil.copytree(folder, tmp_path / "copy")
    (copy / "model.safetensors").unlink()
    base = transformers.AutoModel.from_pretrained(folder)
    if architecture == "xlm-roberta":
        config = transformers.XLMRobertaConfig(**{key: getattr(base.config, key) for key in (
            "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "max_position_embeddings")}, pad_token_id=0)
        config.max_position_embeddings += 2  # positions start after the padding id
        torch.manual_seed(3)
        transformers.XLMRobertaModel(config).eval().save_pretrained(copy)
    elif architecture == "task model":
        tagger = transformers.BertForTokenClassification(base.config)
        tagger.bert.load_state_dict(base.state_dict(), strict=False)
        tagger.save_pretrained(copy)
    else:
        base.save_pretrained(copy)
    cfg = EncoderConfig(path=str(copy), quantize=architecture == "quantized")
    direct, loaded = both(monkeypatch, cfg)
    assert isinstance(direct.model, PlainEncoder)
    for mine, theirs in zip(direct.word_states(SENTENCES), loaded.word_states(SENTENCES)):
        assert torch.equal(mine, theirs)


@pytest.mark.parametrize("change", ["float16 weights", "relu", "a tokenizer class of its own", "fine-tuned"])
def test_what_cannot_be_read_directly_is_loaded_by_transformers(folder, tmp_path, change):
    copy = shutil.copytree(folder, tmp_path / "copy")
    finetune = change == "fine-tuned"
    if change == "float16 weights":
        transformers.AutoModel.from_pretrained(folder).half().save_pretrained(copy)
    elif change == "relu":
        config = json.loads((copy / "config.json").read_text())
        (copy / "config.json").write_text(json.dumps({**config, "hidden_act": "relu"}))
    elif change == "a tokenizer class of its own":  # transformers 5 builds its own pipeline for it
        settings = json.loads((copy / "tokenizer_config.json").read_text())
        (copy / "tokenizer_config.json").write_text(json.dumps({**settings, "tokenizer_class": "BertTokenizer"}))
    encoder = Encoder(EncoderConfig(path=str(copy), finetune=finetune))
    assert isinstance(encoder.tokenizer, FolderTokenizer) == (change != "a tokenizer class of its own")
    assert isinstance(encoder.model, PlainEncoder) == (change == "a tokenizer class of its own")
    assert encoder.word_states([["the", "dog"]])[0].shape == (3, 4, 16)


def test_a_parse_with_a_generic_encoder_never_imports_transformers(folder, tmp_path):
    config = write_run(tmp_path, str(folder))
    assert main(["train", config, "--quiet"]) == 0
    code = ("import sys; from kgparser.cli import main; "
            f"code = main(['parse', '--model', {str(tmp_path / 'run' / 'best.pt')!r}, {str(tmp_path / 'dev.conllu')!r},"
            f" '-o', {str(tmp_path / 'out.conllu')!r}]); "
            "print(code, 'transformers' in sys.modules, 'huggingface_hub' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == ["0", "False", "False"], done.stderr
    assert main(["parse", "--model", str(tmp_path / "run" / "best.pt"), str(tmp_path / "dev.conllu"),
                 "-o", str(tmp_path / "again.conllu")]) == 0
    assert (tmp_path / "again.conllu").read_text() == (tmp_path / "out.conllu").read_text()


# -- the fingerprint's cache ---------------------------------------------------------------

def test_the_fingerprint_is_hashed_once_while_the_files_are_unchanged(folder, tmp_path, monkeypatch):
    copy = shutil.copytree(folder, tmp_path / "copy")
    first = fingerprint(copy)
    assert first == fingerprint_module.hashed(fingerprint_module.fingerprinted_files(copy))
    assert len(list((tmp_path / "cache" / "kgparser" / "fingerprints").iterdir())) == 1
    with monkeypatch.context() as patch:
        patch.setattr(fingerprint_module, "hashed", lambda files: pytest.fail("hashed again"))
        assert fingerprint(copy) == first
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # same size; a new modification and status-change time
    weights.write_bytes(bytes(data))
    assert fingerprint(copy) != first
    (copy / "vocab.txt").unlink()  # one file fewer: hashed again too
    assert fingerprint(copy) == fingerprint_module.hashed(fingerprint_module.fingerprinted_files(copy))


def test_a_damaged_cache_or_one_that_cannot_be_written_is_ignored(folder, tmp_path, monkeypatch):
    expected = fingerprint_module.hashed(fingerprint_module.fingerprinted_files(folder))
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    assert fingerprint(folder) == expected
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other"))
    assert fingerprint(folder) == expected
    record = next((tmp_path / "other" / "kgparser" / "fingerprints").iterdir())
    saved = json.loads(record.read_text())
    record.write_text(json.dumps({**saved, "fingerprint": "0" * 64, "files": saved["files"][:-1]}))
    assert fingerprint(folder) == expected, "stamps that do not match are not trusted"
    record.write_text("{not json")
    assert fingerprint(folder) == expected


# -- multilingual-e5-small, where embeddings/README.md's conversion made it -----------------

@pytest.mark.skipif(not (E5 / "model.safetensors").is_file(), reason="embeddings/multilingual-e5-small not converted")
def test_e5_reads_directly_as_transformers_reads_it(monkeypatch):
    """The accurate recipes' encoder: the same subwords for every word of the
    EWT sample, the same states (to the bit) for some of its sentences."""
    direct, loaded = both(monkeypatch, EncoderConfig(path=str(E5), layers=6))
    assert isinstance(direct.tokenizer, FolderTokenizer) and isinstance(direct.model, PlainEncoder)
    assert (direct.prefix, direct.suffix, direct.boundary_ids, direct.window) == \
        (loaded.prefix, loaded.suffix, loaded.boundary_ids, loaded.window)
    sample = read_conllu(ROOT / "kgparser" / "resources" / "en_ewt_sample" / "dev.conllu")
    for sentence in sample:
        assert direct._pieces(sentence.forms)[0] == loaded._pieces(sentence.forms)[0]
    forms = [sentence.forms for sentence in sample[:40]]
    for mine, theirs in zip(direct.word_states(forms), loaded.word_states(forms)):
        assert torch.equal(mine, theirs)
