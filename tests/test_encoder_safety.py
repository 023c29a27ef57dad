"""Encoders that cannot be read are one line of error, at once: a damaged or
truncated weight file names itself (whether transformers loads the model or
``layers: 0`` maps its table), and a hub name that is not in the Hugging Face
cache, with no hub to answer, fails without retries or HTTP noise."""
import os
import re
import shutil
import struct
import subprocess
import sys
import time

import pytest

transformers = pytest.importorskip("transformers")

from test_encoder import bert, trained, write_run  # noqa: E402,F401 (fixtures)
from test_model import IGNORE_TINY_MODEL_WARNINGS  # noqa: E402

from kgparser.cli import main  # noqa: E402
from kgparser.config import EncoderConfig  # noqa: E402
from kgparser.inference.parser import Parser  # noqa: E402
from kgparser.model.encoder import Encoder, EncoderError  # noqa: E402

pytestmark = IGNORE_TINY_MODEL_WARNINGS

#: ways a ``model.safetensors`` gets damaged: the new bytes from the good ones
DAMAGE = {
    "cut in its header": lambda data: data[:100],
    "cut in its data": lambda data: data[:-1000],
    "empty": lambda data: b"",
    "garbage": lambda data: bytes(range(256)) * 20,
    "a header that is not JSON": lambda data: struct.pack("<Q", 64) + b"\xff" * 200,
}


def damaged_copy(folder, destination, damage: str):
    """A copy of the encoder ``folder`` whose weight file is damaged; returns that file."""
    copy = shutil.copytree(folder, destination)
    weights = copy / "model.safetensors"
    weights.write_bytes(DAMAGE[damage](weights.read_bytes()))
    return weights


@pytest.mark.parametrize("layers", [None, 0], ids=["model", "token table"])
@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_weight_file_is_one_error_naming_it(bert, tmp_path, damage, layers):
    weights = damaged_copy(bert, tmp_path / "damaged", damage)
    with pytest.raises(EncoderError) as error:
        Encoder(EncoderConfig(path=str(weights.parent), layers=layers))
    message = str(error.value)
    assert message.startswith(f"model.encoder.path: {weights}: damaged or truncated weight file (")
    assert "\n" not in message


def test_parse_and_train_with_a_damaged_encoder_are_one_line(trained, tmp_path, capsys):
    weights = damaged_copy(trained / "encoders" / "bert", tmp_path / "damaged", "cut in its data")
    model, dev = str(trained / "run" / "best.pt"), str(trained / "dev.conllu")
    assert main(["parse", "--model", model, dev, "--encoder", str(weights.parent)]) == 1
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and f"{weights}: damaged or truncated weight file" in error
    with pytest.raises(EncoderError, match=re.escape(str(weights))):
        Parser.load(model, encoder=weights.parent)
    config = write_run(tmp_path, str(trained / "encoders" / "bert"))
    assert main(["train", config, "--quiet", "--set", f"model.encoder.path={weights.parent}"]) == 1
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and f"{weights}: damaged or truncated weight file" in error


HUB_NAME = "intfloat/multilingual-e5-small"


@pytest.mark.parametrize("offline", ["1", "0"], ids=["HF_HUB_OFFLINE", "no hub"])
@pytest.mark.parametrize("command", ["train", "parse"])
def test_a_hub_name_neither_cached_nor_reachable_is_one_line_at_once(trained, tmp_path, offline, command):
    """An empty Hugging Face cache, and a hub address where nothing listens
    (what a machine without internet sees, without needing one): one try, no
    retries (transformers alone waits 23 s per file), no HTTP noise."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(HF_HOME=str(tmp_path / "hf-home"), HF_HUB_OFFLINE=offline, HF_ENDPOINT="http://127.0.0.1:9")
    arguments = {
        "train": ["train", write_run(tmp_path, str(trained / "encoders" / "bert")), "--quiet",
                  "--set", f"model.encoder.path={HUB_NAME}"],
        "parse": ["parse", "--model", str(trained / "run" / "best.pt"), str(trained / "dev.conllu"),
                  "--encoder", HUB_NAME],
    }[command]
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kgparser", *arguments], env=env, capture_output=True, text=True,
                          timeout=300)
    elapsed = time.monotonic() - start
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert f"{HUB_NAME}: neither a local folder nor in the Hugging Face cache, and " in done.stderr
    assert ("offline mode is on (HF_HUB_OFFLINE)" if offline == "1" else "it could not be downloaded") in done.stderr
    assert "embeddings/README.md" in done.stderr
    assert elapsed < 20, f"{elapsed:.0f} s: retries?"
