"""Tags at parse time: which tags the parser reads, which the joint tagger
predicts, and what is written (``kgparser parse --tags``, ``Parser.parse(..., tags=...)``).

Users rarely have gold tags, and a parser trained on gold tags that silently
reads ``_`` as an unknown tag everywhere loses most of its accuracy (LAS 3.0
on the EWT sample's dev file), so the tags are handled explicitly:

``auto`` (the default)
    The input's tags where a word has them, the joint tagger's where it is ``_``.
``input``
    The input's tags only: nothing is predicted or written.
``predict``
    The parser reads the tagger's tags for every word, even where the input
    has some (for a model that reads its own predicted tags).

A column the input fills is never changed: predicted tags are written only
where the input has ``_``.  UPOS, XPOS and LEMMA are missing word by word; FEATS
sentence by sentence, because in UD ``_`` is also the FEATS of a word without
features, so a sentence with some FEATS gives the whole column.  A predicted
lemma is the tagger's edit script applied to the word's form
(:mod:`kgparser.lemma`); the parser never reads lemmas, so ``predict``
changes nothing for them.

A model that reads the input's tags (``model.tag_input: gold``) cannot parse
input without them: when no word has its tag column, parsing stops with
:class:`UntaggedInput`, which says how to train a model that does not need
tags (unless the model was trained with tag dropout, or ``input`` asks to
read the input as it is: then a warning); when some words lack one, a
:class:`TagWarning` says how many.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from ..errors import KgparserError

TAG_MODES = ("auto", "input", "predict")


class UntaggedInput(KgparserError):
    """A model that reads gold tags was given input without them."""


class TagWarning(UserWarning):
    """Some words lack the tags the model reads."""


@dataclass
class TagReport:
    """What the last :meth:`~kgparser.inference.parser.Parser.parse` did with the tags."""

    mode: str = "auto"
    words: int = 0
    #: per column the model reads or predicts: words whose column is ``_`` in the input
    missing: dict = field(default_factory=dict)
    #: per column: words whose ``_`` was replaced by a predicted tag
    predicted: dict = field(default_factory=dict)

    def summary(self) -> str:
        """One line, e.g. ``tags (auto): UPOS predicted for 120 of 120 words``."""
        parts = [f"{column.upper()} predicted for {count} of {self.words} words"
                 for column, count in self.predicted.items() if count]
        parts += [f"{column.upper()} missing for {count} of {self.words} words"
                  for column, count in self.missing.items() if count and not self.predicted.get(column)]
        return f"tags ({self.mode}): " + ("; ".join(parts) or "all taken from the input")

    def merged(self, other: TagReport) -> TagReport:
        """The report of two parses together (of two chunks of one input)."""
        def added(first: dict, second: dict) -> dict:
            return {key: first.get(key, 0) + second.get(key, 0) for key in {**first, **second}}

        return TagReport(self.mode, self.words + other.words, added(self.missing, other.missing),
                         added(self.predicted, other.predicted))


@dataclass
class TagPlan:
    """What the decoder reads and which predicted tags go where (:func:`plan_tags`).
    The tags are predicted in the decoder's own BiLSTM pass
    (``decode(..., with_tags=True)``): the tagger reads layers that do not depend on
    the tags the parser reads, so one pass gives both."""

    #: the sentences the decoder reads: the input itself, or copies holding other tags
    decoder_input: list
    report: TagReport
    #: per predicted column, per sentence, which words get a predicted tag; None: none do
    gaps: dict | None = None

    @property
    def predicts(self) -> bool:
        """Whether the decoder is to predict tags (``decode(..., with_tags=...)``)."""
        return self.gaps is not None

    def fill(self, sentences: list, predicted: list | None) -> TagReport:
        """Write the decoder's ``predicted`` tags (one dict per sentence; None
        when it predicted none) into the gaps; returns the report."""
        if self.gaps is not None:
            assert predicted is not None  # the decoder predicts tags exactly when there are gaps
            for i, (sentence, tags) in enumerate(zip(sentences, predicted)):
                _fill_missing(sentence, tags, {column: masks[i] for column, masks in self.gaps.items()},
                              self.report)
        return self.report


def plan_tags(model, sentences: list, mode: str = "auto") -> TagPlan:
    """Check the input's tags for ``model`` and plan, as ``mode`` says, which the
    decoder reads and which are predicted; see :class:`TagPlan`."""
    _check_mode(model, mode)
    report = TagReport(mode, sum(s.n for s in sentences))
    read = _read_column(model)
    gaps = {column: [_missing(s, column) for s in sentences]
            for column in dict.fromkeys(([read] if read else []) + model.tag_columns)}
    report.missing = {column: sum(map(sum, masks)) for column, masks in gaps.items()}
    if read and not model.network.hierarchical:
        _check_input_tags(model, report, strict=mode != "input")
    if mode == "input" or not model.tag_columns:
        return TagPlan(sentences, report)
    decoder_input = sentences
    if model.network.hierarchical and (mode == "predict" or report.missing[read]):
        assert read is not None  # a hierarchical model reads its tags (the config checks model.pos_dim > 0)
        decoder_input = [_parser_view(s, read, mode) for s in sentences]
    return TagPlan(decoder_input, report, {column: gaps[column] for column in model.tag_columns})


def _check_mode(model, mode: str) -> None:
    if mode not in TAG_MODES:
        raise KgparserError(f"tags: expected one of {', '.join(TAG_MODES)}, got {mode!r}")
    if mode == "predict" and not model.tag_columns:
        raise KgparserError("--tags predict: this model has no tagger (train one with model.tagger.upos: true)")


def _read_column(model) -> str | None:
    """The column the parser's tag embedding reads, or None."""
    return model.config.model.pos if model.network.tag_emb is not None else None


