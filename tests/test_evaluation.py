"""Attachment scores on hand-checked examples (tests/data/eval_*.conllu).

Gold vs prediction, word by word (H = head right, L = full label right,
U = universal label right):

    e1  The   det    -> det          H L U
        cat   nsubj  -> obj          H
        sat   root   -> root         H L U
        .     punct  -> punct, head 3 -> 2   L U   (PUNCT)
    e2  It    nsubj:pass -> nsubj    H   U
        was   aux:pass, head 3 -> 1    L U
        eaten root   -> root         H L U
        .     punct  -> punct        H L U          (PUNCT)
"""
from __future__ import annotations

from pathlib import Path

import pytest

from kgparser.evaluation.scores import (
    EvaluationError,
    NonProjective,
    distance_bucket,
    evaluate,
    evaluate_files,
    universal_label,
)
from kgparser.io.conllu import parse_conllu, read_conllu, sample_data_path

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

DATA = Path(__file__).parent / "data"
GOLD, PRED = DATA / "eval_gold.conllu", DATA / "eval_pred.conllu"


def test_scores_with_punctuation():
    scores = evaluate_files(GOLD, PRED)
    assert (scores.sentences, scores.words, scores.excluded_punct) == (2, 8, 0)
    assert scores.uas == pytest.approx(6 / 8)
    assert scores.las == pytest.approx(4 / 8)
    assert scores.las_universal == pytest.approx(5 / 8)
    assert scores.label_accuracy == pytest.approx(6 / 8)
    assert (scores.uem, scores.lem) == (0.0, 0.0)


def test_scores_without_punctuation():
    scores = evaluate_files(GOLD, PRED, punct=False)
    assert (scores.words, scores.excluded_punct) == (6, 2)
    assert scores.uas == pytest.approx(5 / 6)
    assert scores.las == pytest.approx(3 / 6)
    assert scores.las_universal == pytest.approx(4 / 6)
    assert (scores.uem, scores.lem) == (0.5, 0.0)


def test_per_label_breakdown():
    per_label = evaluate_files(GOLD, PRED).per_label
    counts = {label: (row.gold, row.predicted, row.correct) for label, row in per_label.items()}
    assert counts == {
        "det": (1, 1, 1), "nsubj": (1, 1, 0), "obj": (0, 1, 0), "root": (2, 2, 2),
        "punct": (2, 2, 1), "nsubj:pass": (1, 0, 0), "aux:pass": (1, 1, 0),
    }
    punct = per_label["punct"]
    assert (punct.precision, punct.recall, punct.f1) == (0.5, 0.5, 0.5)
    assert per_label["obj"].precision == 0.0 and per_label["obj"].recall == 0.0


def test_per_distance_breakdown():
    per_distance = evaluate_files(GOLD, PRED).per_distance
    counts = {bucket: (row.gold, row.predicted, row.correct) for bucket, row in per_distance.items()}
    assert counts == {"1": (5, 4, 3), "2": (1, 2, 1), "root": (2, 2, 2)}
    assert per_distance["1"].f1 == pytest.approx(2 * 3 / 9)


def test_distance_buckets_and_universal_labels():
    assert [distance_bucket(h, 5) for h in (-1, 0, 4, 7, 11, 12, 30)] == [None, "root", "1", "2", "6", "7+", "7+"]
    assert universal_label("nmod:poss") == "nmod" and universal_label("acl:relcl:x") == "acl"
    assert universal_label("root") == "root" and universal_label(None) is None


def test_identical_files_score_100_percent():
    gold = read_conllu(sample_data_path("dev"))
    scores = evaluate(gold, gold)
    assert scores.words == gold.n_words
    assert scores.uas == scores.las == scores.las_universal == scores.uem == 1.0


def test_missing_predicted_heads_count_as_wrong():
    gold = read_conllu(DATA / "eval_gold.conllu")
    pred = [s.copy() for s in gold]
    pred[0].set_tree([-1, 2, 3, 0, -1], [None, "det", "nsubj", "root", None])
    scores = evaluate(gold, pred)
    assert scores.correct_heads == 7 and scores.correct_labeled == 7
    assert scores.per_distance["1"].predicted == 4  # the headless word predicts no arc


def test_gold_without_tree_is_rejected():
    gold = parse_conllu("1\tw\tw\tX\t_\t_\t_\t_\t_\t_\n", source="g.conllu", require_tree=False)
    with pytest.raises(EvaluationError, match="g.conllu:1: gold word 1 has no HEAD"):
        evaluate(gold, gold)


def test_misaligned_inputs_name_files_and_sentences(tmp_path):
    gold = read_conllu(GOLD)
    with pytest.raises(EvaluationError, match=rf"{GOLD} has 2 sentences but {GOLD} has 1"):
        evaluate(gold, gold[:1])
    changed = tmp_path / "pred.conllu"
    changed.write_text(PRED.read_text(encoding="utf-8").replace("\teaten\t", "\teated\t"), encoding="utf-8")
    with pytest.raises(EvaluationError, match=rf"sentence 2 \(gold {GOLD}:8, prediction {changed}:8\): "
                                              r"word 3 is 'eaten' in gold but 'eated' in prediction"):
        evaluate_files(GOLD, changed)
    shorter = parse_conllu("1\tThe\tthe\tDET\t_\t_\t0\troot\t_\t_\n\n" * 2, source="short.conllu")
    with pytest.raises(EvaluationError, match="sentence 1 .*4 gold words but 1 predicted words"):
        evaluate(gold, shorter)


