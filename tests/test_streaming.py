"""Parsing a corpus in chunks (issue 39): the same bytes for every chunk size
and number of processes, chunks that never split a sentence, lenient reads
across chunks, a lazy pipe in bounded memory, a dead worker and Ctrl-C, .gz
both ways, standard input to output, and the progress line on a terminal only."""
import gc
import gzip
import multiprocessing
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from test_model import IGNORE_TINY_MODEL_WARNINGS, tiny_config, tiny_sentences

from kgparser.inference import workers
from kgparser.inference.corpus import chunked
from kgparser.inference.parser import Parser
from kgparser.inference.workers import WorkerDied
from kgparser.io.conllu import Sentence, parse_conllu, sample_data_path
from kgparser.io.reader import Input
from kgparser.model import Model
from kgparser.model.checkpoint import checkpoint_data, save_checkpoint

torch.set_num_threads(1)

pytestmark = IGNORE_TINY_MODEL_WARNINGS

KGPARSER = [sys.executable, "-m", "kgparser"]
GOOD = "# sent_id = {0}\n1\tw1\t_\tA\t_\t_\t_\t_\t_\t_\n2\tw2\t_\tB\t_\t_\t_\t_\t_\t_\n\n"
BAD = "# sent_id = bad\n1\tw1\t_\tA\t_\t_\t_\t_\t_\n\n"  # 9 columns


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    torch.manual_seed(0)
    model = Model.build(tiny_config("arc-hybrid"), tiny_sentences(6, seed=0))
    path = tmp_path_factory.mktemp("streaming") / "model.pt"
    save_checkpoint(checkpoint_data(model, 1, None), path)
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The EWT sample's test file after sentences of uneven lengths: long ones
    first, so that later chunks are parsed before earlier ones."""
    long = "".join(_sentence(f"long{i}", 120 + i) for i in range(8))
    path = tmp_path_factory.mktemp("corpus") / "corpus.conllu"
    path.write_text(long + sample_data_path("test").read_text(encoding="utf-8"), encoding="utf-8")
    return path


def _sentence(sent_id: str, n: int) -> str:
    rows = [f"{i}\tw{i % 7}\t_\tA\t_\t_\t_\t_\t_\t_" for i in range(1, n + 1)]
    return f"# sent_id = {sent_id}\n" + "\n".join(rows) + "\n\n"


def one_shot(checkpoint, path, **options) -> str:
    """What parsing the whole file at once gives."""
    sentences = Parser.load(checkpoint).parse(path, **options)
    return "".join(s.to_conllu() for s in (sentences.with_skipped() if options.get("lenient") else sentences))


@pytest.mark.parametrize("chunk_size, processes", [(1, 1), (7, 1), (1000, 1), (7, 3)])
def test_the_output_is_the_same_for_every_chunk_size_and_number_of_processes(checkpoint, corpus, tmp_path,
                                                                            chunk_size, processes, monkeypatch):
    monkeypatch.setattr(workers, "usable_cores", lambda: 4)  # 3 processes on a 2-core machine too
    expected = one_shot(checkpoint, corpus)
    target = tmp_path / "out.conllu"
    summary = Parser.load(checkpoint).parse_file(corpus, target, chunk_size=chunk_size, processes=processes)
    assert target.read_text(encoding="utf-8") == expected
    assert summary.sentences == 308 and summary.words == sum(s.n for s in parse_conllu(expected))


def test_gzip_in_and_out_with_two_processes(checkpoint, corpus, tmp_path):
    source, target = tmp_path / "in.conllu.gz", tmp_path / "out.conllu.gz"
    source.write_bytes(gzip.compress(corpus.read_bytes()))
    Parser.load(checkpoint).parse_file(source, target, chunk_size=50, processes=2)
    assert gzip.decompress(target.read_bytes()).decode("utf-8") == one_shot(checkpoint, corpus)


def test_chunks_hold_whole_sentences_with_their_comments(corpus):
    reader = Input(corpus)
    chunks = list(chunked(reader.items(), 3))
    assert {len(chunk) for chunk in chunks[:-1]} == {3}
    items = [item for chunk in chunks for item in chunk]
    assert all(isinstance(item, Sentence) for item in items)
    assert "".join(item.to_conllu() for item in items) == corpus.read_text(encoding="utf-8")
    assert sum("# newdoc" in "".join(item.comments) for item in items) == 25


@pytest.mark.parametrize("chunk_size", [1, 2])
def test_lenient_reads_keep_places_and_lines_across_chunks(checkpoint, tmp_path, chunk_size):
    source = tmp_path / "in.conllu"
    source.write_text(BAD + GOOD.format("a") + BAD + BAD + GOOD.format("b") + GOOD.format("c") + BAD,
                      encoding="utf-8")
    target = tmp_path / "out.conllu"
    parser = Parser.load(checkpoint)
    kept = parser.parse_file(source, target, keep_skipped=True, chunk_size=chunk_size)
    assert target.read_text(encoding="utf-8") == one_shot(checkpoint, source, lenient=True)
    assert [error.line for error in kept.skipped] == [2, 9, 12, 23] and kept.sentences == 3
    dropped = parser.parse_file(source, target, lenient=True, chunk_size=chunk_size)
    assert target.read_text(encoding="utf-8").count("# sent_id") == 3 and len(dropped.skipped) == 4


def test_pipe_yields_what_was_read_before_the_source_failed(checkpoint):
    def source():
        for i in range(10):
            yield ["w1", "w2", f"w{i}"]
        raise RuntimeError("the source broke")

    parsed = []
    with pytest.raises(RuntimeError, match="the source broke"):
        for sentence in Parser.load(checkpoint).pipe(source(), chunk_size=4, tags="input"):
            parsed.append(sentence)
    assert len(parsed) == 10 and all(s.heads[1:].count(0) == 1 for s in parsed)


def _live(source: str) -> int:
    """Sentences (inputs and their parsed copies) of ``source`` still in memory."""
    return sum(1 for o in gc.get_objects() if type(o) is Sentence and o.source == source)


def test_pipe_holds_a_few_chunks_of_an_endless_input(checkpoint):
    lines = GOOD.format("x").strip().split("\n")
    source = (Sentence(list(lines), "counted", require_tree=False) for _ in range(3000))
    most = 0
    for count, _sentence in enumerate(Parser.load(checkpoint).pipe(source, chunk_size=50), start=1):
        if count % 25 == 0:
            most = max(most, _live("counted"))
    # the chunk being read, the one just parsed, and its parsed copies being yielded
    assert count == 3000 and 50 <= most <= 3 * 50 + 1


def test_a_killed_worker_ends_the_pipe_with_one_line(checkpoint):
    sentences = (["w1", "w2", "w3"] for _ in range(100000))
    parsed = Parser.load(checkpoint).pipe(sentences, chunk_size=20, processes=2, tags="input")
    next(parsed)
    os.kill(multiprocessing.active_children()[0].pid, signal.SIGKILL)
    with pytest.raises(WorkerDied, match=r"^parsing process \d of 2 died \(signal 9, SIGKILL\)$"):
        for _ in parsed:
            pass
    assert not multiprocessing.active_children()


def _workers_of(pid: int, count: int, seconds: float = 120) -> list[int]:
    """The pids of the ``count`` worker processes of ``pid``, once all have started."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        children = [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        workers = [child for child in children if b"resource_tracker" not in _command_line(child)]
        if len(workers) >= count:
            return workers
        time.sleep(0.1)
    raise AssertionError("the workers did not start")


