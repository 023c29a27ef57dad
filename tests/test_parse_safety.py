"""Nothing lost, no raw tracebacks (issue 19): non-finite weights, sentences a
lenient parse skips, truncated .gz input, numbers of thousands of digits,
and sentences longer than any seen in training."""
import gzip
import subprocess
import sys
import warnings

import pytest
import torch
from test_model import tiny_config, tiny_sentences

from kgparser.cli import main
from kgparser.errors import KgparserError
from kgparser.inference.decode import NonFiniteScores
from kgparser.inference.parser import LongSentenceWarning, Parser
from kgparser.io.conllu import ConlluError, parse_conllu, read_conllu
from kgparser.model import Model
from kgparser.model.checkpoint import CheckpointError, checkpoint_data, save_checkpoint

torch.set_num_threads(1)

GOOD = "# sent_id = {0}\n1\tw1\t_\tA\t_\t_\t_\t_\t_\t_\n2\tw2\t_\tB\t_\t_\t_\t_\t_\t_\n\n"
BAD = "# sent_id = bad\n1\tw1\t_\tA\t_\t_\t_\t_\t_\n\n"  # 9 columns


def tiny_model(system: str = "arc-hybrid", seed: int = 0):
    torch.manual_seed(seed)
    return Model.build(tiny_config(system), tiny_sentences(6, seed=seed))


def save(model, path):
    save_checkpoint(checkpoint_data(model, 1, None), path)
    return path


def poison(model, name: str, value: float = float("nan")) -> None:
    with torch.no_grad():
        dict(model.network.named_parameters())[name].view(-1)[0] = value


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return save(tiny_model(), tmp_path_factory.mktemp("safety") / "model.pt")


# -- non-finite weights ----------------------------------------------------------------

@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_load_refuses_a_checkpoint_with_non_finite_weights(tmp_path, value):
    model = tiny_model()
    poison(model, "b1", value)
    path = save(model, tmp_path / "diverged.pt")
    with pytest.raises(CheckpointError, match=r"diverged\.pt: the weights are not finite \(b1 holds NaN or inf\)"):
        Parser.load(path)


