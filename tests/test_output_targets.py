"""What an output path names decides how it is written (issue 36): a regular
file is replaced atomically and keeps its permission bits, a symbolic link's
target is replaced and the link stays, a device, FIFO or standard output is
written to as a stream and never replaced, and the model or constraints file
given to ``parse`` is never an output.  One table, every writer: the atomic
layer, ``parse -o`` and ``projectivize``."""
import os
import stat
import subprocess
import sys
import threading

import pytest
import torch
from test_model import IGNORE_TINY_MODEL_WARNINGS, tiny_conllu
from test_parse_safety import save, tiny_model

from kgparser.cli import main
from kgparser.io import atomic
from kgparser.io.conllu import parse_conllu

torch.set_num_threads(1)
pytestmark = IGNORE_TINY_MODEL_WARNINGS
TEXT = tiny_conllu(3, seed=7)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return save(tiny_model(), tmp_path_factory.mktemp("targets") / "model.pt")


def _device(path):
    """A character device like /dev/null (1, 3), made with mknod (root only)."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root")
    return path


class _Reader:
    """A FIFO and a thread that reads it whole, as a waiting consumer would."""

    def __init__(self, path):
        os.mkfifo(path)
        self.path, self.data = path, None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        with open(self.path, "rb") as handle:
            self.data = handle.read()

    def received(self):
        self.thread.join(timeout=30)
        return self.data


def _write_with(writer, target, model):
    """Write TEXT's sentences (parsed, for ``parse``) to ``target`` with one of the writers."""
    source = target.parent / "in.conllu"
    source.write_text(TEXT, encoding="utf-8")
    if writer == "atomic":
        atomic.write_text(target, TEXT)
        return 0
    if writer == "parse":
        return main(["parse", "--model", str(model), str(source), "-o", str(target)])
    return main(["projectivize", str(source), str(target)])


WRITERS = ("atomic", "parse", "projectivize")


@pytest.mark.parametrize("writer", WRITERS)
def test_a_character_device_is_written_to_not_replaced(tmp_path, writer, model):
    device = _device(tmp_path / "null")
    assert _write_with(writer, device, model) == 0
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.conllu", "null"]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_fifo_gets_the_whole_output(tmp_path, writer, model):
    reader = _Reader(tmp_path / "fifo")
    assert _write_with(writer, reader.path, model) == 0
    data = reader.received().decode("utf-8")
    assert stat.S_ISFIFO(os.lstat(reader.path).st_mode)
    assert data.count("# sent_id") == 3 and data.endswith("\n\n")


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("target_exists", [True, False])
def test_a_symlink_is_followed_and_its_target_replaced(tmp_path, writer, target_exists, model):
    target, link = tmp_path / "target.conllu", tmp_path / "link.conllu"
    if target_exists:
        target.write_text("old\n", encoding="utf-8")
        target.chmod(0o640)
    link.symlink_to(target.name)
    assert _write_with(writer, link, model) == 0
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_text(encoding="utf-8").count("# sent_id") == 3
    if target_exists:
        assert stat.S_IMODE(target.stat().st_mode) == 0o640


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("mode", [0o664, 0o600, 0o755])
def test_a_replaced_file_keeps_its_permission_bits(tmp_path, writer, mode, model):
    target = tmp_path / "out.conllu"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(mode)
    assert _write_with(writer, target, model) == 0
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert target.read_text(encoding="utf-8") != "old\n"


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "-"])
def test_standard_output_under_any_name_is_python_s_stdout(name, capsys):
    atomic.write_text(name, TEXT)
    assert capsys.readouterr().out == TEXT


def test_another_open_descriptor_is_written_where_it_stands(tmp_path):
    """As a shell's ``>(cmd)`` gives: /dev/fd/N of a pipe, written as a stream."""
    read_end, write_end = os.pipe()
    try:
        atomic.write_text(f"/dev/fd/{write_end}", TEXT)
        os.write(write_end, b"after\n")  # the descriptor stays open
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        assert pipe.read().decode("utf-8") == TEXT + "after\n"


def test_dev_stdout_of_a_command_goes_to_its_standard_output(tmp_path, model):
    """Neither /dev/stdout nor the file it leads to is replaced: the output
    follows what the shell already wrote there."""
    source, out = tmp_path / "in.conllu", tmp_path / "shell.out"
    source.write_text(TEXT, encoding="utf-8")
    command = (f"echo first > {out}; {sys.executable} -m kgparser.cli projectivize {source} /dev/stdout >> {out}")
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    written = out.read_text(encoding="utf-8")
    assert written.startswith("first\n") and written.count("# sent_id") == 3


