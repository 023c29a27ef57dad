"""Damaged checkpoints (issue 46): a header field of the wrong type, in a
checkpoint saved by a real training run, is the one line "not a kgparser
checkpoint, or damaged" naming the field, from the command line, from
Parser.load and from --resume; never a traceback."""
import copy
import shutil
import subprocess
import sys

import pytest
import torch
from test_model import TINY_MODEL, tiny_conllu

from kgparser.cli import main
from kgparser.config import config_from_dict
from kgparser.inference.parser import Parser
from kgparser.model.checkpoint import CheckpointError
from kgparser.training import train

torch.set_num_threads(1)

#: (field, damaged value, what the message says): each field a loader reads, made of another type
DAMAGES = [
    ("format_version", "2", "format_version is str, not int"),
    ("format_version", None, "format_version is NoneType, not int"),
    ("kgparser_version", 3, "kgparser_version is int, not str"),
    ("model", None, "model is NoneType, not dict"),
    ("model", [], "model is list, not dict"),
    ("epoch", "1", "epoch is str, not int"),
    ("dev", "high", "dev is str, not dict or NoneType"),
    ("model.config", None, "model.config is NoneType, not dict"),
    ("model.vocabs", "words", "model.vocabs is str, not dict"),
    ("model.vocabs.words", None, "model.vocabs.words is NoneType, not dict"),
    ("model.vocabs.labels.items", ["nsubj", None], "model.vocabs.labels.items[1] is NoneType, not str"),
    ("model.vocabs.tags.counts", ["1"], "model.vocabs.tags.counts[0] is str, not int"),
    ("model.vocabs.tag_columns", {"upos": []}, "model.vocabs.tag_columns.upos is list, not dict"),
    ("model.ext_words", None, "model.ext_words is NoneType, not list"),
    ("model.ext_dim", "0", "model.ext_dim is str, not int"),
    ("model.actions", "SHIFT", "model.actions is str, not list"),
    ("model.transitions", [1], "model.transitions[0] is int, not list"),
    ("model.transitions", [[1, None]], "model.transitions[0][0] is int, not str or NoneType"),
    ("model.weights", None, "model.weights is NoneType, not dict"),
    ("model.weights", {"w1": [0.0]}, "model.weights.w1 is list, not Tensor"),
    ("model.max_train_length", "6", "model.max_train_length is str, not int or NoneType"),
    ("model.encoder_fingerprint", 5, "model.encoder_fingerprint is int, not str or NoneType"),
    ("training", None, "training is NoneType, not dict"),
    ("training.best_epoch", 1.0, "training.best_epoch is float, not int"),
    ("training.torch_rng", [0], "training.torch_rng is list, not Tensor"),
    ("training.average.updates", None, "training.average.updates is NoneType, not int"),
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("checkpoints")
    (folder / "train.conllu").write_text(tiny_conllu(8, seed=1), encoding="utf-8")
    (folder / "in.conllu").write_text(tiny_conllu(2, seed=2), encoding="utf-8")
    train(run_config(folder), log=lambda line: None)
    return folder


def run_config(folder):
    return config_from_dict({"output_dir": str(folder / "run"), "threads": 1,
                             "data": {"train": str(folder / "train.conllu"), "dev": str(folder / "train.conllu")},
                             "model": TINY_MODEL, "training": {"epochs": 1, "batch_size": 4, "ema_decay": 0.9,
                                                               "tensorboard": False, "progress": False}})


def damaged(run, field: str, value, path=None):
    """A copy of the run's last.pt whose ``field`` (dotted) holds ``value``, at
    ``path`` (default: damaged.pt in the run's folder)."""
    data = torch.load(run / "run" / "last.pt", weights_only=True)
    *outer, last = field.split(".")
    place = data
    for key in outer:
        place = place[key]
    place[last] = copy.deepcopy(value)
    path = path or run / "damaged.pt"
    torch.save(data, path)
    return path


@pytest.mark.parametrize("field, value, message", DAMAGES)
def test_a_header_field_of_another_type_is_one_line_naming_it(run, capsys, field, value, message):
    path = damaged(run, field, value)
    expected = f"{path}: not a kgparser checkpoint, or damaged ({message})"
    with pytest.raises(CheckpointError) as refused:
        Parser.load(path)
    assert str(refused.value) == expected
    assert main(["parse", "-m", str(path), str(run / "in.conllu")]) == 1
    assert capsys.readouterr().err == f"kgparser parse: error: {expected}\n"


def test_the_program_prints_one_line_without_a_traceback(run):
    path = damaged(run, "format_version", "2")
    done = subprocess.run([sys.executable, "-m", "kgparser", "parse", "-m", str(path), str(run / "in.conllu")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"kgparser parse: error: {path}: not a kgparser checkpoint, or damaged " \
                          f"(format_version is str, not int)\n"


def test_resume_from_a_damaged_last_checkpoint_is_one_line(run, tmp_path):
    shutil.copytree(run, tmp_path, dirs_exist_ok=True)
    damaged(run, "training.best_las", "0.5", tmp_path / "run" / "last.pt")
    with pytest.raises(CheckpointError, match=r"last\.pt: not a kgparser checkpoint, or damaged "
                                              r"\(training\.best_las is str, not float or int or NoneType\)"):
        train(run_config(tmp_path), resume=True, log=lambda line: None)


def test_a_config_of_the_right_type_but_not_the_trained_one_is_one_line(run, capsys):
    path = damaged(run, "model.config", {})
    assert main(["parse", "-m", str(path), str(run / "in.conllu")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"kgparser parse: error: {path}: inconsistent checkpoint: ") and err.count("\n") == 1


def test_the_undamaged_checkpoints_load(run):
    for name in ("last.pt", "best.pt"):
        assert Parser.load(run / "run" / name).parse(str(run / "in.conllu"))
