"""Command line: train -> parse (file and stdout) -> evaluate on tiny data, and errors."""
import json

import pytest
import torch
from test_model import TINY_MODEL, tiny_conllu

from kgparser.cli import main

torch.set_num_threads(1)


def write_config(tmp_path, extra: str = "", model_extra: str = "", sentences: tuple[int, int] = (10, 3),
                 epochs: int = 1) -> str:
    """A tiny run's config ``exp.yaml`` with its train and dev files in ``tmp_path``;
    ``extra``: more top-level YAML, ``model_extra``: more ``model:`` lines."""
    (tmp_path / "train.conllu").write_text(tiny_conllu(sentences[0], seed=4), encoding="utf-8")
    (tmp_path / "dev.conllu").write_text(tiny_conllu(sentences[1], seed=5), encoding="utf-8")
    model = "\n".join(f"  {k}: {v}" for k, v in TINY_MODEL.items())
    path = tmp_path / "exp.yaml"
    path.write_text(f"output_dir: {tmp_path / 'run'}\n"
                    f"data:\n  train: train.conllu\n  dev: dev.conllu\nmodel:\n{model}\n{model_extra}"
                    f"training:\n  epochs: {epochs}\n  batch_size: 4\n  tensorboard: false\n{extra}",
                    encoding="utf-8")
    return str(path)


def test_train_parse_evaluate(tmp_path, capsys):
    config = write_config(tmp_path)
    torch.set_num_threads(2)
    assert main(["train", config, "--quiet", "--set", "training.epochs=2"]) == 0
    assert torch.get_num_threads() == 1, "one thread unless the config's threads says otherwise"
    assert "best dev LAS" in capsys.readouterr().out
    model = str(tmp_path / "run" / "best.pt")
    output = tmp_path / "pred.conllu"
    torch.set_num_threads(2)
    assert main(["parse", "--model", model, str(tmp_path / "dev.conllu"), "-o", str(output)]) == 0
    assert "parsed 3 sentences" in capsys.readouterr().err
    assert torch.get_num_threads() == 1, "parse runs on one thread unless --threads says otherwise"
    assert main(["parse", "--model", model, str(tmp_path / "dev.conllu")]) == 0
    assert capsys.readouterr().out == output.read_text(encoding="utf-8")
    assert main(["evaluate", str(tmp_path / "dev.conllu"), str(output), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert 0.0 <= scores["uas"] <= 1.0
    assert main(["train", config, "--quiet", "--resume", "--set", "training.epochs=3"]) == 0
    assert torch.load(tmp_path / "run" / "last.pt", weights_only=True)["epoch"] == 3


@pytest.mark.parametrize("args, message", [
    (["--set", "training.epochz=2"], "training.epochz"),
    (["--set", "data.train=absent.conllu"], "absent.conllu"),
    (["--resume"], "no such checkpoint"),
    (["--set", "model.word_dim=100000000000"], "model.word_dim=100000000000: the network's weights would need"),
    (["--set", "model.lstm_hidden=100000000"], "model.lstm_hidden=100000000: the network's weights would need"),
])
def test_user_errors_are_one_line_messages(tmp_path, capsys, args, message):
    assert main(["train", write_config(tmp_path), "--quiet"] + args) == 1
    err = capsys.readouterr().err
    assert "error:" in err and message in err and "Traceback" not in err


def test_parse_errors(tmp_path, capsys):
    assert main(["parse", "--model", str(tmp_path / "absent.pt"), "x.conllu"]) == 1
    assert "absent.pt" in capsys.readouterr().err