def test_counts_by_sentence():
    """The terms of paired tests over sentences: in e1 the head of "." is wrong
    (cat -> ., non-projective over the root "sat") and "cat" has the wrong
    label, in e2 the head of "was" and the label of "It"; without punctuation
    "." is not scored (its head right in e2)."""
    scores = evaluate_files(GOLD, PRED)
    assert scores.by_sentence == {"words": [4, 4], "correct_heads": [3, 3], "correct_labeled": [2, 2],
                                  "upos_words": [4, 4], "correct_upos": [4, 4], "nonprojective_gold": [0, 0],
                                  "nonprojective_found": [0, 0],
                                  "nonprojective_predicted": [1, 0], "nonprojective_right": [0, 0]}
    no_punct = evaluate(read_conllu(GOLD), read_conllu(PRED, require_tree=False), punct=False, nonprojective=False)
    assert no_punct.by_sentence == {"words": [3, 3], "correct_heads": [3, 2], "correct_labeled": [2, 1],
                                    "upos_words": [3, 3], "correct_upos": [3, 3]}


def test_report_formats():
    scores = evaluate_files(GOLD, PRED, punct=False)
    data = scores.to_dict()
    assert data["uas"] == pytest.approx(5 / 6) and data["las_universal"] == pytest.approx(4 / 6)
    assert data["per_label"]["det"] == {"gold": 1, "predicted": 1, "correct": 1,
                                        "precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert list(data["per_distance"]) == ["root", "1", "2"]
    assert "per_label" not in scores.to_dict(breakdown=False)
    text = scores.format(breakdown=True)
    assert "UAS                  83.33  (5/6)" in text
    assert "LAS (universal)      66.67  (4/6)" in text
    assert "(excluding 2 words with gold UPOS PUNCT)" in text
    assert "nsubj:pass" in text and "\nroot" in text


def _tree(heads: list[int], upos: list[str] | None = None) -> str:
    upos = upos or ["X"] * len(heads)
    return "".join(f"{d}\tw{d}\t_\t{u}\t_\t_\t{h}\t{'root' if h == 0 else 'dep'}\t_\t_\n"
                   for d, (h, u) in enumerate(zip(heads, upos), start=1)) + "\n"


def test_nonprojective_arcs_recall_over_gold_precision_over_predicted():
    """Gold 2 -> 5 is non-projective (over 3, 4); the prediction finds it but,
    with 2 as the root, makes it projective, and its gold arcs 1 -> 3, 1 -> 4
    non-projective (over 2): recall 1/1, precision 2/2 (the reports' old
    quotient, found / predicted, said 1/2).  Without punctuation (word 4 is
    PUNCT) only 1 -> 3 is left on the predicted side."""
    upos = ["X", "X", "X", "PUNCT", "X"]
    gold = parse_conllu(_tree([0, 1, 1, 1, 2], upos), require_tree=True)
    pred = parse_conllu(_tree([2, 0, 1, 1, 2], upos), require_tree=False)
    scores = evaluate(gold, pred)
    assert scores.nonprojective == NonProjective(gold=1, found=1, predicted=2, right=2)
    assert (scores.by_sentence["nonprojective_predicted"], scores.by_sentence["nonprojective_right"]) == ([2], [2])
    assert scores.to_dict()["nonprojective"] == {"gold": 1, "found": 1, "predicted": 2, "right": 2,
                                                 "precision": 1.0, "recall": 1.0}
    assert ("Non-projective arcs: gold 1, 1 with the gold head (recall 100.00); predicted 2, 2 with the gold "
            "head (precision 100.00)") in scores.format(breakdown=True)
    assert evaluate(gold, pred, punct=False).nonprojective == NonProjective(1, 1, 1, 1)
    # word 3 without a head: no arc of its own, but it hangs from the root, under 2 -> 5
    unparsed = parse_conllu(_tree([2, 0, -1, 1, 2], upos).replace("\t-1\t", "\t_\t"), require_tree=False)
    assert evaluate(gold, unparsed).nonprojective == NonProjective(1, 1, 2, 2)


def test_nonprojective_arcs_left_uncounted_on_request():
    """Training's dev scores skip the count: the other scores are the same, and
    the reports leave the non-projective line and entry out instead of zeros."""
    upos = ["X", "X", "X", "PUNCT", "X"]
    gold = parse_conllu(_tree([0, 1, 1, 1, 2], upos), require_tree=True)
    pred = parse_conllu(_tree([2, 0, 1, 1, 2], upos), require_tree=False)
    counted, uncounted = evaluate(gold, pred), evaluate(gold, pred, nonprojective=False)
    assert uncounted.nonprojective is None
    full, short = counted.to_dict(), uncounted.to_dict()
    assert "nonprojective" not in short and full.pop("nonprojective") and full == short
    assert "Non-projective" not in uncounted.format(breakdown=True)
    assert uncounted.format(breakdown=True) in counted.format(breakdown=True)
