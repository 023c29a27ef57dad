"""Lemmas: the edit scripts the joint tagger predicts (kgparser/lemma.py),
the LEMMA column of a sentence, and lemma accuracy in evaluation, on gold
words and aligned (the tagger's side is in test_tagging.py)."""
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgparser.cli import main
from kgparser.evaluation.aligned import evaluate_aligned
from kgparser.evaluation.scores import evaluate
from kgparser.io.conllu import parse_conllu, read_conllu, sample_data_path
from kgparser.lemma import LemmaLexicon, apply_class, cut_key, lemma_class

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)


# -- edit scripts ---------------------------------------------------------------------------

def test_every_lemma_of_the_ewt_sample_comes_back_from_its_class():
    pairs = {(form, lemma) for sentence in read_conllu(sample_data_path("train"))
             for form, lemma in zip(sentence.forms, sentence.lemmas) if lemma != "_"}
    assert len(pairs) > 5000
    assert [(form, lemma) for form, lemma in pairs if apply_class(lemma_class(form, lemma), form) != lemma] == []
    assert len({lemma_class(form, lemma) for form, lemma in pairs}) < 200  # suffix rules are shared


@given(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12))
def test_any_form_and_lemma_round_trip(form, lemma):
    assert apply_class(lemma_class(form, lemma), form) == lemma


@pytest.mark.parametrize("learned, unseen", [
    (("walked", "walk"), ("jumped", "jump")),
    (("dogs", "dog"), ("Cats", "cat")),               # lower-cased
    (("Americans", "American"), ("Germans", "German")),  # the form's casing kept
    (("IBM's", "IBM"), ("NASA's", "NASA")),
    (("SMITH", "Smith"), ("JONES", "Jones")),          # title case
    (("happier", "happy"), ("sillier", "silly")),
    (("unhappy", "happy"), ("unkind", "kind")),        # a prefix cut
    (("went", "go"), ("goes", "go")),                  # nothing shared: the lemma itself
])
def test_a_class_learned_from_one_word_applies_to_another(learned, unseen):
    assert apply_class(lemma_class(*learned), unseen[0]) == unseen[1]


def test_the_classes_read():
    assert lemma_class("walked", "walk") == "l0:2:0:"
    assert lemma_class("Americans", "American") == "f0:1:0:"
    assert lemma_class("went", "go") == "l=go"
    assert lemma_class("MCDONALD'S", "McDonald")[0] == "k"


@pytest.mark.parametrize("cls", ["l0:5:0:", "l3:3:0:", "", "x0:0:0:", "l0:a:0:", "l-1:0:0:", "<unk>"])
def test_a_class_that_does_not_fit_the_form_gives_the_form(cls):
    assert apply_class(cls, "dogs") == "dogs"


# -- the LEMMA column -------------------------------------------------------------------------

TEXT = ("1\tDogs\tdog\tNOUN\t_\t_\t2\tnsubj\t_\t_\n"
        "2\tbarked\t_\tVERB\t_\t_\t0\troot\t_\t_\n"
        "3\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n")


# -- the lexicon: training lemmas of seen words, classes only where they cut the same strings --

LEXICON_WORDS = [("walked", "VERB", "walk"), ("talked", "VERB", "talk"), ("runs", "VERB", "run"),
                 ("saw", "VERB", "see"), ("saw", "NOUN", "saw"), ("saw", "VERB", "see"), ("mice", "NOUN", "mouse"),
                 ("the", "DET", None)]


def test_a_seen_word_takes_its_training_lemma_by_its_upos_then_by_its_form():
    lexicon = LemmaLexicon.build(LEXICON_WORDS)
    assert lexicon.known("saw", "NOUN") == "saw"
    assert lexicon.known("saw", "VERB") == "see"
    assert lexicon.known("saw", "ADJ") == "see"   # unseen with that UPOS: the form's most frequent
    assert lexicon.known("saw", None) == "see"
    assert lexicon.known("the", "DET") is None    # its lemma was ``_``: nothing learned
    assert lexicon.known("sons", "NOUN") is None


def test_an_unseen_word_takes_the_best_class_that_cut_the_same_strings_in_training():
    lexicon = LemmaLexicon.build(LEXICON_WORDS)
    cut_ed, cut_s = lemma_class("walked", "walk"), lemma_class("runs", "run")
    assert cut_ed == lemma_class("sons", "so")       # two characters cut at the end, whatever they are
    # the tagger ranks cutting two characters first, but training cut only "ed" that way
    assert lexicon.fitting("sons", [cut_ed, cut_s]) == "son"
    assert lexicon.fitting("jumped", [cut_ed, cut_s]) == "jump"
    assert lexicon.fitting("xyz", [cut_ed, cut_s]) is None  # nothing fits: the caller keeps the tagger's best
    assert lexicon.fitting("sons", ["l=mouse"]) is None     # a whole lemma only for the form it came from
    assert lexicon.fitting("MICE", [lemma_class("mice", "mouse")]) == "mouse"
    assert lexicon.fitting("ed", [cut_ed]) is None          # the cut would leave nothing


