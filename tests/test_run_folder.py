"""A run folder holds one run, written by kgparser, and a run killed at any
moment continues with --resume (issue 36): someone else's files are refused,
the config being read is never written over, --overwrite removes the old
run's files (and only those) before it writes anything, every data file is
checked before the folder is touched, and a run with nothing to train on, or
zero epochs, is refused before it starts."""
import json
import os

import pytest
import torch
from test_cli_train_parse import write_config
from test_training import NON_PROJECTIVE, tiny_run

from kgparser.cli import main
from kgparser.config import ConfigError
from kgparser.errors import KgparserError
from kgparser.training import TrainingError, train
from kgparser.training.run_folder import MARKER, RUN_FILES, RunFolderError

torch.set_num_threads(1)
QUIET = {"log": lambda line: None}


def names(folder):
    return sorted(p.name for p in folder.iterdir())


def epochs_in_metrics(out):
    return [json.loads(line).get("epoch") for line in (out / "metrics.jsonl").read_text().splitlines()]


def weights(path):
    return torch.load(path, weights_only=True)["model"]["weights"]


# -- someone else's files -------------------------------------------------------------------------


def test_a_folder_with_someone_else_s_files_is_refused_unless_overwrite(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    with pytest.raises(RunFolderError, match=r"run holds files kgparser did not write \(notes.txt\).*--overwrite"):
        train(tiny_run(tmp_path, epochs=1), **QUIET)
    assert names(out) == [".train.lock", "notes.txt"]
    train(tiny_run(tmp_path, epochs=1), overwrite=True, **QUIET)
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert {MARKER, "best.pt", "last.pt", "config.yaml", "metrics.jsonl"} <= set(names(out))


def test_the_config_being_read_is_never_written_over(tmp_path, capsys):
    """The issue's case: ``output_dir: .`` beside the user's config.yaml and metrics.jsonl."""
    config = tmp_path / "config.yaml"
    config.write_text(open(write_config(tmp_path), encoding="utf-8").read().replace(
        f"output_dir: {tmp_path / 'run'}", f"output_dir: {tmp_path}") + "# my comment\n", encoding="utf-8")
    (tmp_path / "metrics.jsonl").write_text("my own metrics\n", encoding="utf-8")
    before = config.read_text(encoding="utf-8")
    for flag in ([], ["--overwrite"]):
        assert main(["train", str(config), "--quiet", *flag]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "the config being trained from" in err and "--overwrite included" in err
    assert config.read_text(encoding="utf-8") == before
    assert (tmp_path / "metrics.jsonl").read_text(encoding="utf-8") == "my own metrics\n"
    assert not (tmp_path / MARKER).exists()


def test_overwrite_does_not_replace_unmarked_files_with_a_run_file_s_name(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.jsonl").write_text("my own metrics\n", encoding="utf-8")
    with pytest.raises(RunFolderError, match="metrics.jsonl not written by kgparser train.*does not replace them"):
        train(tiny_run(tmp_path, epochs=1), overwrite=True, **QUIET)
    assert names(out) == [".train.lock", "metrics.jsonl"]


def test_a_resumed_run_may_read_its_own_saved_config(tmp_path, capsys):
    config = write_config(tmp_path)
    assert main(["train", config, "--quiet"]) == 0
    saved = tmp_path / "run" / "config.yaml"
    before = saved.read_text(encoding="utf-8")
    assert main(["train", str(saved), "--quiet", "--resume", "--set", "training.epochs=2"]) == 0
    assert saved.read_text(encoding="utf-8") == before
    assert torch.load(tmp_path / "run" / "last.pt", weights_only=True)["epoch"] == 2


# -- --overwrite: never a mix of two runs --------------------------------------------------------


def test_overwrite_removes_the_old_run_before_writing_anything(tmp_path, monkeypatch):
    out = tmp_path / "run"
    train(tiny_run(tmp_path, epochs=1, training={"tensorboard": True}), **QUIET)
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    (out / "tensorboard" / "mine.txt").write_text("mine\n", encoding="utf-8")
    from kgparser.config import Config

    def killed(self, path):
        raise KeyboardInterrupt  # the first new file: a kill here leaves no old file beside it

    monkeypatch.setattr(Config, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        train(tiny_run(tmp_path, epochs=1), overwrite=True, **QUIET)
    assert names(out) == [".kgparser-run", ".train.lock", "notes.txt", "tensorboard"]
    assert names(out / "tensorboard") == ["mine.txt"]


def test_a_removal_cut_short_resumes_from_the_start(tmp_path):
    """Killed after --overwrite removed last.pt, or while epoch 1's last.pt was
    written (best.pt is written first): plain train points to --resume, and
    --resume trains from the start, ending as an uninterrupted run does."""
    train(tiny_run(tmp_path, "whole", epochs=2), **QUIET)
    out = tmp_path / "run"
    train(tiny_run(tmp_path, epochs=1), **QUIET)
    (out / "last.pt").unlink()
    with pytest.raises(RunFolderError, match=r"already holds a trained model \(best.pt\); continue it with --resume"):
        train(tiny_run(tmp_path, epochs=2), **QUIET)
    seen = []
    train(tiny_run(tmp_path, epochs=2), resume=True, log=seen.append)
    assert any("holds no complete last.pt" in line and "training from the start" in line for line in seen)
    assert epochs_in_metrics(out) == [1, 2, None]
    whole, again = weights(tmp_path / "whole" / "last.pt"), weights(out / "last.pt")
    assert all(torch.allclose(value, again[key], atol=1e-6) for key, value in whole.items())


def test_resume_of_a_run_killed_before_its_first_file_starts_it(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / ".train.lock").touch()
    seen = []
    assert train(tiny_run(tmp_path, epochs=1), resume=True, log=seen.append).epochs == 1
    assert any("training from the start" in line for line in seen)


def test_resume_without_a_run_is_refused(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(TrainingError, match="no such checkpoint"):
        train(tiny_run(tmp_path, epochs=1), resume=True, **QUIET)
    assert not out.exists()
    out.mkdir()
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    with pytest.raises(RunFolderError, match="no such checkpoint, and .* is not a kgparser run folder"):
        train(tiny_run(tmp_path, epochs=1), resume=True, **QUIET)


def test_a_run_of_a_kgparser_before_the_marker_is_recognised(tmp_path):
    out = tmp_path / "run"
    train(tiny_run(tmp_path, epochs=1), **QUIET)
    (out / MARKER).unlink()
    with pytest.raises(RunFolderError, match="already holds a trained model"):
        train(tiny_run(tmp_path, epochs=1), **QUIET)
    train(tiny_run(tmp_path, epochs=2), resume=True, **QUIET)
    assert (out / MARKER).exists()
    (out / MARKER).unlink()
    train(tiny_run(tmp_path, epochs=1), overwrite=True, **QUIET)
    assert epochs_in_metrics(out) == [1, None]


def test_a_marked_folder_with_an_experiment_s_files_is_trained_beside_them(tmp_path):
    from kgparser.training.run_folder import mark_run_folder

    out = tmp_path / "run"
    out.mkdir()
    mark_run_folder(out)
    (out / "train.log").write_text("$ kgparser train\n", encoding="utf-8")
    train(tiny_run(tmp_path, epochs=1), **QUIET)
    assert (out / "train.log").read_text(encoding="utf-8") == "$ kgparser train\n"


def test_the_marker_names_the_run_files(tmp_path):
    train(tiny_run(tmp_path, epochs=1), **QUIET)
    text = (tmp_path / "run" / MARKER).read_text(encoding="utf-8")
    assert all(name in text for name in RUN_FILES)


# -- data checked before the folder is touched ---------------------------------------------------


@pytest.mark.parametrize("content, message", [
    (None, "no such file"),
    (b"", "no sentences"),
    (b"1\tw\n\n", "column"),
    (b"\xff\xfe\n", "UTF-8"),
])
def test_a_bad_test_file_is_refused_before_training_and_the_old_run_stays(tmp_path, content, message):
    out = tmp_path / "run"
    train(tiny_run(tmp_path, epochs=1), **QUIET)
    before = {name: (out / name).read_bytes() for name in ("best.pt", "last.pt", "metrics.jsonl", "config.yaml")}
    config = tiny_run(tmp_path, epochs=1, data={"test": str(tmp_path / "test.conllu")})
    if content is not None:
        (tmp_path / "test.conllu").write_bytes(content)
    with pytest.raises(KgparserError, match=message):
        train(config, overwrite=True, **QUIET)
    assert {name: (out / name).read_bytes() for name in before} == before


def test_a_test_file_may_be_a_fifo_read_once_before_training(tmp_path):
    import threading

    fifo = tmp_path / "test.fifo"
    os.mkfifo(fifo)
    config = tiny_run(tmp_path, epochs=1, data={"test": str(fifo)})
    text = (tmp_path / "dev.conllu").read_text(encoding="utf-8")
    feeder = threading.Thread(target=lambda: fifo.write_text(text, encoding="utf-8"), daemon=True)
    feeder.start()
    assert train(config, **QUIET).test is not None
    feeder.join(timeout=30)


def test_resume_may_change_the_dev_and_test_files_with_a_note(tmp_path):
    train(tiny_run(tmp_path, epochs=1), **QUIET)
    (tmp_path / "test.conllu").write_text((tmp_path / "dev.conllu").read_text(), encoding="utf-8")
    (tmp_path / "dev2.conllu").write_text((tmp_path / "dev.conllu").read_text(), encoding="utf-8")
    seen = []
    config = tiny_run(tmp_path, epochs=2, data={"test": str(tmp_path / "test.conllu"),
                                               "dev": str(tmp_path / "dev2.conllu")})
    train(config, resume=True, log=seen.append)
    notes = [line for line in seen if line.startswith("note: resuming with data.")]
    assert len(notes) == 2 and "test.conllu" in notes[1] and "best.pt is chosen" in notes[0]
    with pytest.raises(TrainingError, match="cannot resume: the config differs in model.mlp_hidden$"):
        train(tiny_run(tmp_path, epochs=3, model={"mlp_hidden": 8}, data={"test": None}), resume=True, **QUIET)


def test_nothing_to_train_on_is_refused_before_training(tmp_path):
    config = tiny_run(tmp_path, epochs=1, training={"unbuildable": "skip", "oracle": "static"})
    (tmp_path / "train.conllu").write_text(NON_PROJECTIVE * 3, encoding="utf-8")
    with pytest.raises(TrainingError, match=r"no trainable sentence: all 3 trees are skipped .*"
                                            r"training.unbuildable: dynamic"):
        train(config, **QUIET)
    assert not (tmp_path / "run" / MARKER).exists()


@pytest.mark.parametrize("key", ["training.epochs", "data.max_train_sentences"])
def test_zero_epochs_or_sentences_are_config_errors(tmp_path, key):
    section, name = key.split(".")
    with pytest.raises(ConfigError, match=f"{key}: must be > 0, got 0"):
        tiny_run(tmp_path, **{section: {name: 0}})
