"""Nothing lost, no raw tracebacks (issue 19): atomic writes, runs that are never
overwritten by mistake, metrics and checkpoints that stay consistent across a
kill, divergence, and one-line errors for operating-system failures."""
import errno
import json
import os
import subprocess
import sys

import pytest
import torch
from test_cli_train_parse import write_config
from test_model import tiny_conllu
from test_training import tiny_run

from kgparser.cli import main
from kgparser.io import atomic
from kgparser.io.conllu import parse_conllu, write_conllu
from kgparser.io.locking import LockBusy, exclusive_lock
from kgparser.training import TrainingError, train
from kgparser.training.monitor import MetricsFile

torch.set_num_threads(1)
QUIET = {"log": lambda line: None}


class _FullDisk:
    """A file handle that takes ``budget`` characters, then fails as a full disk does."""

    def __init__(self, handle, budget: int):
        self.handle, self.budget = handle, budget

    def write(self, text: str) -> int:
        if len(text) > self.budget:
            self.handle.write(text[:self.budget])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.budget -= len(text)
        return self.handle.write(text)

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()


@pytest.fixture
def full_disk(monkeypatch):
    """Call it to make ``open`` in kgparser.io.atomic give handles that fail with
    ENOSPC after 100 characters."""
    real_open = open

    def failing_open(path, mode="r", *args, **kwargs):
        handle = real_open(path, mode, *args, **kwargs)
        return _FullDisk(handle, 100) if "w" in mode and "b" not in mode else handle

    return lambda: monkeypatch.setattr(atomic, "open", failing_open, raising=False)


# -- atomic writes ----------------------------------------------------------------------------


def test_a_failed_write_leaves_the_previous_file_intact(tmp_path, full_disk):
    target = tmp_path / "out.conllu"
    target.write_text("previous content\n", encoding="utf-8")
    full_disk()
    with pytest.raises(atomic.WriteError, match="no space left on the device; the previous file is unchanged"):
        write_conllu(parse_conllu(tiny_conllu(20, seed=1)), target)
    assert target.read_text(encoding="utf-8") == "previous content\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.conllu"]


def test_parse_in_place_on_a_full_disk_keeps_the_input(tmp_path, full_disk, capsys):
    config = write_config(tmp_path)
    assert main(["train", config, "--quiet"]) == 0
    source = tmp_path / "dev.conllu"
    before = source.read_text(encoding="utf-8")
    full_disk()
    assert main(["parse", "--model", str(tmp_path / "run" / "best.pt"), str(source), "-o", str(source)]) == 1
    err = capsys.readouterr().err
    assert "no space left" in err and str(source) in err and "Traceback" not in err
    assert source.read_text(encoding="utf-8") == before


def test_projectivize_in_place_on_a_full_disk_keeps_the_input(tmp_path, full_disk, capsys):
    source = tmp_path / "trees.conllu"
    source.write_text(tiny_conllu(20, seed=3), encoding="utf-8")
    before = source.read_text(encoding="utf-8")
    full_disk()
    assert main(["projectivize", str(source), str(source)]) == 1
    assert "no space left" in capsys.readouterr().err
    assert source.read_text(encoding="utf-8") == before


def test_a_stale_temporary_file_of_a_killed_writer_is_removed(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".out.conllu.{int(dead.stdout)}.tmp"
    stale.write_text("half", encoding="utf-8")
    running = tmp_path / f".out.conllu.{os.getppid()}.tmp"  # a live writer's file is left to it
    running.write_text("being written", encoding="utf-8")
    write_conllu(parse_conllu(tiny_conllu(2, seed=1)), tmp_path / "out.conllu")
    assert not stale.exists() and running.exists()
    assert (tmp_path / "out.conllu").exists()


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "folder", "is a folder, not a file"),
    (lambda p: p / "absent" / "out.conllu", "does not exist"),
])
def test_unwritable_targets_are_named(tmp_path, make, message):
    target = make(tmp_path)
    if target.name == "folder":
        target.mkdir()
    with pytest.raises(atomic.WriteError, match=message):
        write_conllu(parse_conllu(tiny_conllu(2, seed=1)), target)


# -- training runs --------------------------------------------------------------------------------


