"""The ``kgparser evaluate`` command."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kgparser.cli import main

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

DATA = Path(__file__).parent / "data"
GOLD, PRED = str(DATA / "eval_gold.conllu"), str(DATA / "eval_pred.conllu")


def test_json_output(capsys):
    assert main(["evaluate", GOLD, PRED, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["words"] == 8 and data["punct"] is True
    assert data["uas"] == pytest.approx(0.75)
    assert data["las"] == pytest.approx(0.5)
    assert data["las_universal"] == pytest.approx(0.625)
    assert "per_label" not in data


def test_json_no_punct_with_breakdown(capsys):
    assert main(["evaluate", GOLD, PRED, "--json", "--no-punct", "--breakdown"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["words"], data["excluded_punct"]) == (6, 2)
    assert data["uas"] == pytest.approx(5 / 6)
    assert data["per_label"]["nsubj"]["predicted"] == 1
    assert data["per_distance"]["2"]["correct"] == 1
    assert set(data["nonprojective"]) >= {"gold", "found", "predicted", "right", "precision", "recall"}


def test_text_output(capsys):
    assert main(["evaluate", GOLD, PRED, "--breakdown"]) == 0
    out = capsys.readouterr().out
    assert "UAS                  75.00  (6/8)" in out
    assert "LAS (full labels)    50.00  (4/8)" in out
    assert "Distance" in out and "aux:pass" in out and "Non-projective arcs: gold " in out


def test_errors_are_reported_without_traceback(capsys, tmp_path):
    broken = tmp_path / "broken.conllu"
    broken.write_text("1\tx\n", encoding="utf-8")
    assert main(["evaluate", GOLD, str(broken)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kgparser evaluate: error: ") and f"{broken}:1: expected 10" in err
    assert "Traceback" not in err


def test_command_runs_as_a_program_without_torch():
    code = ("import sys; from kgparser.cli import main; rc = main(['evaluate', sys.argv[1], sys.argv[2]]); "
            "assert 'torch' not in sys.modules; sys.exit(rc)")
    result = subprocess.run([sys.executable, "-c", code, GOLD, GOLD], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "UAS                 100.00  (8/8)" in result.stdout


def test_against_a_second_prediction(capsys):
    assert main(["evaluate", GOLD, PRED, "--against", GOLD, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["against"]
    assert data["pred"] == GOLD
    assert data["las"]["pred"] == pytest.approx(0.5) and data["las"]["against"] == 1.0
    assert data["las"]["delta"] == pytest.approx(0.5) and data["uas"]["delta"] == pytest.approx(0.25)
    assert 0 < data["las"]["p_value"] <= 1 and data["las"]["samples"] == 10_000
    assert main(["evaluate", GOLD, PRED, "--against", PRED, "--test", "randomization"]) == 0
    out = capsys.readouterr().out
    assert "paired randomization test" in out
    assert "LAS      50.00   50.00       +0.00   1.0000" in out


def test_against_compares_upos_where_tags_were_predicted(capsys, tmp_path):
    mistagged = tmp_path / "mistagged.conllu"
    lines = Path(PRED).read_text(encoding="utf-8").splitlines()
    lines = [line.replace("\tNOUN\t", "\tVERB\t").replace("\tPRON\t", "\tDET\t") for line in lines]
    mistagged.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["evaluate", GOLD, PRED, "--against", str(mistagged), "--json"]) == 0
    upos = json.loads(capsys.readouterr().out)["against"]["upos"]
    assert (upos["pred"], upos["against"]) == (1.0, pytest.approx(6 / 8))
    assert 0 < upos["p_value"] <= 1
    assert main(["evaluate", GOLD, PRED, "--against", str(mistagged)]) == 0
    assert "UPOS    100.00   75.00      -25.00" in capsys.readouterr().out
    # both copying the gold UPOS: nothing to compare
    assert main(["evaluate", GOLD, PRED, "--against", GOLD, "--json"]) == 0
    assert "upos" not in json.loads(capsys.readouterr().out)["against"]


def test_nothing_to_score_is_an_error_naming_the_files(capsys, tmp_path):
    empty = tmp_path / "empty.conllu"
    empty.write_text("", encoding="utf-8")
    for extra in ([], ["--against", str(empty)], ["--aligned"], ["--aligned", "--json"], ["--json"]):
        assert main(["evaluate", str(empty), str(empty), *extra]) == 1
        err = capsys.readouterr().err
        assert err == f"kgparser evaluate: error: {empty}, {empty}: nothing to score: no sentences\n"


def test_nothing_to_score_without_punctuation(capsys, tmp_path):
    punct = tmp_path / "punct.conllu"
    punct.write_text("1\t.\t_\tPUNCT\t_\t_\t0\troot\t_\t_\n\n", encoding="utf-8")
    assert main(["evaluate", str(punct), str(punct), "--no-punct"]) == 1
    assert "nothing to score: every word is PUNCT" in capsys.readouterr().err


@pytest.mark.parametrize("keep", [0, 1])
def test_a_second_prediction_with_other_sentences_is_named(capsys, tmp_path, keep):
    blocks = Path(PRED).read_text(encoding="utf-8").strip().split("\n\n")
    short = tmp_path / "short.conllu"
    short.write_text("".join(block + "\n\n" for block in blocks[:keep]), encoding="utf-8")
    assert main(["evaluate", GOLD, PRED, "--against", str(short)]) == 1
    err = capsys.readouterr().err
    assert err == f"kgparser evaluate: error: {GOLD} has {len(blocks)} sentences but {short} has {keep}\n"


def raw_text_parse(tmp_path) -> str:
    """GOLD's text parsed otherwise: one sentence for two, "sat." one token."""
    blocks = Path(GOLD).read_text(encoding="utf-8").strip().split("\n\n")
    first = [line for line in blocks[0].splitlines() if not line.startswith("#")]
    first[2:4] = ["3\tsat.\tsit\tVERB\tVBD\t_\t0\troot\t_\t_"]
    second = []
    for line in blocks[1].splitlines()[2:]:
        columns = line.split("\t")
        columns[0] = str(int(columns[0]) + 3)
        columns[6], columns[7] = (str(int(columns[6]) + 3), columns[7]) if columns[6] != "0" else ("3", "parataxis")
        second.append("\t".join(columns))
    path = tmp_path / "raw.conllu"
    path.write_text("\n".join(first + second) + "\n\n", encoding="utf-8")
    return str(path)


