"""The character-aligned scorer (CoNLL 2018) against hand-computed cases:
split and merged tokens, multiword tokens, a missing sentence break, a
different text; and the command line choosing it when the words differ."""
import json

import pytest

from kgparser.cli import main
from kgparser.evaluation.aligned import evaluate_aligned, same_words
from kgparser.evaluation.scores import EvaluationError, evaluate
from kgparser.io.conllu import parse_conllu, read_conllu, sample_data_path

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)


def conllu(*sentences):
    """CoNLL-U of sentences given as rows ``(id, form, upos, head, deprel)``."""
    blocks = []
    for rows in sentences:
        lines = [f"{i}\t{form}\t_\t{upos}\t_\t_\t{head}\t{deprel}\t_\t_" if head is not None
                 else f"{i}\t{form}\t_\t_\t_\t_\t_\t_\t_\t_" for i, form, upos, head, deprel in rows]
        blocks.append("\n".join(lines) + "\n\n")
    return parse_conllu("".join(blocks), require_tree=False)


GOLD = conllu([(1, "The", "DET", 2, "det"), (2, "cat", "NOUN", 3, "nsubj"), (3, "cannot", "AUX", 0, "root"),
               (4, ".", "PUNCT", 3, "punct")],
              [(1, "It", "PRON", 2, "nsubj"), (2, "sleeps", "VERB", 0, "root")])


def row(scores, name):
    score = scores.scores[name]
    return score.gold, score.predicted, score.correct


def test_a_split_token():
    # "cannot" split into "can" "not": 6 gold words, 7 predicted, 5 aligned
    pred = conllu([(1, "The", "DET", 2, "det"), (2, "cat", "NOUN", 3, "nsubj"), (3, "can", "AUX", 0, "root"),
                   (4, "not", "PART", 3, "advmod"), (5, ".", "PUNCT", 3, "punct")],
                  [(1, "It", "PRON", 2, "nsubj"), (2, "sleeps", "VERB", 0, "root")])
    scores = evaluate_aligned(GOLD, pred)
    assert row(scores, "tokens") == (6, 7, 5)
    assert row(scores, "sentences") == (2, 2, 2)
    assert row(scores, "words") == (6, 7, 5)
    assert row(scores, "upos") == (6, 7, 5)
    # "cat" heads "can", which is aligned to no gold word: wrong; "." heads "can" too
    assert row(scores, "uas") == (6, 7, 3)
    assert row(scores, "las") == (6, 7, 3)
    assert scores.scores["uas"].f1 == pytest.approx(2 * 3 / 13)
    assert scores.scores["uas"].aligned_accuracy == pytest.approx(3 / 5)


def test_merged_tokens():
    # "It sleeps" read as one token "Itsleeps"
    pred = conllu([(1, "The", "DET", 2, "det"), (2, "cat", "NOUN", 3, "nsubj"), (3, "cannot", "AUX", 0, "root"),
                   (4, ".", "PUNCT", 3, "punct")],
                  [(1, "Itsleeps", "VERB", 0, "root")])
    scores = evaluate_aligned(GOLD, pred)
    assert row(scores, "tokens") == (6, 5, 4)
    assert row(scores, "words") == (6, 5, 4)
    assert row(scores, "sentences") == (2, 2, 2)
    assert row(scores, "las") == (6, 5, 4)


def test_a_missing_sentence_break():
    # one sentence for two: "sleeps" hangs from "cannot" instead of the root
    pred = conllu([(1, "The", "DET", 2, "det"), (2, "cat", "NOUN", 3, "nsubj"), (3, "cannot", "AUX", 0, "root"),
                   (4, ".", "PUNCT", 3, "punct"), (5, "It", "PRON", 6, "nsubj"), (6, "sleeps", "VERB", 3, "parataxis")])
    scores = evaluate_aligned(GOLD, pred)
    assert row(scores, "sentences") == (2, 1, 0)
    assert row(scores, "tokens") == (6, 6, 6)
    assert row(scores, "words") == (6, 6, 6)
    assert row(scores, "uas") == (6, 6, 5)
    assert scores.scores["sentences"].f1 == 0.0