def test_train_refuses_a_folder_with_a_model_unless_told(tmp_path, capsys):
    config = write_config(tmp_path)
    assert main(["train", config, "--quiet"]) == 0
    best = (tmp_path / "run" / "best.pt").read_bytes()
    assert main(["train", config, "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "already holds a trained model" in err and "--overwrite" in err
    assert (tmp_path / "run" / "best.pt").read_bytes() == best
    assert main(["train", config, "--quiet", "--overwrite"]) == 0
    assert main(["train", config, "--quiet", "--overwrite", "--resume"]) == 1


def test_a_second_trainer_on_one_folder_is_refused(tmp_path):
    config = tiny_run(tmp_path, epochs=1)
    (tmp_path / "run").mkdir()
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys, time; from kgparser.io.locking import training_lock\n"
                               "with training_lock(sys.argv[1]):\n print('held', flush=True); time.sleep(60)",
                               str(tmp_path / "run")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(LockBusy, match="another kgparser process is training into this folder"):
            train(config, **QUIET)
    finally:
        holder.kill()
        holder.wait()
    train(config, **QUIET)  # the kernel released the lock with its holder


def test_the_lock_is_exclusive_within_one_process_too(tmp_path):
    with exclusive_lock(tmp_path / "lock"):
        with pytest.raises(LockBusy):
            with exclusive_lock(tmp_path / "lock"):
                pass


def test_resume_accepts_another_spelling_of_the_folder_and_a_moved_run(tmp_path, monkeypatch):
    train(tiny_run(tmp_path, "run", epochs=1), **QUIET)
    monkeypatch.chdir(tmp_path)
    relative = tiny_run(tmp_path, epochs=2, output_dir="run/")
    assert train(relative, resume=True, **QUIET).epochs == 2
    (tmp_path / "run").rename(tmp_path / "moved")
    assert train(tiny_run(tmp_path, epochs=3, output_dir=str(tmp_path / "moved")), resume=True, **QUIET).epochs == 3
    epochs = [json.loads(line).get("epoch") for line in (tmp_path / "moved" / "metrics.jsonl").read_text().splitlines()]
    assert epochs == [1, 2, 3, None]


def test_resume_drops_a_metrics_line_cut_short_by_a_kill(tmp_path):
    train(tiny_run(tmp_path, epochs=2), **QUIET)
    metrics = tmp_path / "run" / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    metrics.write_text("\n".join(lines[:2]) + "\n" + lines[2][:17], encoding="utf-8")  # final record cut
    seen = []
    train(tiny_run(tmp_path, epochs=3), resume=True, log=seen.append)
    assert any("cut short" in line for line in seen)
    epochs = [json.loads(line).get("epoch") for line in metrics.read_text().splitlines()]
    assert epochs == [1, 2, 3, None]


def test_a_damaged_metrics_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"epoch": 1}\n{"epo\n{"epoch": 2}\n', encoding="utf-8")
    with pytest.raises(Exception, match="line 2: not a JSON record"):
        MetricsFile(path, keep_up_to_epoch=2)


def test_metrics_are_written_before_the_checkpoint_that_follows_them(tmp_path, monkeypatch):
    """A kill between the two loses nothing: the metrics line of the epoch a
    checkpoint holds is always on disk first."""
    from kgparser import model as model_module

    order = []
    real_save, real_write = model_module.save_checkpoint, MetricsFile.write
    monkeypatch.setattr(model_module, "save_checkpoint",
                        lambda data, path: (order.append(os.path.basename(path)), real_save(data, path)))
    monkeypatch.setattr(MetricsFile, "write", lambda self, r: (order.append(f"metrics {r.get('epoch')}"),
                                                               real_write(self, r)))
    train(tiny_run(tmp_path, epochs=2), **QUIET)
    assert order.index("metrics 1") < order.index("last.pt")
    assert order[order.index("metrics 2"):].count("last.pt") == 1


def test_divergence_stops_with_a_clear_message_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch):
    from kgparser.training.trainer import Trainer

    train(tiny_run(tmp_path, epochs=1), **QUIET)
    good = torch.load(tmp_path / "run" / "last.pt", weights_only=True)
    real_batch = Trainer.train_batch

    def poisoned(self, *args, **kwargs):
        with torch.no_grad():
            self.model.network.b1.fill_(float("nan"))
        return real_batch(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "train_batch", poisoned)
    with pytest.raises(TrainingError, match=r"diverged in epoch 2: .*not finite.*last good checkpoint.*epoch 1"
                                            r".*lower training.lr"):
        train(tiny_run(tmp_path, epochs=2), resume=True, **QUIET)
    kept = torch.load(tmp_path / "run" / "last.pt", weights_only=True)
    assert kept["epoch"] == 1
    assert all(torch.equal(v, kept["model"]["weights"][k]) for k, v in good["model"]["weights"].items())


def test_an_exploding_loss_stops_training_before_any_checkpoint(tmp_path):
    """At lr 1e6 the loss grows to 10^18 without ever overflowing: the bound on
    the loss per decision stops it in the first epoch (issue 36)."""
    with pytest.raises(TrainingError, match=r"diverged in epoch 1: the training loss exploded to .* per decision"
                                            r".*no checkpoint was written.*lower training.lr \(now 1e\+06\)"):
        train(tiny_run(tmp_path, epochs=2, training={"lr": 1e6}), **QUIET)
    assert not (tmp_path / "run" / "last.pt").exists()


def test_the_loss_bound_is_a_thousand_margins_and_at_least_a_thousand():
    from kgparser.training.trainer import Diverged, check_loss_bound

    check_loss_bound(999.0, 1.0)
    check_loss_bound(999.0, 0.0)
    with pytest.raises(Diverged, match=r"exploded to 1e\+03 per decision"):
        check_loss_bound(1001.0, 0.5)
    with pytest.raises(Diverged, match="the bound is 2000"):
        check_loss_bound(2001.0, 2.0)


def test_an_empty_dev_file_is_an_error(tmp_path):
    config = tiny_run(tmp_path, epochs=1)
    (tmp_path / "dev.conllu").write_text("", encoding="utf-8")
    with pytest.raises(TrainingError, match=r"data.dev: .*dev.conllu: no sentences"):
        train(config, **QUIET)


def test_output_dir_that_is_a_file(tmp_path, capsys):
    config = write_config(tmp_path)
    (tmp_path / "run").write_text("not a folder", encoding="utf-8")
    assert main(["train", config, "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_read_only_output_folder(tmp_path, capsys):
    config = write_config(tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run").chmod(0o500)
    try:
        assert main(["train", config, "--quiet"]) == 1
    finally:
        (tmp_path / "run").chmod(0o700)
    err = capsys.readouterr().err
    assert "permission denied" in err and "Traceback" not in err


def test_checkpoint_write_on_a_full_disk_is_named(tmp_path, monkeypatch):
    from kgparser.model import checkpoint as checkpoints

    def fail(data, path):
        raise RuntimeError("[enforce fail at inline_container.cc:664] . unexpected pos 512 vs 448")

    monkeypatch.setattr(checkpoints.torch, "save", fail)
    monkeypatch.setattr(checkpoints.shutil, "disk_usage", lambda path: type("Usage", (), {"free": 0})())
    with pytest.raises(atomic.WriteError, match="no space left on the device"):
        checkpoints.save_checkpoint({}, tmp_path / "best.pt")
    assert not list(tmp_path.iterdir())


# -- command line ---------------------------------------------------------------------------------


def test_evaluate_into_a_closed_pipe_exits_quietly(tmp_path):
    gold = tmp_path / "gold.conllu"
    gold.write_text(tiny_conllu(300, seed=2), encoding="utf-8")
    command = (f"{sys.executable} -m kgparser.cli evaluate {gold} {gold} --json --breakdown | head -c 10")
    done = subprocess.run(["bash", "-c", "set -o pipefail; " + command], capture_output=True, text=True)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr
    assert done.stdout.startswith("{")


def test_evaluate_refuses_a_prediction_without_heads(tmp_path, capsys):
    gold = tmp_path / "gold.conllu"
    gold.write_text(tiny_conllu(3, seed=2), encoding="utf-8")
    unparsed = "\n".join("\t".join(c if i not in (6, 7) else "_" for i, c in enumerate(line.split("\t")))
                         if line and not line.startswith("#") else line
                         for line in gold.read_text(encoding="utf-8").split("\n"))
    (tmp_path / "pred.conllu").write_text(unparsed, encoding="utf-8")
    assert main(["evaluate", str(gold), str(tmp_path / "pred.conllu")]) == 1
    assert "no word has a HEAD" in capsys.readouterr().err
    lines = gold.read_text(encoding="utf-8").split("\n")
    lines[1] = "\t".join(c if i not in (6, 7) else "_" for i, c in enumerate(lines[1].split("\t")))
    (tmp_path / "pred.conllu").write_text("\n".join(lines), encoding="utf-8")
    assert main(["evaluate", str(gold), str(tmp_path / "pred.conllu")]) == 0
    assert "1 of" in capsys.readouterr().err


def test_stats_refuses_an_empty_treebank(tmp_path, capsys):
    (tmp_path / "empty.conllu").write_text("", encoding="utf-8")
    assert main(["stats", str(tmp_path / "empty.conllu")]) == 1
    assert "no sentences" in capsys.readouterr().err


def test_a_refused_write_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    """What a read-only folder gives (simulated: the tests may run as root)."""
    source = tmp_path / "trees.conllu"
    source.write_text(tiny_conllu(3, seed=3), encoding="utf-8")

    def refuse(path, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))

    monkeypatch.setattr(atomic, "open", refuse, raising=False)
    assert main(["projectivize", str(source), str(tmp_path / "out.conllu")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "permission denied" in err and "out.conllu" in err
