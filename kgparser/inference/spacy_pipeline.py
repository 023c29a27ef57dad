"""A spaCy pipeline that tokenizes as the treebank does: the model as spaCy's tokenizer.

    from kgparser.inference.spacy_pipeline import spacy_pipeline
    nlp = spacy_pipeline("runs/quickstart/best.pt")   # or an installed model's name
    doc = nlp("I don't know. Nobody does")     # tokens, sentences, tags, lemmas, trees
    nlp.to_disk("my_pipeline"); spacy.load("my_pipeline")

As ``spacy-udpipe`` and ``spacy-stanza`` put UDPipe and Stanza in a spaCy
pipeline, the whole kgparser model runs where spaCy's tokenizer runs: the
text is read as ``kgparser parse --input-format raw`` reads it (the model's
learned tokenizer, sentence splitter and multiword-token expander where it
has one, :mod:`kgparser.tokenize`; else spaCy's rules, with a
:class:`~kgparser.inference.parser.RulesFallback` warning), tagged and
parsed, and the Doc is made from the result: one spaCy token per syntactic
word (``don't`` is ``do`` + ``n't``), with its UPOS, XPOS, FEATS, LEMMA, head
and label, ``doc.sents`` the model's sentences.  White space between tokens
is kept as spaCy keeps it (a space after a token, other white space as
white-space tokens attached to the word before them), so ``doc.text`` is
the text, but where a multiword token's words do not spell it (Greek
``στο`` -> ``σε`` ``το``): there a space separates its words.  Components
added after it (a named-entity recognizer, a ``kgparser`` component would
be redundant) read these tokens.

The tokenizer is registered as ``kgparser.Tokenizer.v1`` (``[nlp.tokenizer]``
in a pipeline's config); ``nlp.to_disk`` copies the checkpoint into the
pipeline's folder (``tokenizer/model.pt``), so ``spacy.load`` needs only the
folder and kgparser installed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import registry

from ..io.conllu import Sentence
from ..io.rawtext import token_layout
from .spacy_component import MODEL_FILE, SPACE_LABEL, copy_model

#: the registered name of the tokenizer (``@tokenizers`` in a pipeline's config)
TOKENIZER_NAME = "kgparser.Tokenizer.v1"


def spacy_pipeline(model: str | Path, *, lang: str | None = None, batch_size: int = 64,
                   tokenizer: str = "auto") -> Language:
    """A blank spaCy pipeline of the model's language (``lang``; ``xx`` where
    spaCy has none) whose tokenizer is the model (see the module docstring);
    ``tokenizer``: which tokenizer reads the text (``auto``, ``model``, ``rules``,
    as ``kgparser parse --tokenizer``)."""
    import spacy

    from .parser import Parser

    parser = Parser.load(model, batch_size=batch_size)
    language = lang or parser.lang or "xx"
    try:
        spacy.util.get_lang_class(language)
    except ImportError:
        language = "xx"
    nlp = spacy.blank(language, config={"nlp": {"tokenizer": {"@tokenizers": TOKENIZER_NAME, "model": str(model),
                                                              "batch_size": batch_size, "tokenizer": tokenizer}}})
    made = nlp.tokenizer
    assert isinstance(made, ModelTokenizer)  # the registered tokenizer of the config above
    made.parser = parser
    return nlp


@registry.tokenizers(TOKENIZER_NAME)
def create_tokenizer(model: str, batch_size: int = 64, tokenizer: str = "auto"):
    """The registered factory: ``model`` a checkpoint path or an installed model's name."""
    def make(nlp: Language) -> ModelTokenizer:
        return ModelTokenizer(nlp.vocab, model, batch_size=batch_size, tokenizer=tokenizer)

    return make


