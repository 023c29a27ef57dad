"""kgparser as a spaCy pipeline component:

    nlp = spacy.blank("en")                       # or a trained pipeline without its parser
    nlp.add_pipe("kgparser", config={"model": "runs/quickstart/best.pt"})   # or an installed model's name
    doc = nlp("The cat sleeps. It dreams.")       # token.head, dep_, pos_, tag_, morph, lemma_, doc.sents

The factory ``kgparser`` is registered through the ``spacy_factories`` entry
point, so spaCy finds it once kgparser is installed.  The component works
after any tokenizer: it parses the sentences the pipeline already found (a
``sentencizer``, a ``senter``), or splits them itself with spaCy's rule-based
sentencizer, and sets every token's head and label, so that ``doc.sents``
are the trees' sentences.  White-space tokens hang from the word before them
(the first word after them at the start of a sentence) as ``dep``, as
spaCy's own parser attaches them.  Tags the pipeline already set (``pos_``,
``tag_``, ``morph``, ``lemma_``) are kept, the model's tagger fills in the
others (``--tags auto``; ``tags`` in the config).  ``nlp.pipe`` parses
``batch_size`` documents at a time, their sentences in one call; with
``n_process=N``, each process spaCy forks parses on one torch thread.  A
token that holds a control character (a BEL in the text) is parsed with
U+FFFD in its place; the Doc keeps its text.

``nlp.to_disk(DIR)`` copies the checkpoint into the pipeline's folder
(``DIR/kgparser/model.pt``; an installed model package's record beside it,
so that its encoder is found as the package's is), and ``spacy.load(DIR)``
parses with that copy, wherever the original went; the model is loaded when
the first document comes.
"""
from __future__ import annotations

import bisect
import json
import os
from pathlib import Path
from typing import Iterable, Iterator, Optional

import numpy
from spacy.attrs import DEP, HEAD
from spacy.language import Language
from spacy.pipeline import Sentencizer
from spacy.util import minibatch

from ..errors import KgparserError
from ..io.rawtext import build_sentences
from ..tokenize.rules import doc_words
from .options import checked_batch_size

MODEL_FILE = "model.pt"
#: the label of a white-space token's arc
SPACE_LABEL = "dep"


@Language.factory("kgparser", default_config={"model": None, "batch_size": 64, "tags": "auto",
                                              "root_choice": None, "quantize": None})
def make_kgparser(nlp: Language, name: str, model: Optional[str], batch_size: int, tags: str,
                  root_choice: Optional[str], quantize: Optional[bool]) -> KgparserComponent:
    """The ``kgparser`` factory: ``model`` is a checkpoint path (``best.pt``) or
    the name of an installed model package (``kgparser package``)."""
    if not model:
        raise KgparserError('the kgparser component needs a model: nlp.add_pipe("kgparser", '
                            'config={"model": "PATH/best.pt"})')
    return KgparserComponent(name, model, batch_size=batch_size, tags=tags, root_choice=root_choice,
                             quantize=quantize)


class KgparserComponent:
    """Sets heads, labels, tags and sentence starts from a kgparser model."""

    def __init__(self, name: str, model: str | Path, *, batch_size: int = 64, tags: str = "auto",
                 root_choice: str | None = None, quantize: bool | None = None):
        self.name = name
        self.model = str(model)
        self.batch_size = checked_batch_size(batch_size)
        self.tags = tags
        self.root_choice = root_choice
        #: the encoder in int8 or float32 (``Parser.load(..., quantize=...)``); None: as the model was trained
        self.quantize = quantize
        self._parser = None
        self._pid = os.getpid()
        self._sentencizer = Sentencizer()

    def _forked(self) -> None:
        """In a process forked from the one that made the component (``nlp.pipe(...,
        n_process=N)``): parse on one torch thread.  The thread pool the parent
        used did not come along, and a child that asks it for several threads
        waits for them forever; one thread needs none (as PyTorch's own
        DataLoader workers run)."""
        import torch

        torch.set_num_threads(1)
        self._pid = os.getpid()

    @property
    def parser(self):
        """The :class:`kgparser.Parser`, loaded on first use."""
        if self._parser is None:
            from .parser import Parser

            self._parser = Parser.load(self.model, batch_size=self.batch_size, quantize=self.quantize)
        return self._parser

    def __call__(self, doc):
        self._annotate([doc])
        return doc

    def pipe(self, stream: Iterable, batch_size: int | None = None) -> Iterator:
        for docs in minibatch(stream, size=batch_size or self.batch_size):
            self._annotate(docs)
            yield from docs

    def _annotate(self, docs: list) -> None:
        """Parse the sentences of ``docs`` in one call and set what the parse gives."""
        if self._pid != os.getpid():
            self._forked()
        words = [self._words(doc) for doc in docs]
        sentences = [s for doc, sentence_words in zip(docs, words) for s in build_sentences(doc.text, sentence_words)]
        parsed = iter(self.parser.parse(sentences, tags=self.tags, root_choice=self.root_choice))
        for doc, sentence_words in zip(docs, words):
            _set_annotations(doc, sentence_words, [next(parsed) for _ in sentence_words])

    def _words(self, doc) -> list:
        """The words of each sentence of ``doc`` (splitting sentences first where none are set)."""
        if not doc.has_annotation("SENT_START"):
            self._sentencizer(doc)
        return doc_words(doc, tags=True)

    def to_disk(self, path: str | Path, exclude: Iterable[str] = ()) -> None:
        copy_model(self.model, Path(path))

    def from_disk(self, path: str | Path, exclude: Iterable[str] = ()) -> KgparserComponent:
        """Parse with the checkpoint :meth:`to_disk` copied into ``path``."""
        self.model = str(Path(path) / MODEL_FILE)
        self._parser = None
        return self