def test_against_a_parse_of_raw_text(capsys, tmp_path):
    raw = raw_text_parse(tmp_path)
    assert main(["evaluate", GOLD, raw, "--against", GOLD, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    against = data["against"]
    assert against["pred"] == GOLD
    assert list(against)[1:] == [metric for metric in data if metric not in ("aligned", "against")]
    sentences = against["sentences"]
    assert (sentences["pred"], sentences["against"], sentences["delta"]) == (0.0, 1.0, 1.0)
    assert (sentences["test"], sentences["samples"]) == ("bootstrap", 10_000) and 0 < sentences["p_value"] <= 1
    for metric, result in against.items():
        if metric != "pred":  # PRED's F1 is the report's
            assert result["pred"] == data[metric]["f1"] and result["against"] == 1.0, metric
    assert against["tokens"]["pred"] == pytest.approx(2 * 6 / (8 + 7))
    # the same in the order PRED2 = the raw parse, PRED = GOLD (words of GOLD): the aligned comparison too
    assert main(["evaluate", GOLD, GOLD, "--against", raw, "--json"]) == 0
    swapped = json.loads(capsys.readouterr().out)["against"]
    assert swapped["pred"] == raw and swapped["las"]["delta"] == -against["las"]["delta"]
    assert main(["evaluate", GOLD, raw, "--against", raw, "--test", "randomization"]) == 0
    out = capsys.readouterr().out
    assert f"{raw} against {raw} (F1, paired randomization test, 10,000 samples over gold sentences):" in out
    assert "                      PRED   PRED2  PRED2-PRED        p\n" in out
    assert "Sentences             0.00    0.00       +0.00   1.0000\n" in out
    # "cat" and "eaten" hang from "sat.", aligned to no gold word: 4 right of 8 gold and 7 predicted words
    assert "LAS (full labels)    53.33   53.33       +0.00   1.0000\n" in out
    assert "Lemmas" in out and "UFeats" not in out  # the gold file's columns


def test_aligned_against_on_gold_words(capsys):
    assert main(["evaluate", GOLD, PRED, "--against", GOLD, "--aligned", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["aligned"] and data["against"]["las"]["pred"] == pytest.approx(0.5)
    assert data["against"]["las"]["delta"] == pytest.approx(0.5) and data["against"]["tokens"]["delta"] == 0


def test_against_a_parse_of_another_text_is_one_line(capsys, tmp_path):
    raw = raw_text_parse(tmp_path)
    other = tmp_path / "other.conllu"
    other.write_text(Path(GOLD).read_text(encoding="utf-8").replace("\tcat\t", "\tdog\t"), encoding="utf-8")
    assert main(["evaluate", GOLD, raw, "--against", str(other)]) == 1
    assert capsys.readouterr().err == (
        f"kgparser evaluate: error: {GOLD} and {other} hold different texts (white space aside): from character 4 "
        f"the gold tokens read 'catsat.Itwaseaten.', the predicted ones 'dogsat.Itwaseaten.'\n")
    assert main(["evaluate", GOLD, PRED, "--against", str(other)]) == 1  # PRED has the gold words
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(other) in err and "'cat' in gold but 'dog'" in err
    assert main(["evaluate", GOLD, PRED, "--against", raw, "--breakdown"]) == 1
    assert capsys.readouterr().err == (f"kgparser evaluate: error: --breakdown: only for a prediction with the gold "
                                       f"words; {raw} has other words (or --aligned asks for the aligned report)\n")