class ModelTokenizer:
    """Text -> a parsed Doc (see the module docstring)."""

    def __init__(self, vocab, model: str | Path, *, batch_size: int = 64, tokenizer: str = "auto"):
        self.vocab = vocab
        self.model = str(model)
        self.batch_size = batch_size
        self.tokenizer = tokenizer
        self._parser = None

    @property
    def parser(self):
        """The :class:`kgparser.Parser`, loaded on first use."""
        if self._parser is None:
            from .parser import Parser

            self._parser = Parser.load(self.model, batch_size=self.batch_size)
        return self._parser

    @parser.setter
    def parser(self, parser) -> None:
        self._parser = parser

    def __call__(self, text: str) -> Doc:
        sentences = self.parser.parse(text, input_format="raw", tokenizer=self.tokenizer)
        if not sentences and text:  # white space alone: one white-space token, as spaCy's tokenizer has it
            return Doc(self.vocab, words=[text], spaces=[False], pos=["SPACE"], tags=["_SP"])
        return doc_of(self.vocab, sentences)

    def pipe(self, texts: Iterable[str], batch_size: int = 1000):
        for text in texts:
            yield self(text)

    def to_disk(self, path: str | Path, exclude: Iterable[str] = ()) -> None:
        copy_model(self.model, Path(path))

    def from_disk(self, path: str | Path, exclude: Iterable[str] = ()) -> ModelTokenizer:
        self.model = str(Path(path) / MODEL_FILE)
        self._parser = None
        return self


def doc_of(vocab, sentences: list[Sentence]) -> Doc:
    """The Doc of parsed sentences read from raw text: their words, the white
    space between their tokens (:func:`kgparser.io.rawtext.token_layout`),
    tags, lemmas and trees."""
    before, layout = token_layout(sentences)
    doc = _Builder()
    if before:
        doc.space(before)
    for sentence, tokens in zip(sentences, layout):
        indices: list[int] = []
        word = 0
        for form, after in tokens:
            count = _word_count(sentence, word + 1)
            forms = sentence.forms[word:word + count]
            spelled = "".join(forms) == form
            for index, word_form in enumerate(forms):
                indices.append(len(doc.words))
                doc.word(word_form, sentence, word + index, space=not spelled and index + 1 < count)
            doc.space(after)
            word += count
        doc.tree(sentence, indices)
    return doc.make(vocab)


def _word_count(sentence: Sentence, first: int) -> int:
    """How many words the token that begins with word ``first`` has."""
    for start, last, _ in sentence.multiword_tokens:
        if start == first:
            return last - start + 1
    return 1


class _Builder:
    """The lists ``Doc(...)`` takes, filled word by word."""

    def __init__(self) -> None:
        self.words: list[str] = []
        self.spaces: list[bool] = []
        self.columns: dict[str, list[str]] = {"pos": [], "tags": [], "morphs": [], "lemmas": [],
                                                        "deps": []}
        self.heads: list[int] = []
        self.starts: list[bool | int | None] = []
        #: the first token whose sentence is not yet known (white space before a sentence's first word)
        self.unplaced = 0

    def word(self, form: str, sentence: Sentence, i: int, space: bool) -> None:
        self._add(form, space, sentence.upos[i] or "", sentence.xpos[i] or "", sentence.feats[i] or "",
                  sentence.lemmas[i] if sentence.lemmas[i] != "_" else "", start=False)

    def space(self, text: str) -> None:
        """The white space after the last word: a space after it, the rest a white-space token."""
        if text.startswith(" ") and self.words and not self.spaces[-1]:
            self.spaces[-1], text = True, text[1:]
        if text:
            self._add(text, False, "SPACE", "_SP", "", text, start=False)
            self.heads[-1] = -1  # attached below, once the sentence's words are known

    def _add(self, form, space, pos, tag, morph, lemma, start) -> None:
        self.words.append(form)
        self.spaces.append(space)
        for name, value in zip(self.columns, (pos, tag, morph, lemma, SPACE_LABEL)):
            self.columns[name].append(value)
        self.heads.append(len(self.heads))
        self.starts.append(start)

    def tree(self, sentence: Sentence, indices: list[int]) -> None:
        """Heads and labels of the sentence's words; its white space hangs from the
        word before it (the sentence's first word where none is)."""
        for d, i in enumerate(indices, start=1):
            head = sentence.heads[d]
            self.heads[i] = i if head == 0 else indices[head - 1]
            self.columns["deps"][i] = sentence.deprels[d] or SPACE_LABEL
        for i in range(self.unplaced, len(self.heads)):
            if self.heads[i] == -1:
                before = [w for w in indices if w < i]
                self.heads[i] = before[-1] if before else indices[0]
        self.unplaced = len(self.heads)
        self.starts[indices[0]] = True

    def make(self, vocab) -> Doc:
        if not self.words:
            return Doc(vocab, words=[])
        columns = self.columns
        return Doc(vocab, words=self.words, spaces=self.spaces, heads=self.heads, sent_starts=self.starts,
                   pos=columns["pos"], tags=columns["tags"], morphs=columns["morphs"], lemmas=columns["lemmas"],
                   deps=columns["deps"])