def _missing(sentence, column: str) -> list[bool]:
    """Which words have no ``column`` value (FEATS: all or none, see the module docstring)."""
    values = getattr(sentence, column)
    if column == "feats":
        return [not any(values)] * sentence.n
    return [value is None for value in values]


def _check_input_tags(model, report: TagReport, strict: bool) -> None:
    """A model that reads the input's tags: stop when no word has one, unless it
    was trained with tag dropout or not ``strict``; warn when some lack one."""
    cfg = model.config.model
    column, missing = cfg.pos, report.missing[cfg.pos]
    if not missing:
        return
    if missing == report.words and strict and not cfg.pos_dropout:
        raise UntaggedInput(
            f"the input has no {column.upper()} tags (the column is '_' for all {missing} words), and this model "
            f"was trained to read gold {column.upper()} (model.tag_input: gold) without a tagger for it, so it "
            f"would parse badly; give it tagged input, or train a model that tags for itself: "
            f"model.tagger.{column}: true with model.tag_input: predicted (as configs/quickstart.yaml does), "
            f"or one that reads no tags: model.pos_dim: 0 (--tags input parses with unknown tags anyway)")
    warnings.warn(f"{missing} of {report.words} words have no {column.upper()} tag; the model reads them "
                  f"as unknown tags", TagWarning, stacklevel=4)


def _parser_view(sentence, column: str, mode: str):
    """A copy of ``sentence`` whose ``column`` holds the tags the parser is to read:
    the input's (``auto``; None, which the model predicts, where missing) or none
    (``predict``)."""
    view = sentence.copy()
    if mode == "predict":
        setattr(view, column, [None] * sentence.n)
    return view


def _fill_missing(sentence, predicted: dict[str, list[str]], gaps: dict[str, list[bool]],
                  report: TagReport) -> None:
    """Write the predicted tags of ``sentence`` where its columns have ``gaps``."""
    filled = {}
    for column, missing in gaps.items():
        if any(missing):
            values = zip(getattr(sentence, column), predicted[column], missing)
            filled[column] = [new if gap else old for old, new, gap in values]
            report.predicted[column] = report.predicted.get(column, 0) + sum(missing)
    sentence.set_tags(filled)
