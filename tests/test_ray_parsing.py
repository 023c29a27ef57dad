"""Parsing on Ray (issue 51) against a real local Ray instance, one for the
module (skipped where the ``ray`` extra is not installed): the same bytes as
one process for CoNLL-U, text and raw input, a dead actor restarted and its
chunks parsed again, one that dies again ending the run in one line with no
output file, the command line starting and stopping a Ray instance of its own,
Ray Datasets parsed from Python, and Ray missing said in one line."""
from __future__ import annotations

import functools
import logging
import os
import re
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import torch
from doc_blocks import QUICKSTART_MODEL, python_block
from test_model import IGNORE_TINY_MODEL_WARNINGS, tiny_config, tiny_sentences

from kgparser.errors import KgparserError
from kgparser.inference.corpus import Engine, parse_file
from kgparser.inference.parser import Parser
from kgparser.inference.parsing import parse_sentences
from kgparser.inference.workers import WorkerDied
from kgparser.io.conllu import parse_conllu, sample_data_path
from kgparser.io.reader import Input
from kgparser.model import Model
from kgparser.model.checkpoint import checkpoint_data, save_checkpoint

pytestmark = [IGNORE_TINY_MODEL_WARNINGS,
              pytest.mark.filterwarnings("ignore:.*deprecated:DeprecationWarning")]  # Ray Data's own settings


@pytest.fixture(scope="module")
def ray_session():
    """A local Ray instance of 2 CPUs for the module, which the engine finds
    initialized and leaves running; its workers import this module too."""
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR, runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).parent)}})
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    torch.manual_seed(0)
    model = Model.build(tiny_config("arc-hybrid"), tiny_sentences(6, seed=0))
    path = tmp_path_factory.mktemp("ray_parsing") / "model.pt"
    save_checkpoint(checkpoint_data(model, 1, None), path)
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The EWT sample's test file after long sentences, parsed later than the short ones after them."""
    rows = "\n".join(f"{i}\tw{i % 7}\t_\tA\t_\t_\t_\t_\t_\t_" for i in range(1, 121))
    long = "".join(f"# sent_id = long{n}\n{rows}\n\n" for n in range(4))
    path = tmp_path_factory.mktemp("corpus") / "corpus.conllu"
    path.write_text(long + sample_data_path("test").read_text(encoding="utf-8"), encoding="utf-8")
    return path


def _inputs(tmp_path: Path, input_format: str) -> tuple[Path, dict]:
    """A file of the sample's dev sentences in ``input_format``, and the options that parse it."""
    sentences = parse_conllu(sample_data_path("dev").read_text(encoding="utf-8"))
    if input_format == "conllu":
        return sample_data_path("dev"), {}
    path = tmp_path / "in.txt"
    if input_format == "text":
        path.write_text("".join(" ".join(s.forms) + "\n" for s in sentences), encoding="utf-8")
        return path, {"input_format": "text"}
    pytest.importorskip("spacy")
    from kgparser.io.rawtext import text_of

    path.write_text(text_of(sentences) + "\n\n  a last paragraph\n", encoding="utf-8")
    return path, {"input_format": "raw", "lang": "en"}


@pytest.mark.filterwarnings("ignore::UserWarning")  # raw text by spaCy's rules: the tiny model has no tokenizer
@pytest.mark.parametrize("input_format", ["conllu", "text", "raw"])
def test_ray_actors_write_the_bytes_of_one_process(ray_session, checkpoint, tmp_path, capfd, input_format):
    source, options = _inputs(tmp_path, input_format)
    one, on_ray = tmp_path / "one.conllu", tmp_path / "ray.conllu"
    Parser.load(checkpoint).parse_file(source, one, processes=1, tags="input", **options)
    asked = 3 if input_format == "conllu" else 2  # 3: as many actors as the 2 CPUs start
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = Parser.load(checkpoint).parse_file(source, on_ray, processes=asked, chunk_size=7, engine="ray",
                                                     tags="input", **options)
    assert [str(w.message) for w in caught if "Ray actors" in str(w.message)] == (
        ["--processes 3: starting 2 Ray actors: the Ray cluster has 2 CPUs"] if asked == 3 else [])
    assert on_ray.read_bytes() == one.read_bytes()
    assert summary.sentences == one.read_text(encoding="utf-8").count("\n\n")
    assert capfd.readouterr().out == ""
    assert ray_session.is_initialized()  # a session the engine found is left running