@pytest.mark.parametrize("cls, form, key", [
    ("l0:2:0:", "Walked", "\ted"), ("f1:0:0:", "xRay", "x\t"), ("l=go", "Went", "=went"), ("u", "x", ""),
    ("lx:y", "word", ""),
])
def test_the_cut_keys(cls, form, key):
    assert cut_key(cls, form) == key


def test_the_lexicon_round_trips_through_plain_data():
    lexicon = LemmaLexicon.build(LEXICON_WORDS)
    back = LemmaLexicon.from_data(json.loads(json.dumps(lexicon.to_data())))
    assert (back.lemmas, back.cuts) == (lexicon.lemmas, lexicon.cuts)


def test_a_sentence_reads_and_writes_its_lemmas():
    sentence = parse_conllu(TEXT)[0]
    assert sentence.lemma == ["dog", None, "."] and sentence.lemmas == ["dog", "_", "."]
    sentence.set_tags({"lemma": [None, "bark", "a b"]})  # CoNLL-U allows spaces in LEMMA
    assert sentence.lemma == [None, "bark", "a b"]
    assert [line.split("\t")[2] for line in sentence.to_conllu().splitlines()[:3]] == ["_", "bark", "a b"]
    with pytest.raises(ValueError, match="control character"):
        sentence.set_tags({"lemma": ["a\tb", None, None]})


# -- evaluation -------------------------------------------------------------------------------

GOLD = ("1\tDogs\tdog\tNOUN\t_\t_\t2\tnsubj\t_\t_\n"
        "2\tbarked\tbark\tVERB\t_\t_\t0\troot\t_\t_\n"
        "3\tloudly\t_\tADV\t_\t_\t2\tadvmod\t_\t_\n"
        "4\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n")
PRED = ("1\tDogs\tDog\tNOUN\t_\t_\t2\tnsubj\t_\t_\n"
        "2\tbarked\tbark\tVERB\t_\t_\t0\troot\t_\t_\n"
        "3\tloudly\tloud\tADV\t_\t_\t2\tadvmod\t_\t_\n"
        "4\t.\t_\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n")
NO_LEMMAS = GOLD.replace("\tdog\t", "\t_\t").replace("\tbark\t", "\t_\t").replace("\t.\t.\t", "\t.\t_\t")


def test_lemma_accuracy_on_gold_words_counts_the_words_with_a_gold_lemma(tmp_path, capsys):
    scores = evaluate(parse_conllu(GOLD), parse_conllu(PRED))
    assert (scores.tagged["lemma"], scores.correct_tags["lemma"]) == (3, 1)  # casing counts; "_" is wrong
    assert evaluate(parse_conllu(GOLD), parse_conllu(GOLD)).tag_accuracy("lemma") == 1.0
    assert evaluate(parse_conllu(NO_LEMMAS), parse_conllu(PRED)).tag_accuracy("lemma") is None
    (tmp_path / "gold.conllu").write_text(GOLD, encoding="utf-8")
    (tmp_path / "pred.conllu").write_text(PRED, encoding="utf-8")
    assert main(["evaluate", str(tmp_path / "gold.conllu"), str(tmp_path / "pred.conllu"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lemma"] == pytest.approx(1 / 3)
    assert main(["evaluate", str(tmp_path / "gold.conllu"), str(tmp_path / "pred.conllu")]) == 0
    assert "Lemmas               33.33  (1/3)" in capsys.readouterr().out


def test_aligned_lemmas_count_a_gold_underscore_as_right(tmp_path, capsys):
    # as conll18_ud_eval.py: "loudly" (gold "_") is right whatever is predicted
    scores = evaluate_aligned(parse_conllu(GOLD), parse_conllu(PRED)).scores["lemma"]
    assert (scores.gold, scores.predicted, scores.correct, scores.aligned) == (4, 4, 2, 4)
    assert "lemma" not in evaluate_aligned(parse_conllu(NO_LEMMAS), parse_conllu(PRED)).scores
    (tmp_path / "gold.conllu").write_text(GOLD, encoding="utf-8")
    (tmp_path / "pred.conllu").write_text(PRED, encoding="utf-8")
    assert main(["evaluate", str(tmp_path / "gold.conllu"), str(tmp_path / "pred.conllu"), "--aligned"]) == 0
    assert "Lemmas            |     50.00 |     50.00 |     50.00 |     50.00" in capsys.readouterr().out
    assert main(["evaluate", str(tmp_path / "gold.conllu"), str(tmp_path / "pred.conllu"), "--aligned",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["lemma"]["f1"] == pytest.approx(0.5)
