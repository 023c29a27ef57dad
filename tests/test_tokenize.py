"""The learned tokenizer (:mod:`kgparser.tokenize`): trained on a tiny
synthetic treebank it splits sentences that end without punctuation, tokens
without spaces between them and multiword tokens, seen and unseen; the text
rebuilds exactly from its output; plain-data round trip; a paragraph whole
or in the reader's windows; empty and odd input."""
from __future__ import annotations

import random
import re

import pytest
import torch

from kgparser.io.conllu import parse_conllu, read_conllu, sample_data_path
from kgparser.io.rawtext import build_sentences, text_of
from kgparser.tokenize.data import INSIDE, MWT_END, OUTSIDE, SENTENCE_END, TOKEN_END, labelled_text
from kgparser.tokenize.model import Tokenizer, TokenizerConfig
from kgparser.tokenize.mwt import MultiwordExpander
from kgparser.tokenize.train import train_tokenizer

NOUNS = ["cat", "dog", "bird", "cow", "fish", "rice"]
VERBS = ["eats", "sees", "likes", "finds"]
#: nouns never written with the clitic ``ya`` in training: it must be split by the learned rule
UNSEEN_WITH_CLITIC = {"fish"}


def synthetic_sentence(rng: random.Random, number: int) -> str:
    """A CoNLL-U sentence: ``the NOUN VERB (the NOUN | NOUNya) (amen | .)``; ``NOUNya`` is a
    multiword token (``NOUN`` ``ya``), ``amen`` ends a sentence without punctuation."""
    tokens = [("the", ()), (rng.choice(NOUNS), ()), (rng.choice(VERBS), ())]
    noun = rng.choice(NOUNS)
    if rng.random() < 0.4 and noun not in UNSEEN_WITH_CLITIC:
        tokens.append((noun + "ya", (noun, "ya")))
    else:
        tokens += [("a", ()), (noun, ())]
    tokens.append(("amen", ()) if rng.random() < 0.5 else (".", ()))
    rows = ["# newpar"] if number % 4 == 0 else []
    rows.append(f"# sent_id = {number}")
    word = 1
    for index, (form, words) in enumerate(tokens):
        glued = index + 1 < len(tokens) and tokens[index + 1][0] == "."
        misc = "SpaceAfter=No" if glued else "_"
        if words:
            rows.append(f"{word}-{word + len(words) - 1}\t{form}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
            rows += [f"{word + i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_" for i, w in enumerate(words)]
            word += len(words)
        else:
            rows.append(f"{word}\t{form}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
            word += 1
    return "\n".join(rows) + "\n\n"


def synthetic_treebank(count: int, seed: int):
    rng = random.Random(seed)
    return parse_conllu("".join(synthetic_sentence(rng, n) for n in range(count)), require_tree=False)


TINY = TokenizerConfig(char_dim=16, class_dim=4, hidden=32, window=64, context=16, learning_rate=0.01,
                       batch=16, epochs=25, patience=25, dropout=0.0, epoch_characters=0)


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    torch.set_num_threads(1)
    return train_tokenizer(synthetic_treebank(300, 1), synthetic_treebank(40, 2), TINY, report=lambda epoch: None)


def _forms(sentences) -> list[list[object]]:
    return [[w.words or w.form for w in sentence] for sentence in sentences]


def test_it_learns_sentences_without_punctuation_tokens_and_multiword_tokens(tokenizer):
    text = "the cat sees a dog amen the bird likes cowya. the cow eats fishya amen the dog finds a rice."
    assert _forms(tokenizer.segment([text])[0]) == [
        ["the", "cat", "sees", "a", "dog", "amen"],
        ["the", "bird", "likes", ("cow", "ya"), "."],  # a multiword token seen in training
        ["the", "cow", "eats", ("fish", "ya"), "amen"],  # unseen: split by the learned suffix rule
        ["the", "dog", "finds", "a", "rice", "."]]


def test_spacys_rules_split_neither_those_sentences_nor_that_multiword_token():
    pytest.importorskip("spacy")
    from kgparser.tokenize.rules import raw_sentences

    [sentence] = raw_sentences("the cat sees a dog amen the cow eats fishya amen", "en")
    assert "fishya" in sentence.forms and not sentence.multiword_tokens


def test_the_text_rebuilds_exactly_from_the_output(tokenizer):
    paragraphs = ["the cat sees a dog amen  the bird likes cowya.\tthe cow eats fishya\namen", "the cow.", "x"]
    for text, sentences in zip(paragraphs, tokenizer.segment(paragraphs)):
        built = build_sentences(text, sentences, [0])
        reread = parse_conllu("".join(s.to_conllu() for s in built), require_tree=False)
        assert text_of(reread) == text
        for sentence in sentences:
            for word in sentence:
                assert text[word.start:word.end] == word.form and not any(c.isspace() for c in word.form)


def test_plain_data_round_trip(tokenizer, tmp_path):
    torch.save(tokenizer.to_data(), tmp_path / "tokenizer.pt")
    loaded = Tokenizer.from_data(torch.load(tmp_path / "tokenizer.pt", weights_only=True), tokenizer.config)
    paragraphs = ["the cat sees a dog amen the bird likes cowya. the cow", "fishya amen"]
    assert loaded.segment(paragraphs) == tokenizer.segment(paragraphs)
    assert loaded.config == tokenizer.config


def test_output_does_not_depend_on_what_else_is_segmented(tokenizer):
    paragraphs = ["the cat sees a dog amen the bird likes cowya.", "the cow " * 50, "a"]
    together = tokenizer.segment(paragraphs)
    assert together == [tokenizer.segment([p])[0] for p in paragraphs]
    assert tokenizer.segment(paragraphs) == together


def test_each_paragraph_ends_with_a_token_that_ends_a_sentence(tokenizer):
    paragraphs = ["the cat sees the", "dog eats a ri", "ce amen the", "cow"]
    result = tokenizer.segment(paragraphs, offsets=[0, 100, 200, 300])
    assert [s[-1][-1].form for s in result] == ["the", "ri", "the", "cow"]
    assert [s[-1][-1].end for s in result] == [16, 113, 211, 303]
    assert _forms(result[2]) == [["ce", "amen"], ["the"]]


def reader_windows(tokenizer: Tokenizer, text: str, window: int) -> list[list[tuple[int, int]]]:
    """The sentences of one paragraph as :class:`kgparser.io.rawtext.RawReader`
    reads a long one: windows that end at the last white space, the last
    sentence of each read again at the start of the next."""
    sentences, start = [], 0
    while start < len(text):
        if len(text) - start <= window:
            cut = len(text)
        else:
            cut = text.rindex(" ", start, start + window)
        found = [[(w.start + start, w.end + start) for w in s] for s in tokenizer.segment([text[start:cut]])[0]]
        if cut == len(text):
            return sentences + found
        sentences += found[:-1]
        start = found[-1][0][0]
    return sentences


def test_a_paragraph_whole_or_in_windows_gives_the_same_sentences(tokenizer):
    text = " ".join(labelled_text(synthetic_treebank(60, 7)).text.split())
    assert len(text) > 1000
    whole = [[(w.start, w.end) for w in s] for s in tokenizer.segment([text])[0]]
    assert len(whole) > 40
    assert reader_windows(tokenizer, text, 300) == whole


@pytest.mark.parametrize("text", ["", " ", " \n\t\r\n ", "\x00\x07\x1b\x7f", "\x00the\x07cat amen\x1b", "\ud800x",
                                  "\u2028the\u00a0cow\u3000"])
def test_empty_white_space_and_control_characters(tokenizer, text):
    [sentences] = tokenizer.segment([text])
    for sentence in sentences:
        assert sentence
        for word in sentence:
            assert word.form == text[word.start:word.end] and word.form.encode("utf-8")
            assert not re.search(r"[\s\x00-\x1f\x7f-\x9f]", word.form)
    if not text.strip("\x00\x07\x1b\x7f \n\t\r\u2028\u00a0\u3000"):
        assert sentences == []
    if sentences:
        built = build_sentences(text, sentences)
        assert text_of(parse_conllu("".join(s.to_conllu() for s in built), require_tree=False)) == text
    assert tokenizer.segment([]) == []


def test_labels_and_running_text_of_a_treebank():
    treebank = read_conllu(sample_data_path("train"))
    data = labelled_text(treebank)
    assert data.text == text_of(treebank)
    assert len(data.labels) == len(data.text)
    assert all(data.text[t.start:t.end] and not data.text[t.start:t.end].isspace() for t in data.tokens)
    assert [form for form, _ in data.forms_and_words] == [data.text[t.start:t.end] for t in data.tokens]
    assert any(len(words) > 1 for _, words in data.forms_and_words)
    [sentence] = parse_conllu("1\tA\t_\t_\t_\t_\t_\t_\t_\t_\n2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
                              "2\tdo\t_\t_\t_\t_\t_\t_\t_\t_\n3\tn't\t_\t_\t_\t_\t_\t_\t_\t_\n"
                              "4\t.\t_\t_\t_\t_\t_\t_\t_\t_\n\n", require_tree=False)
    one = labelled_text([sentence])
    assert one.text == "A don't. "
    assert one.labels.tolist() == [TOKEN_END, OUTSIDE, INSIDE, INSIDE, INSIDE, INSIDE, MWT_END, SENTENCE_END,
                                   OUTSIDE]


def test_multiword_expander_seen_unseen_and_case():
    expander = MultiwordExpander.learn([("don't", ("do", "n't")), ("Don't", ("Do", "n't")), ("στο", ("σε", "το")),
                                        ("yoktu", ("yok", "tu")), ("vardı", ("var", "dı")),
                                        ("vardı", ("var", "dı")), ("στη", ("σε", "τη")), ("vardı", ("vardı",)),
                                        ("yok", ("yok",)), ("yok", ("yok",))])
    assert expander.expand("don't") == ("do", "n't")
    assert expander.expand("DON'T") == ("DO", "N'T")
    assert expander.expand("Στο") == ("Σε", "το")
    assert expander.expand("won't") == ("wo", "n't")  # by the suffix rule learned from don't
    assert expander.expand("çoktu") == ("çok", "tu")
    assert expander.expand("xyz") == ("xyz",)
    assert expander.is_multiword("Vardı", False) and not expander.is_multiword("yok", True)
    assert expander.is_multiword("unseen", True) and not expander.is_multiword("unseen", False)
    again = MultiwordExpander.from_data(expander.to_data())
    assert again.expand("won't") == ("wo", "n't") and again.expand("Don't") == ("Do", "n't")
    assert again.to_data() == expander.to_data()


def test_no_epoch_is_one_line():
    from kgparser.errors import KgparserError

    with pytest.raises(KgparserError, match="^tokenizer epochs: must be at least 1, got 0$"):
        train_tokenizer(parse_conllu("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n\n"), config=TokenizerConfig(epochs=0))
