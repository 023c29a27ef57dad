"""A spaCy pipeline whose tokenizer is the model (issue 48, item 4): the
model's tokens, multiword tokens' words, sentences, tags and trees in the
Doc; the text kept; saved and loaded by spaCy without kgparser imported
first; white space and empty text."""
import shutil
import subprocess
import sys

import pytest
from test_model import IGNORE_TINY_MODEL_WARNINGS
from test_tokenizer_in_model import TEXT, tokenizer, with_tokenizer  # noqa: F401 (fixtures)

from kgparser.inference.parser import Parser
from kgparser.io.conllu import parse_conllu

spacy = pytest.importorskip("spacy")
pytestmark = IGNORE_TINY_MODEL_WARNINGS


@pytest.fixture
def nlp(with_tokenizer):  # noqa: F811 (a fixture)
    from kgparser.inference.spacy_pipeline import spacy_pipeline

    return spacy_pipeline(with_tokenizer)


def annotations(doc) -> list[tuple]:
    return [(t.text, t.whitespace_, t.pos_, t.tag_, str(t.morph), t.lemma_, t.dep_, t.head.i, t.is_sent_start)
            for t in doc]


def test_the_doc_holds_the_models_words_sentences_and_trees(nlp, with_tokenizer):  # noqa: F811
    doc = nlp(TEXT)
    assert doc.text == TEXT and nlp.lang == "en"
    parsed = Parser.load(with_tokenizer).parse(TEXT, input_format="raw")
    words = [t for t in doc if not t.is_space]
    assert [t.text for t in words] == [form for s in parsed for form in s.forms]
    assert [t.text for t in doc[8:11]] == ["likes", "cow", "ya"] and doc[9].whitespace_ == ""
    assert [s.text.strip() for s in doc.sents] == [s.text for s in parsed]
    position = {t.i: n for n, t in enumerate(words)}  # a word's place among the words, white space left out
    starts = [sum(s.n for s in parsed[:i]) for i in range(len(parsed))]
    assert [(position[t.head.i], t.dep_) for t in words] == [
        (start + (h - 1 if h else d - 1), s.deprels[d]) for s, start in zip(parsed, starts)
        for d, h in enumerate(s.heads[1:], start=1)]
    assert all(t.pos_ == s.upos[i] for t, (s, i) in zip(words, ((s, i) for s in parsed for i in range(s.n))))
    assert [t.text for t in doc if t.is_space] == ["\n\n"] and doc[[t.is_space for t in doc].index(True)].pos_ == \
        "SPACE"


def test_saved_and_loaded_by_spacy_alone(nlp, tmp_path):
    nlp.to_disk(tmp_path / "pipeline")
    moved = tmp_path / "elsewhere.pt"
    shutil.copy(nlp.tokenizer.model, moved)  # the saved pipeline does not need the original checkpoint
    code = ("import spacy; nlp = spacy.load(sys.argv[1]); doc = nlp(sys.argv[2]); "
            "print('|'.join(t.text + '/' + t.dep_ for t in doc))")
    done = subprocess.run([sys.executable, "-c", "import sys; " + code, str(tmp_path / "pipeline"), TEXT],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "|".join(t.text + "/" + t.dep_ for t in nlp(TEXT))


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t"])
def test_white_space_and_empty_text(nlp, text):
    doc = nlp(text)
    assert doc.text == text
    assert all(t.pos_ == "SPACE" for t in doc)


def test_words_that_do_not_spell_their_token_are_spaced():
    from kgparser.inference.spacy_pipeline import doc_of

    [sentence] = parse_conllu("# newpar\n1-2\tστο\t_\t_\t_\t_\t_\t_\t_\t_\n1\tσε\tσε\tADP\t_\t_\t3\tcase\t_\t_\n"
                              "2\tτο\tο\tDET\t_\t_\t3\tdet\t_\t_\n3\tσπίτι\tσπίτι\tNOUN\t_\t_\t0\troot\t_\t"
                              "SpaceAfter=No\n4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\tSpacesAfter=\\n\n\n")
    doc = doc_of(spacy.blank("xx").vocab, [sentence])
    assert doc.text == "σε το σπίτι.\n"
    assert annotations(doc) == [
        ("σε", " ", "ADP", "", "", "σε", "case", 2, True), ("το", " ", "DET", "", "", "ο", "det", 2, False),
        ("σπίτι", "", "NOUN", "", "", "σπίτι", "root", 2, False), (".", "", "PUNCT", "", "", ".", "punct", 2, False),
        ("\n", "", "SPACE", "_SP", "", "\n", "dep", 3, False)]


def test_the_docs_example_runs(with_tokenizer, capsys):  # noqa: F811
    from doc_blocks import QUICKSTART_MODEL, python_block

    block = python_block("spacy.md", "spacy_pipeline(")
    exec(compile(block.replace(QUICKSTART_MODEL, str(with_tokenizer)), "docs/spacy.md", "exec"), {})
    [printed] = capsys.readouterr().out.splitlines()
    assert printed.startswith("[('I', ")