class _Dying:
    """The parse sequence, in an actor that ends its process (as a kill or the
    out-of-memory killer would) while ``marker`` exists; ``once``: the actor
    that ends removes the marker first, so that only one death happens."""

    def __init__(self, marker: Path, once: bool):
        self.marker, self.once = marker, once

    def __call__(self, model, sentences):
        if self.marker.exists():
            try:
                if self.once:
                    self.marker.unlink()
                os._exit(1)
            except FileNotFoundError:  # another actor took it
                pass
        return parse_sentences(model, sentences, batch_size=64, tags="input")


def _parse_dying(checkpoint, corpus, target, marker: Path, once: bool):
    model = Parser.load(checkpoint).model
    marker.touch()
    return parse_file(model, _Dying(marker, once), Input(corpus), target, processes=2, chunk_size=10,
                      engine="ray")


def test_a_dead_actor_is_restarted_and_its_chunks_parsed_again(ray_session, checkpoint, corpus, tmp_path, capfd):
    expected = tmp_path / "one.conllu"
    Parser.load(checkpoint).parse_file(corpus, expected, tags="input")
    _parse_dying(checkpoint, corpus, tmp_path / "ray.conllu", tmp_path / "die", once=True)
    assert not (tmp_path / "die").exists()  # an actor died
    assert (tmp_path / "ray.conllu").read_bytes() == expected.read_bytes()
    assert capfd.readouterr().out == ""  # Ray's report of the death is not in the output


def test_an_actor_that_dies_again_ends_the_run_in_one_line_without_output(ray_session, checkpoint, corpus,
                                                                          tmp_path, capfd):
    (tmp_path / "out").mkdir()
    with pytest.raises(WorkerDied) as died:
        _parse_dying(checkpoint, corpus, tmp_path / "out" / "ray.conllu", tmp_path / "die", once=False)
    assert re.fullmatch(r"parsing actor [12] of 2 died \(Ray: [^\n]+, restarted 1 time before\)", str(died.value))
    assert list((tmp_path / "out").iterdir()) == []
    assert capfd.readouterr().out == ""


def test_the_command_starts_a_local_ray_instance_and_stops_it(checkpoint, corpus, tmp_path):
    pytest.importorskip("ray")
    expected = tmp_path / "one.conllu"
    Parser.load(checkpoint).parse_file(corpus, expected)
    environment = {name: value for name, value in os.environ.items() if name != "RAY_ADDRESS"}
    done = subprocess.run([sys.executable, "-m", "kgparser", "parse", "-m", str(checkpoint), str(corpus),
                           "-o", str(tmp_path / "ray.conllu"), "--engine", "ray", "-p", "2", "--chunk-size", "20"],
                          capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"parsed \d+ sentences, \d+ words in [\d.]+s \(\d+ words/s\)\n", done.stderr)
    assert (tmp_path / "ray.conllu").read_bytes() == expected.read_bytes()