def test_multiword_tokens_aligned_by_their_words():
    # gold "du" = "de" + "le"; the prediction reads "du" as one word: no word aligned there
    gold = parse_conllu("1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_\n1\tde\t_\tADP\t_\t_\t3\tcase\t_\t_\n"
                        "2\tle\t_\tDET\t_\t_\t3\tdet\t_\t_\n3\tpain\t_\tNOUN\t_\t_\t0\troot\t_\t_\n\n")
    one_word = conllu([(1, "du", "ADP", 2, "case"), (2, "pain", "NOUN", 0, "root")])
    scores = evaluate_aligned(gold, one_word)
    assert row(scores, "tokens") == (2, 2, 2)
    assert row(scores, "words") == (3, 2, 1)
    assert row(scores, "uas") == (3, 2, 1)
    # the same multiword token, words "De" + "la": "de" aligns (lower-cased forms), "le" does not
    other = parse_conllu("1-2\tdu\t_\t_\t_\t_\t_\t_\t_\t_\n1\tDe\t_\tADP\t_\t_\t3\tcase\t_\t_\n"
                         "2\tla\t_\tDET\t_\t_\t3\tdet\t_\t_\n3\tpain\t_\tNOUN\t_\t_\t0\troot\t_\t_\n\n")
    scores = evaluate_aligned(gold, other)
    assert row(scores, "words") == (3, 3, 2)
    assert row(scores, "las") == (3, 3, 2)


def test_a_word_without_a_head_is_wrong():
    pred = conllu([(1, "The", "DET", 2, "det"), (2, "cat", "NOUN", None, None), (3, "cannot", "AUX", 0, "root"),
                   (4, ".", "PUNCT", 3, "punct")],
                  [(1, "It", "PRON", 2, "nsubj"), (2, "sleeps", "VERB", 0, "root")])
    assert row(evaluate_aligned(GOLD, pred), "uas") == (6, 6, 5)


def test_the_same_words_score_as_the_word_by_word_scorer():
    gold = read_conllu(sample_data_path("dev"))
    pred = parse_conllu("".join(s.to_conllu() for s in gold))
    for sentence in pred[::3]:
        sentence.set_tree([-1] + [0] * sentence.n, [None] + ["dep"] * sentence.n)
    assert same_words(gold, pred)
    word_by_word, aligned = evaluate(gold, pred), evaluate_aligned(gold, pred).scores
    assert aligned["uas"].f1 == pytest.approx(word_by_word.uas)
    assert aligned["las"].f1 == pytest.approx(word_by_word.las)
    assert aligned["las_universal"].f1 == pytest.approx(word_by_word.las_universal)
    assert aligned["upos"].f1 == pytest.approx(word_by_word.tag_accuracy("upos"))
    assert aligned["words"].f1 == aligned["tokens"].f1 == aligned["sentences"].f1 == 1.0


def test_other_texts_are_one_line_naming_both_files():
    pred = conllu([(1, "The", "DET", 2, "det"), (2, "dog", "NOUN", 0, "root")])
    with pytest.raises(EvaluationError, match=r"^G and P hold different texts .*from character 4 the gold "
                                              r"tokens read 'catcannot.Itsleeps', the predicted ones 'dog'$"):
        evaluate_aligned(GOLD, pred, "G", "P")


def test_the_command_scores_other_words_aligned(tmp_path, capsys):
    gold, pred = tmp_path / "gold.conllu", tmp_path / "pred.conllu"
    gold.write_text("".join(s.to_conllu() for s in GOLD), encoding="utf-8")
    merged = conllu([(1, "The", "DET", 2, "det"), (2, "cat", "NOUN", 3, "nsubj"), (3, "cannot", "AUX", 0, "root"),
                     (4, ".", "PUNCT", 3, "punct"), (5, "It", "PRON", 6, "nsubj"), (6, "sleeps", "VERB", 3, "dep")])
    pred.write_text("".join(s.to_conllu() for s in merged), encoding="utf-8")
    assert main(["evaluate", str(gold), str(pred)]) == 0
    table = capsys.readouterr().out
    assert "Sentences         |      0.00 |      0.00 |      0.00 |\n" in table
    assert main(["evaluate", str(gold), str(pred), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["aligned"] and data["uas"]["correct"] == 5 and data["sentences"]["f1"] == 0.0
    assert main(["evaluate", str(gold), str(gold), "--aligned", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["las"]["f1"] == 1.0
    assert main(["evaluate", str(gold), str(pred), "--breakdown"]) == 1
    assert capsys.readouterr().err == (f"kgparser evaluate: error: --breakdown: only for a prediction with the gold "
                                       f"words; {pred} has other words (or --aligned asks for the aligned report)\n")
