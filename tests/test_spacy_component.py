"""The spaCy component: found through the entry point, trees and sentences
consistent on a blank pipeline, tags set and tags given kept, ``nlp.pipe`` in
batches, and a pipeline saved and loaded without the original checkpoint."""
import subprocess
import sys

import pytest
from rawtext_models import save_tiny_model
from test_model import IGNORE_TINY_MODEL_WARNINGS

spacy = pytest.importorskip("spacy")
pytestmark = IGNORE_TINY_MODEL_WARNINGS

TEXT = "  The cat sleeps on the mat.  It dreams\n\nof mice and birds. Then it wakes up!"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return str(save_tiny_model(tmp_path_factory.mktemp("component") / "model.pt"))


@pytest.fixture
def nlp(model):
    import kgparser.inference.spacy_component  # noqa: F401 (the subprocess test checks the entry point)

    nlp = spacy.blank("en")
    nlp.add_pipe("kgparser", config={"model": model})
    return nlp


def trees(doc):
    return [(t.head.i, t.dep_, t.pos_, t.tag_, str(t.morph)) for t in doc]


def assert_trees_match_sentences(doc):
    """Each sentence holds one root, and every head lies in the word's sentence."""
    assert doc.has_annotation("DEP")
    for sentence in doc.sents:
        assert sum(token.head == token for token in sentence) == 1
        assert all(sentence.start <= token.head.i < sentence.end for token in sentence)


def test_the_entry_point_registers_the_factory(model):
    code = ("import spacy; nlp = spacy.blank('en'); "
            f"nlp.add_pipe('kgparser', config={{'model': {model!r}}}); "
            "print(len(list(nlp('A cat. A dog.').sents)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"


def test_a_blank_pipeline_gets_trees_tags_and_sentences(nlp):
    doc = nlp(TEXT)
    assert_trees_match_sentences(doc)
    assert [s.text.strip() for s in doc.sents] == ["The cat sleeps on the mat.", "It dreams\n\nof mice and birds.",
                                                   "Then it wakes up!"]
    words = [t for t in doc if not t.is_space]
    assert all(t.pos_ in ("NOUN", "VERB", "DET") and t.tag_ in ("NN", "VB", "DT") for t in words)
    assert all(t.dep_ and t.dep_ != "ROOT" for t in words)
    assert sum(t.dep_ == "root" for t in words) == 3
    for space in (t for t in doc if t.is_space):
        assert space.dep_ == "dep" and not space.head.is_space and space.pos_ == "SPACE"
    assert doc[0].head.i == 1  # leading white space hangs from the first word


def test_given_sentences_and_tags_are_used_and_kept(nlp, monkeypatch):
    component = nlp.get_pipe("kgparser")
    read = []
    parse = component.parser.parse
    monkeypatch.setattr(component.parser, "parse", lambda sentences, **options: read.extend(sentences) or
                        parse(sentences, **options))
    doc = nlp.make_doc("One two three four")
    doc[2].is_sent_start = True
    doc[1].pos_, doc[1].tag_ = "PROPN", "NNP"
    doc[1].set_morph("Number=Plur")
    component(doc)
    assert [s.text for s in doc.sents] == ["One two", "three four"]
    assert (doc[1].pos_, doc[1].tag_, str(doc[1].morph)) == ("PROPN", "NNP", "Number=Plur")
    assert (read[0].upos[1], read[0].xpos[1], read[0].feats[1]) == ("PROPN", "NNP", "Number=Plur")
    assert_trees_match_sentences(doc)


def test_predicted_lemmas_are_set_where_a_token_has_none():
    from kgparser.inference.spacy_component import _set_tags
    from kgparser.io.conllu import parse_conllu

    sentence = parse_conllu("1\tDogs\tdog\t_\t_\t_\t_\t_\t_\t_\n2\tbark\tbark\t_\t_\t_\t_\t_\t_\t_\n"
                            "3\tloud\t_\t_\t_\t_\t_\t_\t_\t_\n\n", require_tree=False)[0]
    doc = spacy.blank("en").make_doc("Dogs bark loud")
    doc[1].lemma_ = "given"
    for i in range(3):
        _set_tags(doc[i], sentence, i)
    assert [t.lemma_ for t in doc] == ["dog", "given", ""]


def test_pipe_parses_documents_in_batches(nlp, monkeypatch):
    component = nlp.get_pipe("kgparser")
    calls = []
    parse = component.parser.parse
    monkeypatch.setattr(component.parser, "parse", lambda sentences, **options: calls.append(len(sentences)) or
                        parse(sentences, **options))
    texts = [f"Sentence {i}. And another {i}." for i in range(5)]
    docs = list(nlp.pipe(texts, batch_size=2))
    assert calls == [4, 4, 2]
    assert [trees(doc) for doc in docs] == [trees(nlp(text)) for text in texts]


def test_saved_and_loaded_without_the_original_checkpoint(tmp_path, model):
    import shutil

    from kgparser.inference.spacy_component import MODEL_FILE

    moved = tmp_path / "model.pt"
    shutil.copyfile(model, moved)
    nlp = spacy.blank("en")
    nlp.add_pipe("kgparser", config={"model": str(moved)})
    expected = trees(nlp(TEXT))
    nlp.to_disk(tmp_path / "pipeline")
    moved.unlink()
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("kgparser").model == str(tmp_path / "pipeline" / "kgparser" / MODEL_FILE)
    assert trees(loaded(TEXT)) == expected
    loaded.to_disk(tmp_path / "pipeline")  # over itself: the copy stays whole
    assert trees(spacy.load(tmp_path / "pipeline")(TEXT)) == expected


def test_a_component_without_a_model_is_one_line():
    import kgparser.inference.spacy_component  # noqa: F401
    from kgparser.errors import KgparserError

    with pytest.raises(KgparserError, match='needs a model: nlp.add_pipe."kgparser"'):
        spacy.blank("en").add_pipe("kgparser")


def test_the_docs_example_runs(model, capsys):
    from doc_blocks import QUICKSTART_MODEL, python_block

    block = python_block("spacy.md", 'add_pipe("kgparser"')
    exec(compile(block.replace(QUICKSTART_MODEL, model), "docs/spacy.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == "['The cat sleeps on the mat.', 'It dreams of mice.']"


def test_pipe_with_two_processes_after_a_parse_in_the_parent(model):
    """Warm: the parent has parsed (torch's thread pool is running) before
    spaCy forks its processes, which then parse on one thread, not hang."""
    code = ("import spacy; nlp = spacy.blank('en'); "
            f"nlp.add_pipe('kgparser', config={{'model': {model!r}}}); "
            "nlp('Warm it up. Now.'); "
            "docs = list(nlp.pipe([f'Text {i}. It has two.' for i in range(40)], n_process=2, batch_size=4)); "
            "print(len(docs), sum(len(list(d.sents)) for d in docs))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "40 80"


def test_control_characters_in_one_document_lose_no_document(nlp):
    texts = ["A cat sleeps.", "A bell\x07rings and\x00 a NUL. Then \x1b[31mred.", "A dog barks."]
    docs = list(nlp.pipe(texts))
    assert [doc.text for doc in docs] == texts
    for doc in docs:
        assert_trees_match_sentences(doc)


@pytest.mark.parametrize("batch_size", [0, -3])
def test_a_bad_batch_size_is_refused_when_the_component_is_made(model, batch_size):
    from kgparser.errors import KgparserError

    with pytest.raises(KgparserError, match=r"^batch_size: must be a whole number >= 1, got "):
        spacy.blank("en").add_pipe("kgparser", config={"model": model, "batch_size": batch_size})