def _descendants(pid: int) -> list[int]:
    """The processes under ``pid`` (a local Ray instance's, its actors)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):  # ended meanwhile
            pass
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_ctrl_c_stops_the_local_ray_instance_and_writes_no_output_file(checkpoint, corpus, tmp_path):
    pytest.importorskip("ray")
    environment = {name: value for name, value in os.environ.items() if name != "RAY_ADDRESS"}
    process = subprocess.Popen([sys.executable, "-m", "kgparser", "parse", "-m", str(checkpoint), "-",
                                "-o", str(tmp_path / "out.conllu"), "--engine", "ray", "-p", "2", "--chunk-size", "5"],
                               stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment,
                               start_new_session=True)
    try:
        process.stdin.write("\n\n".join(corpus.read_text(encoding="utf-8").split("\n\n")[:40]) + "\n\n")
        process.stdin.flush()  # and more to come: the parse goes on until interrupted
        deadline = time.monotonic() + 240
        while sum(_command_line(pid).startswith("ray::_Actor") for pid in _descendants(process.pid)) < 2:
            assert time.monotonic() < deadline and process.poll() is None, "the actors did not start"
            time.sleep(0.2)
        ray_processes = _descendants(process.pid)
        os.killpg(process.pid, signal.SIGINT)  # what the terminal does: the whole process group
        assert process.wait(60) == 130
    finally:
        process.kill()
    assert process.stderr.read() == "interrupted\n"
    assert list(tmp_path.iterdir()) == []
    deadline = time.monotonic() + 30
    while any(_running(pid) for pid in ray_processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [_command_line(pid) for pid in ray_processes if _running(pid)]


def _dataset_of(ray, rows: list[dict]):
    data = pytest.importorskip("ray.data")
    context = data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    return data.from_items(rows)


def test_a_dataset_of_conllu_rows_gives_the_sentences_of_one_process(ray_session, checkpoint, tmp_path):
    blocks = [s.to_conllu() for s in parse_conllu(sample_data_path("dev").read_text(encoding="utf-8"))]
    dataset = _dataset_of(ray_session, [{"id": n, "text": block} for n, block in enumerate(blocks)])
    parsed = Parser.load(checkpoint).parse_dataset(dataset, input_format="conllu", processes=2, tags="input")
    rows = parsed.take_all()
    expected = tmp_path / "one.conllu"
    Parser.load(checkpoint).parse_file(sample_data_path("dev"), expected, tags="input")
    assert [row["id"] for row in rows] == list(range(len(blocks)))
    assert "".join(row["conllu"] for row in rows) == expected.read_text(encoding="utf-8")
    assert set(rows[0]) == {"id", "conllu"}


def test_a_dataset_of_token_lists_and_text_lines_gives_records(ray_session, checkpoint):
    sentences = parse_conllu(sample_data_path("dev").read_text(encoding="utf-8"))[:30]
    expected = Parser.load(checkpoint).parse([s.forms for s in sentences], tags="input")
    parser = Parser.load(checkpoint)
    by_tokens = parser.parse_dataset(_dataset_of(ray_session, [{"text": s.forms, "n": n}
                                                                for n, s in enumerate(sentences)]),
                                     input_format="conllu", output="records", tags="input")
    by_lines = parser.parse_dataset(_dataset_of(ray_session, [{"text": " ".join(s.forms) + "\n\n" + "x y"}
                                                               for s in sentences]),
                                    input_format="text", output="records", tags="input", processes=2)
    records = [row["sentence"] for row in by_tokens.take_all()]
    assert [r["head"] for r in records] == [s.heads[1:] for s in expected]
    assert [r["deprel"] for r in records] == [s.deprels[1:] for s in expected]
    assert [r["form"] for r in records] == [s.forms for s in sentences]
    lines = [row["sentence"] for row in by_lines.take_all()]  # two sentences a row
    assert [r["form"] for r in lines[::2]] == [s.forms for s in sentences]
    assert all(r["form"] == ["x", "y"] and r["sent_id"] == "2" for r in lines[1::2])


def test_the_docs_dataset_example_runs(ray_session, tmp_path, capsys):
    pytest.importorskip("ray.data")
    pytest.importorskip("spacy")
    example = python_block("corpora.md", "parse_dataset")
    config = tiny_config("arc-hybrid")
    config.model.tag_input, config.model.pos_dim = "none", 0  # parses untagged words
    config.data.lang = "en"  # raw text by spaCy's English rules
    torch.manual_seed(0)
    path = tmp_path / "best.pt"
    save_checkpoint(checkpoint_data(Model.build(config, tiny_sentences(6, seed=0)), 1, None), path)
    exec(compile(example.replace(QUICKSTART_MODEL, str(path)), "docs/corpora.md", "exec"), {})
    printed = capsys.readouterr().out
    assert re.findall(r"^(\d) # ", printed, flags=re.M) == ["1", "1", "2"]  # a row a sentence, in order
    assert re.findall(r"^# text = (.*)$", printed, flags=re.M) == ["The cat sleeps.", "It purrs.", "Dogs bark."]


def test_ray_missing_and_unknown_engines_are_one_line(monkeypatch, checkpoint, tmp_path):
    from kgparser.inference import ray_dataset

    with pytest.raises(KgparserError, match=r"^engine: expected one of local, ray, got 'spark'$"):
        Engine("spark")
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails
    with pytest.raises(KgparserError, match=r"^--engine ray needs Ray: pip install 'kgparser\[ray\]'$"):
        Parser.load(checkpoint).parse_file(sample_data_path("dev"), tmp_path / "out.conllu", engine="ray")
    assert not (tmp_path / "out.conllu").exists()
    with pytest.raises(KgparserError, match=r"^parse_dataset needs Ray: pip install 'kgparser\[ray\]'$"):
        ray_dataset.parse_dataset(None, None, functools.partial(parse_sentences))
