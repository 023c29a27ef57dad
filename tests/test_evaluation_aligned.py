"""The character-aligned scorer (CoNLL 2018) against hand-computed cases:
split and merged tokens, multiword tokens, a missing sentence break, a
different text; and the command line choosing it when the words differ.
Its counts per gold sentence (the terms of the paired test of two parses of
raw text) against its totals, over random perturbations of a treebank."""
import json
import random

import pytest

from kgparser.cli import main
from kgparser.evaluation.aligned import (
    compare_aligned,
    compare_seeds,
    evaluate_aligned,
    same_text,
    same_words,
    sentence_counts,
)
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


# --- counts per gold sentence and the paired test ---------------------------------------------------------------


class Word:
    """A word of a perturbable file: its columns and its head (a :class:`Word`,
    ``0`` for the root, None for ``_``)."""

    def __init__(self, form, lemma="_", upos=None, xpos=None, feats=None, head=0, deprel="dep"):
        self.form, self.lemma, self.upos, self.xpos, self.feats = form, lemma, upos, xpos, feats
        self.head, self.deprel = head, deprel


def editable(sentences):
    """The sentences as lists of tokens ``(form, words)``: a multiword token has
    its own form and several words, another token one word of the same form."""
    result = []
    for sentence in sentences:
        words = [Word(sentence.forms[d], sentence.lemmas[d], sentence.upos[d], sentence.xpos[d], sentence.feats[d],
                      None, sentence.deprels[d + 1]) for d in range(sentence.n)]
        for d, word in enumerate(words, start=1):
            head = sentence.heads[d]
            word.head = None if head < 0 else 0 if head == 0 else words[head - 1]
        multiword = {first: (last, form) for first, last, form in sentence.multiword_tokens}
        tokens, d = [], 1
        while d <= sentence.n:
            last, form = multiword.get(d, (d, sentence.forms[d - 1]))
            tokens.append((form, words[d - 1:last]))
            d = last + 1
        result.append(tokens)
    return result


def render(file) -> str:
    """CoNLL-U of an :func:`editable` file: a head outside its sentence becomes
    the root, and so does the head of a word on a cycle."""
    blocks = []
    for tokens in file:
        words = [word for _, token_words in tokens for word in token_words]
        index = {id(word): i for i, word in enumerate(words, start=1)}
        heads = [None if w.head is None else 0 if w.head == 0 else index.get(id(w.head), 0) for w in words]
        for i in range(1, len(words) + 1):  # break cycles: follow the heads up from each word
            seen, j = set(), i
            while j and j not in seen:
                seen.add(j)
                head = heads[j - 1]
                if head is None:
                    break
                if head == i:
                    heads[i - 1] = 0
                    break
                j = head
        lines, i = [], 1
        for form, token_words in tokens:
            if len(token_words) > 1:
                lines.append(f"{i}-{i + len(token_words) - 1}\t{form}" + "\t_" * 8)
            for word in token_words:
                head_column = "_" if heads[i - 1] is None else str(heads[i - 1])
                columns = [str(i), word.form, word.lemma, word.upos, word.xpos, word.feats, head_column,
                           word.deprel if head_column != "_" else "_", "_", "_"]
                lines.append("\t".join(column or "_" for column in columns))
                i += 1
        blocks.append("\n".join(lines) + "\n\n")
    return "".join(blocks)


def perturb(file, rng: random.Random):
    """One random change of tokens, sentences or a word's columns (the text stays)."""
    s = rng.randrange(len(file))
    tokens = file[s]
    t = rng.randrange(len(tokens))
    form, words = tokens[t]
    kind = rng.choice(["split token", "merge tokens", "multiword", "merge sentences", "split sentence",
                       "head", "no head", "label", "upos", "xpos", "feats", "lemma"])
    if kind == "split token" and len(words) == 1 and len(form) > 1:
        k = rng.randrange(1, len(form))
        first, second = words[0], Word(form[k:], head=words[0], upos="X")
        first.form = form[:k]
        tokens[t:t + 1] = [(form[:k], [first]), (form[k:], [second])]
    elif kind == "merge tokens" and t + 1 < len(tokens) and len(words) == len(tokens[t + 1][1]) == 1:
        kept, gone = words[0], tokens[t + 1][1][0]
        for word in (w for sentence in file for _, ws in sentence for w in ws):
            if word.head is gone:
                word.head = kept
        if kept.head is kept:
            kept.head = gone.head
        kept.form = form + tokens[t + 1][0]
        tokens[t:t + 2] = [(kept.form, [kept])]
    elif kind == "multiword" and len(words) > 1:
        if rng.random() < 0.5:  # one word for the token
            for word in (w for sentence in file for _, ws in sentence for w in ws):
                if any(word.head is w for w in words[1:]):
                    word.head = words[0]
            words[0].form = form
            tokens[t] = (form, [words[0]])
        else:  # other forms inside it: aligned by forms
            words[rng.randrange(len(words))].form = "zz"
    elif kind == "merge sentences" and s + 1 < len(file):
        file[s:s + 2] = [tokens + file[s + 1]]
    elif kind == "split sentence" and 0 < t:
        file[s:s + 1] = [tokens[:t], tokens[t:]]
    elif kind in ("head", "no head"):
        word = words[rng.randrange(len(words))]
        others = [w for _, ws in tokens for w in ws if w is not word]
        word.head = None if kind == "no head" else rng.choice([0, *others])
    elif kind in ("label", "upos", "xpos", "feats", "lemma"):
        word = words[rng.randrange(len(words))]
        attribute = {"label": "deprel"}.get(kind, kind)
        setattr(word, attribute, rng.choice(["nsubj", "nsubj:pass", "obj", "NOUN", "VERB", "NN", "Number=Sing", "x",
                                                None]))