class _Remove:
    """Pickles as a call of ``os.remove(path)``: what a malicious checkpoint does."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        import os

        return os.remove, (self.path,)


@pytest.mark.parametrize("make", [
    lambda path, victim: path.write_bytes(bytes(range(256)) * 8),
    lambda path, victim: path.write_bytes(b""),
    lambda path, victim: path.write_bytes(path.with_name("model.pt").read_bytes()[:3000]),
    lambda path, victim: torch.save({"format": "kgparser-checkpoint", "model": _Remove(victim)}, path),
    lambda path, victim: path.write_bytes(__import__("pickle").dumps(_Remove(victim), protocol=4)),
], ids=["random-bytes", "empty", "truncated", "malicious-torch", "malicious-pickle"])
def test_a_foreign_or_malicious_checkpoint_is_one_line_and_runs_nothing(checkpoint, make, capsys):
    path, victim = checkpoint.with_name("foreign.pt"), checkpoint.with_name("victim.txt")
    victim.write_text("still here", encoding="utf-8")
    make(path, victim)
    assert main(["parse", "-m", str(path), "in.conllu"]) == 1
    assert capsys.readouterr().err == f"kgparser parse: error: {path}: not a kgparser checkpoint, or damaged\n"
    assert victim.read_text(encoding="utf-8") == "still here"


@pytest.mark.parametrize("system", ["arc-hybrid", "covington"])
@pytest.mark.parametrize("weight", ["w1", "label_out.weight"])
def test_decoding_with_non_finite_weights_names_the_sentence(tmp_path, system, weight):
    model = tiny_model(system)
    poison(model, weight)
    path = tmp_path / "in.conllu"
    path.write_text(GOOD.format("s1") + GOOD.format("s2"), encoding="utf-8")
    with pytest.raises(NonFiniteScores, match=r"in\.conllu, line 1, sentence 1 \(sent_id s1\): .*not finite.*"
                                              r"lower learning rate") as caught:
        Parser(model).parse(path)
    assert isinstance(caught.value, KgparserError) and "\n" not in str(caught.value)


# -- lenient parsing keeps count --------------------------------------------------------

def test_lenient_parse_keeps_skipped_sentences_in_place(checkpoint, tmp_path):
    text = GOOD.format("a") + BAD + GOOD.format("b")
    source = tmp_path / "in.conllu"
    source.write_text(text, encoding="utf-8")
    parser = Parser.load(checkpoint)
    dropped = parser.parse_file(source, tmp_path / "dropped.conllu", lenient=True)
    assert dropped.sentences == 2 and [e.line for e in dropped.skipped] == [6]
    assert (tmp_path / "dropped.conllu").read_text(encoding="utf-8").count("# sent_id") == 2
    kept = parser.parse_file(source, source, keep_skipped=True)  # in place: nothing lost
    out = source.read_text(encoding="utf-8")
    assert kept.sentences == 2 and out.split("\n\n")[1] + "\n\n" == BAD
    assert [b.split("\n")[0] for b in out.strip().split("\n\n")] == ["# sent_id = a", "# sent_id = bad",
                                                                     "# sent_id = b"]


def test_skipped_sentences_at_the_start_and_end_keep_their_places():
    sentences = parse_conllu(BAD + GOOD.format("a") + BAD.replace("bad", "bad2"), "x.conllu", lenient=True,
                             require_tree=False)
    merged = "".join(s.to_conllu() for s in sentences.with_skipped())
    assert merged == BAD + GOOD.format("a") + BAD.replace("bad", "bad2")


def test_cli_reports_skipped_sentences(checkpoint, tmp_path, capsys):
    source = tmp_path / "in.conllu"
    source.write_text(GOOD.format("a") + BAD + BAD + GOOD.format("b"), encoding="utf-8")
    output = tmp_path / "out.conllu"
    assert main(["parse", "-m", str(checkpoint), str(source), "-o", str(output), "--lenient"]) == 0
    err = capsys.readouterr().err
    assert "skipped 2 sentence(s) that cannot be read, missing from the output" in err
    assert f"the first: {source}:6: expected 10 TAB-separated columns" in err
    assert main(["parse", "-m", str(checkpoint), str(source), "-o", str(output), "--keep-skipped"]) == 0
    assert "written back unchanged" in capsys.readouterr().err
    assert output.read_text(encoding="utf-8").count("# sent_id") == 4


def test_truncated_gz_is_one_line_error_and_nothing_is_written(checkpoint, tmp_path, capsys):
    packed = gzip.compress((GOOD.format("a") * 400).encode())
    source = tmp_path / "in.conllu.gz"
    source.write_bytes(packed[:len(packed) // 2])
    with pytest.raises(KgparserError, match=r"in\.conllu\.gz: cannot read: .*damaged or incomplete"):
        read_conllu(source, lenient=True, require_tree=False)
    output = tmp_path / "out.conllu"
    assert main(["parse", "-m", str(checkpoint), str(source), "-o", str(output), "--keep-skipped"]) == 1
    err = capsys.readouterr().err
    assert "in.conllu.gz: cannot read" in err and "Traceback" not in err and not output.exists()


@pytest.mark.parametrize("threads", ["-2", "two"])
def test_a_bad_thread_count_is_refused_by_the_option_parser(checkpoint, capsys, threads):
    with pytest.raises(SystemExit) as exited:
        main(["parse", "-m", str(checkpoint), "in.conllu", "--threads", threads])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "Traceback" not in err
    assert err.endswith(f"kgparser parse: error: argument --threads: must be a whole number >= 0, got '{threads}'\n")


# -- numbers of thousands of digits ----------------------------------------------------

@pytest.mark.parametrize("line, expected", [
    ("1\ta\t_\t_\t_\t_\t{big}\tx\t_\t_", "f.conllu:2: HEAD 1111"),
    ("{big}\ta\t_\t_\t_\t_\t0\tx\t_\t_", "f.conllu:2: word ID 1111"),
    ("1-{big}\ta\t_\t_\t_\t_\t_\t_\t_\t_\n1\ta\t_\t_\t_\t_\t0\tx\t_\t_", "f.conllu:2: multiword token 1-1111"),
    ("{big}-1\ta\t_\t_\t_\t_\t_\t_\t_\t_", "f.conllu:2: malformed multiword token range '1111"),
    ("1\ta\t_\t_\t_\t_\t0\tx\t_\t_\n{big}.1\ta\t_\t_\t_\t_\t_\t_\t_\t_", "f.conllu:3: empty node 1111"),
])
def test_huge_numbers_are_conllu_errors(line, expected):
    text = "# sent_id = x\n" + line.format(big="1" * 5000) + "\n\n"
    with pytest.raises(ConlluError) as caught:
        parse_conllu(text, "f.conllu")
    message = str(caught.value)
    assert message.startswith(expected) and "characters)" in message and len(message) < 200


# -- longer than any training sentence --------------------------------------------------

def test_warns_once_about_sentences_longer_than_in_training(tmp_path):
    model = tiny_model()
    model.max_train_length = 3
    path = save(model, tmp_path / "model.pt")
    parser = Parser.load(path)
    assert parser.model.max_train_length == 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parser.parse([[("w1", "A")] * 3, [("w1", "A")] * 5, [("w1", "A")] * 4])
    assert [str(w.message) for w in caught if w.category is LongSentenceWarning] == [
        "2 sentence(s) are longer than the longest training sentence (3 words), the longest 5 words: the model "
        "may parse them worse"]
    source = tmp_path / "in.conllu"
    source.write_text(GOOD.format("a") * 2, encoding="utf-8")
    model.max_train_length = 1
    save(model, path)
    # in a child process: pytest records warnings, the command line shows them
    done = subprocess.run([sys.executable, "-m", "kgparser.cli", "parse", "-m", str(path), str(source), "-o",
                           str(tmp_path / "out.conllu")], capture_output=True, text=True, check=True)
    lines = [line for line in done.stderr.splitlines() if "warning" in line]
    assert lines == ["kgparser parse: warning: 2 sentence(s) are longer than the longest training sentence "
                     "(1 words), the longest 2 words: the model may parse them worse"]


def test_checkpoints_without_the_training_maximum_still_load(tmp_path):
    model = tiny_model()
    data = checkpoint_data(model, 1, None)
    del data["model"]["max_train_length"]
    save_checkpoint(data, tmp_path / "old.pt")
    parser = Parser.load(tmp_path / "old.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # unknown maximum: no warning
        parser.parse([[("w1", "A")] * 50])
    assert parser.model.max_train_length is None