def copy_model(model: str | Path, folder: Path) -> None:
    """Copy the checkpoint of ``model`` (a path or an installed model's name:
    :func:`~kgparser.model.installed.resolve_model`) into ``folder`` (made if needed)
    as :data:`MODEL_FILE`."""
    from ..io.atomic import atomic_path, write_text
    from ..model.installed import RECORD, resolve_model

    folder.mkdir(parents=True, exist_ok=True)
    files = resolve_model(model)
    data = files.checkpoint.read_bytes()
    with atomic_path(folder / MODEL_FILE) as temporary:
        Path(temporary).write_bytes(data)
    if files.record is not None:  # what else the model needs (its encoder), read where the copy is read
        write_text(folder / RECORD, json.dumps(files.record, indent=2) + "\n")


def _set_annotations(doc, sentence_words: list, parsed: list) -> None:
    """Heads and labels of every token (white space included) and the tags of the words."""
    token_of = {token.idx: token.i for token in doc if not token.is_space}
    heads = numpy.arange(len(doc), dtype="int64")
    labels = [SPACE_LABEL] * len(doc)
    for words, sentence in zip(sentence_words, parsed):
        indices = [token_of[word.start] for word in words]
        for d, i in enumerate(indices, start=1):
            head = sentence.heads[d]
            heads[i] = i if head == 0 else indices[head - 1]
            labels[i] = sentence.deprels[d]
            _set_tags(doc[i], sentence, d - 1)
    _attach_spaces(doc, heads)
    array = numpy.zeros((len(doc), 2), dtype="uint64")
    array[:, 0] = (heads - numpy.arange(len(doc))).view("uint64")
    array[:, 1] = [doc.vocab.strings.add(label) for label in labels]
    doc.from_array([HEAD, DEP], array)


def _attach_spaces(doc, heads) -> None:
    """A white-space token's head: the word before it in its sentence, else the first word after it."""
    words = [token.i for token in doc if not token.is_space]
    for token in doc:
        if not token.is_space or not words:
            continue
        before = bisect.bisect(words, token.i)
        in_sentence = before and words[before - 1] >= token.sent.start
        heads[token.i] = words[before - 1] if in_sentence else words[min(before, len(words) - 1)]
        if not token.pos_:
            token.pos_ = "SPACE"


def _set_tags(token, sentence, i: int) -> None:
    """Write the tags the parse gives where the token has none (kgparser never changes given ones)."""
    upos, xpos, feats = sentence.upos[i], sentence.xpos[i], sentence.feats[i]
    if upos and not token.pos_:
        try:
            token.pos_ = upos
        except ValueError:
            raise KgparserError(f"the model predicts the UPOS {upos!r}, which spaCy does not know "
                                f"(token.pos_ takes Universal Dependencies tags only)") from None
    if xpos and not token.tag_:
        token.tag_ = xpos
    if feats and not str(token.morph):
        token.set_morph(feats)
    lemma = sentence.lemmas[i]
    if lemma != "_" and not token.lemma_:
        token.lemma_ = lemma