def perturbed(gold, rng: random.Random, changes: int):
    file = editable(gold)
    for _ in range(changes):
        perturb(file, rng)
    return parse_conllu(render(file), "perturbed.conllu", require_tree=False)


@pytest.fixture(scope="module")
def treebank():
    return read_conllu(sample_data_path("test"))


def test_counts_per_sentence_sum_to_the_scores(treebank):
    rng = random.Random(20180)
    copy = parse_conllu(render(editable(treebank)))  # the helpers copy the file
    assert same_words(treebank, copy)
    assert all(score.f1 == 1 for score in evaluate_aligned(treebank, copy).scores.values())
    counts = sentence_counts(treebank, copy)
    assert counts["words"].gold == counts["words"].predicted == counts["words"].correct == [s.n for s in treebank]
    for trial in range(12):
        pred = perturbed(treebank, rng, changes=rng.choice([1, 5, 30, 200]))
        assert same_text(treebank, pred)
        scores, counts = evaluate_aligned(treebank, pred).scores, sentence_counts(treebank, pred)
        assert list(counts) == list(scores)
        assert {"tokens", "sentences", "words", "upos", "xpos", "ufeats", "lemma", "uas", "las"} <= set(counts)
        for metric, score in scores.items():
            per_sentence = counts[metric]
            assert len(per_sentence.gold) == len(per_sentence.predicted) == len(treebank)
            total = per_sentence.total()
            assert (total.gold, total.predicted, total.correct) == (score.gold, score.predicted, score.correct), (
                trial, metric)
            assert sum(per_sentence.correct) / sum(per_sentence.halves) == score.f1  # exactly: half-integers
            assert all(c <= g for c, g in zip(per_sentence.correct, per_sentence.gold))


def test_the_gold_sentence_of_each_item():
    # "cannot" split into "can" "not", and the sentence break missed
    pred = conllu([(1, "The", "DET", 2, "det"), (2, "cat", "NOUN", 3, "nsubj"), (3, "can", "AUX", 0, "root"),
                   (4, "not", "PART", 3, "advmod"), (5, ".", "PUNCT", 3, "punct"), (6, "It", "PRON", 7, "nsubj"),
                   (7, "sleeps", "VERB", 3, "parataxis")])
    counts = sentence_counts(GOLD, pred)
    assert (counts["tokens"].gold, counts["tokens"].predicted, counts["tokens"].correct) == ([4, 2], [5, 2], [3, 2])
    assert (counts["sentences"].gold, counts["sentences"].predicted, counts["sentences"].correct) == (
        [1, 1], [1, 0], [0, 0])
    assert counts["sentences"].halves == [1.0, 0.5]
    assert (counts["words"].predicted, counts["words"].correct) == ([5, 2], [3, 2])
    # "cat", "." and "sleeps" hang from "can", aligned to no gold word: only "The" and "It" are right
    assert counts["uas"].correct == [1, 1]


def test_identical_predictions_differ_by_nothing(treebank):
    pred = perturbed(treebank, random.Random(7), changes=100)
    for test in ("bootstrap", "randomization"):
        comparison = compare_aligned(treebank, pred, pred, test=test, samples=500)
        assert list(comparison) == list(evaluate_aligned(treebank, pred).scores)
        for result in comparison.values():
            assert result.delta == 0 and result.p_value == 1.0 and result.test == test


def test_a_clearly_better_parse_has_a_small_p_value(treebank):
    worse = perturbed(treebank, random.Random(3), changes=600)
    scores = evaluate_aligned(treebank, worse).scores
    for test in ("bootstrap", "randomization"):
        comparison = compare_aligned(treebank, worse, treebank, test=test, samples=1000)
        for metric, result in comparison.items():
            assert result.score_a == scores[metric].f1 and result.score_b == 1.0
            assert result.delta > 0 and result.p_value < 0.01, (test, metric)


def test_a_second_parse_of_another_text_is_named():
    other = conllu([(1, "The", "DET", 2, "det"), (2, "dog", "NOUN", 0, "root")])
    with pytest.raises(EvaluationError, match=r"^G and Q hold different texts .*the predicted ones 'dog'$"):
        compare_aligned(GOLD, GOLD, other, names=("G", "P", "Q"))


def test_seeds_pooled_weigh_each_seed_and_move_together(treebank):
    rng = random.Random(11)
    a1, a2, b1, b2 = (perturbed(treebank, rng, changes=changes) for changes in (300, 200, 100, 50))
    one = compare_aligned(treebank, a1, b1, samples=500)
    # a seed given twice is the same comparison: the same ratios and the same resampled sentences
    twice = compare_seeds(treebank, [a1, a1], [b1, b1], samples=500)
    assert {m: (r.score_a, r.score_b, r.p_value) for m, r in one.items()} == {
        m: (r.score_a, r.score_b, r.p_value) for m, r in twice.items()}
    pooled = compare_seeds(treebank, [a1, a2], [b1, b2], samples=500)
    for metric, result in pooled.items():
        first, second = (evaluate_aligned(treebank, p).scores[metric] for p in (a1, a2))
        right, halves = first.correct + second.correct, (first.gold + first.predicted + second.gold
                                                         + second.predicted) / 2
        assert result.score_a == pytest.approx(right / halves), metric


def test_seeds_come_in_pairs(treebank):
    with pytest.raises(ValueError, match="2 parses against 1: one per seed on each side"):
        compare_seeds(treebank, [treebank, treebank], [treebank])