def _command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # it has just ended
        return b""


def _start_reading_stdin(checkpoint, target, corpus, command=KGPARSER):
    """``kgparser parse -p 2`` reading standard input, of which it has the
    first sentences of ``corpus`` so far; its workers' pids, and the rest."""
    process = subprocess.Popen(command + ["parse", "-m", str(checkpoint), "-", "-o", str(target), "-p", "2",
                                           "--chunk-size", "5"],
                               stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    blocks = corpus.read_text(encoding="utf-8").split("\n\n")
    process.stdin.write("\n\n".join(blocks[:40]) + "\n\n")
    process.stdin.flush()
    return process, _workers_of(process.pid, 2), "\n\n".join(blocks[40:])


def test_a_killed_worker_ends_the_command_with_one_line_and_no_output_file(checkpoint, corpus, tmp_path):
    target = tmp_path / "out.conllu"
    process, workers, rest = _start_reading_stdin(checkpoint, target, corpus)
    os.kill(workers[1], signal.SIGKILL)
    try:
        process.stdin.write(rest)
        process.stdin.close()
    except BrokenPipeError:  # it stopped reading: the death was seen first
        pass
    err = process.stderr.read()
    assert process.wait(60) == 1
    assert re.fullmatch(r"kgparser parse: error: parsing process [12] of 2 died \(signal 9, SIGKILL\)\n", err)
    assert list(tmp_path.iterdir()) == []


def _assert_ended(pids: list[int], seconds: float = 10) -> None:
    """The processes ``pids`` end (or are zombies) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if _running(pid)]


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_workers_end_with_their_parent_however_it_ends(checkpoint, corpus, tmp_path, number):
    target = tmp_path / "out.conllu"
    process, workers, rest = _start_reading_stdin(checkpoint, target, corpus)
    os.kill(process.pid, number)
    assert process.wait(60) == (-number if number == signal.SIGKILL else 128 + number)
    _assert_ended(workers)
    if number != signal.SIGKILL:
        assert process.stderr.read() == f"terminated by {signal.Signals(number).name}\n"
        assert list(tmp_path.iterdir()) == []
        return
    assert [path.name for path in tmp_path.iterdir()] == [f".out.conllu.{process.pid}.tmp"]
    subprocess.run(KGPARSER + ["parse", "-m", str(checkpoint), "-", "-o", str(target)], input=rest, text=True,
                   check=True, capture_output=True)
    assert [path.name for path in tmp_path.iterdir()] == ["out.conllu"]  # the stale temporary file removed


def test_workers_end_at_the_end_of_their_pipe_without_a_death_signal(checkpoint, corpus, tmp_path):
    """Where the kernel sends no signal (not Linux), a worker reads the end of
    its pipe: it holds no copy of the parent's end, nor of another worker's."""
    patched = ("import sys, kgparser.inference.workers as w; w.end_with_parent = lambda parent: None; "
               "from kgparser.cli import main; sys.exit(main())")
    process, workers, _ = _start_reading_stdin(checkpoint, tmp_path / "out.conllu", corpus,
                                               [sys.executable, "-c", patched])
    os.kill(process.pid, signal.SIGKILL)
    process.wait(60)
    _assert_ended(workers)


def test_ctrl_c_stops_every_worker_and_writes_no_output_file(checkpoint, corpus, tmp_path):
    target = tmp_path / "out.conllu"
    process, workers, _ = _start_reading_stdin(checkpoint, target, corpus)
    os.killpg(process.pid, signal.SIGINT)  # what the terminal does: the whole process group
    assert process.wait(60) == 130
    assert process.stderr.read() == "interrupted\n"
    assert list(tmp_path.iterdir()) == []
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_stdin_to_stdout_without_a_progress_line_off_a_terminal(checkpoint, corpus):
    done = subprocess.run(KGPARSER + ["parse", "-m", str(checkpoint), "-", "--chunk-size", "9"],
                          stdin=corpus.open(encoding="utf-8"), capture_output=True, text=True, check=True)
    assert done.stdout == one_shot(checkpoint, corpus)
    assert "parsing:" not in done.stderr and done.stderr.startswith("parsed 308 sentences")


def _stderr_on_a_terminal(arguments: list[str]) -> str:
    controller, terminal = pty.openpty()
    process = subprocess.Popen(KGPARSER + arguments, stdout=subprocess.DEVNULL, stderr=terminal)
    os.close(terminal)
    seen = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 60)
        try:
            data = os.read(controller, 4096) if ready else b""
        except OSError:  # the terminal's other end closed
            data = b""
        if not data:
            break
        seen += data
    process.wait(60)
    os.close(controller)
    return seen.decode("utf-8")


def test_a_progress_line_on_a_terminal_unless_quiet(checkpoint, corpus):
    shown = _stderr_on_a_terminal(["parse", "-m", str(checkpoint), str(corpus), "--chunk-size", "1"])
    assert "\r\x1b[Kparsing: 1 sentences, 120 words" in shown and "words/s, " in shown and " left" in shown
    assert "\r\x1b[Kparsed 308 sentences" in shown  # the line cleared before the summary
    quiet = _stderr_on_a_terminal(["parse", "-m", str(checkpoint), str(corpus), "--quiet"])
    assert "parsing:" not in quiet and "parsed 308 sentences" in quiet


def test_spawned_workers_give_the_same_sentences(checkpoint, corpus, monkeypatch):
    """How workers start where they cannot be forked (a GPU model, macOS)."""
    monkeypatch.setattr("kgparser.inference.workers.start_method", lambda device: "spawn")
    sentences = list(parse_conllu(corpus.read_text(encoding="utf-8"), require_tree=False))
    piped = Parser.load(checkpoint).pipe(sentences, chunk_size=40, processes=2)
    assert "".join(s.to_conllu() for s in piped) == one_shot(checkpoint, corpus)


def test_an_encoder_model_moved_since_training_parses_alike_in_workers(corpus, tmp_path):
    """Each worker loads the encoder once, from where the parent's came from."""
    pytest.importorskip("transformers")
    from test_encoder import tiny_bert
    from test_model import TINY_MODEL

    from kgparser.config import config_from_dict

    trained_with = tiny_bert(tmp_path / "bert")
    config = config_from_dict({"model": {**TINY_MODEL, "encoder": {"path": str(trained_with), "dim": 8}}})
    torch.manual_seed(0)
    checkpoint = tmp_path / "model.pt"
    save_checkpoint(checkpoint_data(Model.build(config, tiny_sentences(6, seed=0)), 1, None), checkpoint)
    moved = trained_with.rename(tmp_path / "moved")
    source = tmp_path / "in.conllu"  # a long sentence (windows of the encoder) and short ones
    source.write_text("".join(block + "\n\n" for block in corpus.read_text(encoding="utf-8").split("\n\n")[7:40]),
                      encoding="utf-8")
    parser = Parser.load(checkpoint, encoder=moved)
    expected = "".join(s.to_conllu() for s in parser.parse(source))
    parser.parse_file(source, tmp_path / "out.conllu", chunk_size=5, processes=2)
    assert (tmp_path / "out.conllu").read_text(encoding="utf-8") == expected


@pytest.mark.parametrize("input_format", ["raw", "text"])
def test_raw_and_tokenized_text_give_the_same_output_in_chunks(checkpoint, tmp_path, input_format):
    if input_format == "raw":
        pytest.importorskip("spacy")
    from kgparser.io.rawtext import text_of

    source = tmp_path / "in.txt"  # paragraphs, white space before, between and after them
    source.write_text("  \n" + text_of(parse_conllu(sample_data_path("dev").read_text(encoding="utf-8"))) +
                      "\n \n  a last paragraph\n\t\n", encoding="utf-8")
    options = {"input_format": input_format, "lang": "en", "tags": "input"}
    expected = "".join(s.to_conllu() for s in Parser.load(checkpoint).parse(Path(source), **options))
    for chunk_size, processes in ((1, 1), (7, 2)):
        target = tmp_path / f"out{chunk_size}.conllu"
        Parser.load(checkpoint).parse_file(source, target, chunk_size=chunk_size, processes=processes, **options)
        assert target.read_text(encoding="utf-8") == expected


def test_no_more_processes_than_cores_start(checkpoint, corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(workers, "usable_cores", lambda: 2)
    target = tmp_path / "out.conllu"
    with pytest.warns(UserWarning, match=r"^--processes 1000: starting 2: this machine has 2 cores for this "
                                         r"process and memory for about \d+ parsing processes$"):
        Parser.load(checkpoint).parse_file(corpus, target, chunk_size=20, processes=1000)
    assert target.read_text(encoding="utf-8") == one_shot(checkpoint, corpus)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("output, name", [([], "standard output"), (["-o", "/dev/full"], "/dev/full"),
                                          (["-o", "-"], "standard output")])
def test_a_full_disk_under_a_stream_names_it(checkpoint, corpus, output, name):
    with open("/dev/full", "w") as full:
        done = subprocess.run(KGPARSER + ["parse", "-m", str(checkpoint), str(corpus), *output], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr == (f"kgparser parse: error: cannot write {name}: no space left on the device "
                           f"(a stream: what came before the error was written)\n")