def test_a_closed_descriptor_is_one_line(tmp_path):
    descriptor = os.open(tmp_path, os.O_RDONLY)
    os.close(descriptor)
    with pytest.raises(atomic.WriteError, match=f"/dev/fd/{descriptor}: not an open file descriptor"):
        atomic.write_text(f"/dev/fd/{descriptor}", TEXT)


def test_parse_in_place_of_its_input_still_works(tmp_path, model):
    source = tmp_path / "in.conllu"
    source.write_text(TEXT, encoding="utf-8")
    assert main(["parse", "--model", str(model), str(source), "-o", str(source)]) == 0
    assert [s.sent_id for s in parse_conllu(source.read_text(encoding="utf-8"))] == ["tiny-0", "tiny-1", "tiny-2"]


@pytest.mark.parametrize("spelling", ["same", "link", "relative"])
def test_parse_refuses_to_write_over_its_model(tmp_path, model, spelling, capsys, monkeypatch):
    copy = tmp_path / "m.pt"
    copy.write_bytes(model.read_bytes())
    source = tmp_path / "in.conllu"
    source.write_text(TEXT, encoding="utf-8")
    output = {"same": copy, "link": tmp_path / "alias.pt", "relative": "./m.pt"}[spelling]
    if spelling == "link":
        output.symlink_to(copy)
    monkeypatch.chdir(tmp_path)
    assert main(["parse", "--model", str(copy), str(source), "-o", str(output)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is the file given to --model" in err
    assert copy.read_bytes() == model.read_bytes()


def test_parse_refuses_to_write_over_its_constraints(tmp_path, model, capsys):
    source, constraints = tmp_path / "in.conllu", tmp_path / "c.jsonl"
    source.write_text(TEXT, encoding="utf-8")
    constraints.write_text('{"sent_id": "tiny-0", "arcs": []}\n', encoding="utf-8")
    before = constraints.read_text(encoding="utf-8")
    assert main(["parse", "--model", str(model), str(source), "--constraints", str(constraints),
                 "-o", str(constraints)]) == 1
    assert "is the file given to --constraints" in capsys.readouterr().err
    assert constraints.read_text(encoding="utf-8") == before


def test_a_checkpoint_written_through_a_symlink_replaces_its_target(tmp_path):
    from kgparser.model.checkpoint import save_checkpoint

    (tmp_path / "real.pt").write_bytes(b"old")
    (tmp_path / "best.pt").symlink_to("real.pt")
    save_checkpoint({"x": torch.zeros(2)}, tmp_path / "best.pt")
    assert (tmp_path / "best.pt").is_symlink()
    assert torch.equal(torch.load(tmp_path / "real.pt", weights_only=True)["x"], torch.zeros(2))


@pytest.mark.parametrize("seed", range(6))
def test_fuzz_targets_keep_their_kind(tmp_path, seed, model):
    """Random mixes of target kinds and writers: every file-like target ends a
    regular file (a link stays a link), every stream keeps its kind, no
    temporary file is left."""
    import random

    rng = random.Random(seed)
    kinds = ["new", "file", "link", "dangling", "fifo"] + (["device"] if os.geteuid() == 0 else [])
    for step in range(4):
        kind, writer = rng.choice(kinds), rng.choice(WRITERS)
        folder = tmp_path / f"{step}-{kind}-{writer}"
        folder.mkdir()
        target = folder / "out.conllu"
        reader = None
        if kind == "file":
            target.write_text("old\n", encoding="utf-8")
        elif kind in ("link", "dangling"):
            if kind == "link":
                (folder / "real.conllu").write_text("old\n", encoding="utf-8")
            target.symlink_to("real.conllu")
        elif kind == "fifo":
            reader = _Reader(target)
        elif kind == "device":
            _device(target)
        assert _write_with(writer, target, model) == 0
        if reader:
            assert reader.received().count(b"# sent_id") == 3
        mode = os.lstat(target).st_mode
        expected = {"fifo": stat.S_ISFIFO, "device": stat.S_ISCHR, "link": stat.S_ISLNK,
                    "dangling": stat.S_ISLNK}.get(kind, stat.S_ISREG)
        assert expected(mode), (kind, writer)
        if kind in ("new", "file", "link", "dangling"):
            assert target.read_text(encoding="utf-8").count("# sent_id") == 3
        assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
