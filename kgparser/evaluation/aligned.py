"""Scores of a parse whose words differ from the gold words (a parse of raw
text), as the CoNLL 2018 shared task's ``conll18_ud_eval.py`` computes them.

Both files must hold the same text, white space aside: the characters of
their tokens (multiword tokens as written, spaces inside a form removed), in
order.  Tokens, sentences and words are spans of these characters:

* ``tokens`` and ``sentences``: a span of the prediction is right when a gold
  span has the same start and end (precision over the predicted spans,
  recall over the gold ones, F1).
* ``words``: the words are aligned; outside multiword tokens a predicted word
  is aligned to the gold word of the same span; in a stretch of text that
  either side splits into a multiword token, the words are aligned by the
  longest common subsequence of their lower-cased forms.  Precision =
  aligned / predicted words, recall = aligned / gold words.
* ``upos``, ``xpos``, ``ufeats`` (universal features), ``uas``, ``las`` (HEAD and
  full DEPREL), ``las_universal`` (HEAD and DEPREL without subtype: the shared
  task's LAS): an aligned word is right when its value is the gold word's; a
  head is right when the predicted head is aligned to the gold head (or both
  are the root).  Precision and recall over all predicted and gold words, so
  a word that is not aligned counts as wrong; ``aligned_accuracy`` over the
  aligned words only.  ``lemma`` (the shared task's Lemmas): an aligned word
  is right when its LEMMA is the gold word's, or the gold LEMMA is ``_``, as
  the shared task's scorer has it.  ``xpos``, ``ufeats`` and ``lemma`` are
  reported where the gold file has them.

When the two files have the same words these are the gold-tokenization
scores of :mod:`kgparser.evaluation.scores` (precision = recall = F1 = accuracy).

Sentence by sentence (:func:`sentence_counts`, the terms of a paired test of
two parses of the same text, :func:`compare_aligned`): the unit is the gold
sentence.  For each metric, each gold sentence counts its gold items (tokens,
sentences or words), the predicted items that start in it (their first
character, white space removed, lies in the gold sentence's characters) and
the right ones (counted in the gold item's sentence).  The counts sum to those
of :func:`evaluate_aligned`, and F1 = 2 * correct / (gold + predicted) is a
ratio of sums over the gold sentences: correct / ((gold + predicted) / 2).
"""
from __future__ import annotations

import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

from ..io.conllu import Sentence
from .scores import PRF, EvaluationError, features, universal_label

if TYPE_CHECKING:
    from ..experiments.significance import PairedResult

#: the head of a root word, and of a word without a HEAD (``_``: never right)
ROOT, NO_HEAD = -1, -2
#: the aligned scores, in the order they are reported
WORD_METRICS = ("upos", "xpos", "ufeats", "lemma", "uas", "las", "las_universal")
#: the word scores reported only where the gold file has the column
_OPTIONAL = ("xpos", "ufeats", "lemma")
#: each metric's name in the report
NAMES = {"tokens": "Tokens", "sentences": "Sentences", "words": "Words", "upos": "UPOS", "xpos": "XPOS",
         "ufeats": "UFeats", "lemma": "Lemmas", "uas": "UAS", "las": "LAS (full labels)",
         "las_universal": "LAS (universal)"}


@dataclass(frozen=True)
class Word:
    """A word of a file: the character span of its token, whether that token
    is a multiword token, its form, columns and head (an index into the
    file's words, :data:`ROOT` or :data:`NO_HEAD`)."""

    start: int
    end: int
    multiword: bool
    form: str
    head: int
    columns: dict = field(compare=False)


@dataclass
class Text:
    """A file as character spans: ``characters`` of its tokens, their
    ``tokens`` and ``sentences`` as ``(start, end)``, and its ``words``."""

    characters: list[str] = field(default_factory=list)
    tokens: list[tuple[int, int]] = field(default_factory=list)
    sentences: list[tuple[int, int]] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)

    @classmethod
    def of(cls, sentences: Sequence[Sentence]) -> Text:
        text = cls()
        for sentence in sentences:
            text._add(sentence)
        return text

    def _add(self, sentence: Sentence) -> None:
        start, offset = len(self.characters), len(self.words)
        multiword = {first: (last, form) for first, last, form in sentence.multiword_tokens}
        d = 1
        while d <= sentence.n:
            last, form = multiword.get(d, (d, sentence.forms[d - 1]))
            form = _without_spaces(form)
            span = (len(self.characters), len(self.characters) + len(form))
            self.characters += form
            self.tokens.append(span)
            self.words += [_word(sentence, w, span, last > d, offset) for w in range(d, last + 1)]
            d = last + 1
        self.sentences.append((start, len(self.characters)))


def _without_spaces(form: str) -> str:
    """A form without its space characters (Unicode category Zs), as the shared task compares them."""
    return "".join(c for c in form if unicodedata.category(c) != "Zs")


def _word(sentence: Sentence, d: int, span: tuple[int, int], multiword: bool, offset: int) -> Word:
    head = sentence.heads[d]
    form = sentence.forms[d - 1] if multiword else _without_spaces(sentence.forms[d - 1])
    columns = {"upos": sentence.upos[d - 1], "xpos": sentence.xpos[d - 1],
               "ufeats": features(sentence.feats[d - 1], universal=True),
               "lemma": None if sentence.lemmas[d - 1] == "_" else sentence.lemmas[d - 1],
               "deprel": sentence.deprels[d], "universal": universal_label(sentence.deprels[d])}
    return Word(span[0], span[1], multiword, form.lower(),
                ROOT if head == 0 else NO_HEAD if head < 0 else offset + head - 1, columns)


@dataclass
class Score(PRF):
    """One row of the report: gold, predicted and right counts, and for a word
    score the aligned words."""

    aligned: int | None = None

    @property
    def aligned_accuracy(self) -> float | None:
        return None if self.aligned is None else self.correct / self.aligned if self.aligned else 0.0

    def to_dict(self) -> dict:
        return {**super().to_dict(), "aligned_accuracy": self.aligned_accuracy}


@dataclass
class AlignedScores:
    """Result of :func:`evaluate_aligned`: a :class:`Score` per metric, in report order."""

    scores: dict[str, Score]

    def to_dict(self) -> dict:
        return {"aligned": True, **{name: score.to_dict() for name, score in self.scores.items()}}

    def format(self) -> str:
        """The shared task's table (percentages)."""
        lines = [f"{'Metric':<18}| Precision |    Recall |  F1 Score | AligndAcc", f"{'-' * 18}+" + "+".join(
            ["-" * 11] * 4)]
        for name, score in self.scores.items():
            aligned = score.aligned_accuracy
            lines.append(f"{NAMES[name]:<18}|{100 * score.precision:10.2f} |{100 * score.recall:10.2f} |"
                         f"{100 * score.f1:10.2f} |" + (f"{100 * aligned:10.2f}" if aligned is not None else ""))
        return "\n".join(lines)


def same_words(gold: Sequence[Sentence], pred: Sequence[Sentence]) -> bool:
    """Whether the files have the same sentences of the same words (then
    :func:`kgparser.evaluation.scores.evaluate` scores them word by word)."""
    return len(gold) == len(pred) and all(g.forms == p.forms for g, p in zip(gold, pred))


def same_text(gold: Sequence[Sentence], pred: Sequence[Sentence]) -> bool:
    """Whether the files hold the same text, white space aside (then :func:`evaluate_aligned` scores them)."""
    return Text.of(gold).characters == Text.of(pred).characters


def evaluate_aligned(gold: Sequence[Sentence], pred: Sequence[Sentence], gold_name: str = "gold",
                     pred_name: str = "prediction") -> AlignedScores:
    """Score ``pred`` against ``gold`` through the character alignment (see the module docstring)."""
    gold_text, pred_text, pairs, metrics = _aligned(gold, pred, gold_name, pred_name)
    scores = {"tokens": spans_score(gold_text.tokens, pred_text.tokens),
              "sentences": spans_score(gold_text.sentences, pred_text.sentences),
              "words": Score(len(gold_text.words), len(pred_text.words), len(pairs))}
    for metric in metrics:
        right = sum(_right(metric, gold_text.words, pred_text.words, g, p, pairs) for g, p in pairs.items())
        scores[metric] = Score(len(gold_text.words), len(pred_text.words), right, len(pairs))
    return AlignedScores(scores)


def _aligned(gold: Sequence[Sentence], pred: Sequence[Sentence], gold_name: str,
             pred_name: str) -> tuple[Text, Text, Alignment, list[str]]:
    """Both files as :class:`Text` (checked to hold the same text), their word
    alignment and the word metrics reported (those of :data:`WORD_METRICS` the gold file has)."""
    gold_text, pred_text = Text.of(gold), Text.of(pred)
    _check_same_text(gold_text.characters, pred_text.characters, gold_name, pred_name)
    tagged = {column for column in _OPTIONAL if any(w.columns[column] for w in gold_text.words)}
    metrics = [metric for metric in WORD_METRICS if metric not in _OPTIONAL or metric in tagged]
    return gold_text, pred_text, align_words(gold_text.words, pred_text.words), metrics


@dataclass
class SentenceCounts:
    """One metric's counts per gold sentence: ``gold`` items, ``predicted``
    items starting in it and ``correct`` ones (see the module docstring)."""

    gold: list[int]
    predicted: list[int]
    correct: list[int]

    @property
    def halves(self) -> list[float]:
        """``(gold + predicted) / 2`` per sentence: F1 = sum(correct) / sum(halves)."""
        return [(g + p) / 2 for g, p in zip(self.gold, self.predicted)]

    def total(self) -> PRF:
        return PRF(sum(self.gold), sum(self.predicted), sum(self.correct))


def sentence_counts(gold: Sequence[Sentence], pred: Sequence[Sentence], gold_name: str = "gold",
                    pred_name: str = "prediction") -> dict[str, SentenceCounts]:
    """Each metric of :func:`evaluate_aligned`'s report, counted per gold
    sentence (see the module docstring); an item belongs to the gold sentence
    holding its first character."""
    gold_text, pred_text, pairs, metrics = _aligned(gold, pred, gold_name, pred_name)
    starts = [start for start, _ in gold_text.sentences]
    units = max(1, len(starts))  # an empty gold file: one (empty) unit

    def sentence_of(character: int) -> int:
        return min(max(bisect_right(starts, character) - 1, 0), units - 1)

    def counts(gold_starts, pred_starts, correct_starts) -> SentenceCounts:
        columns = [[0] * units for _ in range(3)]
        for column, positions in zip(columns, (gold_starts, pred_starts, correct_starts)):
            for position in positions:
                column[sentence_of(position)] += 1
        return SentenceCounts(*columns)

    gold_words = [word.start for word in gold_text.words]
    pred_words = [word.start for word in pred_text.words]
    result = {name: counts([s for s, _ in gold_spans], [s for s, _ in pred_spans],
                           [gold_spans[g][0] for g in matched_spans(gold_spans, pred_spans)])
              for name, gold_spans, pred_spans in (("tokens", gold_text.tokens, pred_text.tokens),
                                                   ("sentences", gold_text.sentences, pred_text.sentences))}
    result["words"] = counts(gold_words, pred_words, [gold_words[g] for g in pairs])
    for metric in metrics:
        right = [gold_words[g] for g, p in pairs.items() if _right(metric, gold_text.words, pred_text.words, g, p,
                                                                    pairs)]
        result[metric] = counts(gold_words, pred_words, right)
    return {name: result[name] for name in ("tokens", "sentences", "words", *metrics)}


def compare_aligned(gold: Sequence[Sentence], pred_a: Sequence[Sentence], pred_b: Sequence[Sentence], *,
                    names: tuple[str, str, str] = ("gold", "prediction", "second prediction"),
                    test: str = "bootstrap", samples: int = 10_000) -> dict[str, PairedResult]:
    """The F1 of each metric of the aligned report for two parses of the gold
    text, each difference (``b - a``) with a paired significance test
    (:mod:`kgparser.experiments.significance`) over the gold sentences; ``names``:
    the three files, for the error where a parse holds another text."""
    return compare_seeds(gold, [pred_a], [pred_b], names=(names[0], [names[1]], [names[2]]), test=test,
                         samples=samples)


def compare_seeds(gold: Sequence[Sentence], preds_a: Sequence[Sequence[Sentence]],
                  preds_b: Sequence[Sequence[Sentence]], *,
                  names: tuple[str, Sequence[str], Sequence[str]] | None = None, test: str = "bootstrap",
                  samples: int = 10_000) -> dict[str, PairedResult]:
    """:func:`compare_aligned` of A and B over several seeds (parse ``s`` of A
    beside parse ``s`` of B), pooled as a study pools them (``report.seeds:
    pooled``, docs/experiments.md): each gold sentence's counts are summed over
    the seeds, so the scores are the pooled F1 and a resampled sentence moves
    all its seeds' analyses together."""
    if len(preds_a) != len(preds_b) or not preds_a:
        raise ValueError(f"{len(preds_a)} parses against {len(preds_b)}: one per seed on each side")
    gold_name, names_a, names_b = names or ("gold", [f"prediction {s + 1}" for s in range(len(preds_a))],
                                            [f"second prediction {s + 1}" for s in range(len(preds_b))])
    return pooled_test([sentence_counts(gold, pred, gold_name, name) for pred, name in zip(preds_a, names_a)],
                       [sentence_counts(gold, pred, gold_name, name) for pred, name in zip(preds_b, names_b)],
                       test=test, samples=samples)


def pooled_test(seeds_a: Sequence[dict[str, SentenceCounts]], seeds_b: Sequence[dict[str, SentenceCounts]], *,
                test: str = "bootstrap", samples: int = 10_000) -> dict[str, PairedResult]:
    """The paired test of :func:`compare_seeds` on each seed's :func:`sentence_counts`."""
    from ..experiments.significance import paired_test

    def summed(seeds: Sequence[dict[str, SentenceCounts]], metric: str) -> tuple[list[float], list[float]]:
        return ([sum(column) for column in zip(*(counts[metric].correct for counts in seeds))],
                [sum(column) for column in zip(*(counts[metric].halves for counts in seeds))])

    results = {}
    for metric in seeds_a[0]:
        (right_a, halves_a), (right_b, halves_b) = summed(seeds_a, metric), summed(seeds_b, metric)
        results[metric] = paired_test(test, right_a, right_b, halves_a, samples=samples, words_b=halves_b)
    return results


def _right(metric: str, gold_words: list[Word], pred_words: list[Word], g: int, p: int, pairs: Alignment) -> bool:
    """Whether aligned words ``g`` (gold) and ``p`` (predicted) agree on ``metric``."""
    gold, pred = gold_words[g], pred_words[p]
    if metric in ("upos", "xpos", "ufeats"):
        return gold.columns[metric] == pred.columns[metric]
    if metric == "lemma":  # a gold ``_`` matches any lemma (``conll18_ud_eval.py``)
        return gold.columns[metric] is None or gold.columns[metric] == pred.columns[metric]
    head_right = _gold_head(pred.head, pairs) == gold.head
    if metric == "uas":
        return head_right
    label = "deprel" if metric == "las" else "universal"
    return head_right and pred.columns[label] is not None and gold.columns[label] == pred.columns[label]


def _gold_head(head: int, pairs: Alignment) -> int | None:
    """The gold word a predicted head is aligned to (ROOT for the root; None where there is none)."""
    if head == ROOT:
        return ROOT
    return None if head == NO_HEAD else pairs.inverse.get(head)


def _check_same_text(gold: list[str], pred: list[str], gold_name: str, pred_name: str) -> None:
    if gold == pred:
        return
    at = next((i for i, (g, p) in enumerate(zip(gold, pred)) if g != p), min(len(gold), len(pred)))
    raise EvaluationError(f"{gold_name} and {pred_name} hold different texts (white space aside): from "
                          f"character {at + 1} the gold tokens read {''.join(gold[at:at + 20])!r}, the "
                          f"predicted ones {''.join(pred[at:at + 20])!r}")


def spans_score(gold: Sequence[tuple[int, int]], pred: Sequence[tuple[int, int]]) -> Score:
    """Predicted spans with a gold span of the same start and end."""
    return Score(len(gold), len(pred), len(matched_spans(gold, pred)))


def matched_spans(gold: Sequence[tuple[int, int]], pred: Sequence[tuple[int, int]]) -> list[int]:
    """The gold spans (indices) that a predicted span matches, start and end."""
    matched = []
    g = p = 0
    while g < len(gold) and p < len(pred):
        if pred[p][0] < gold[g][0]:
            p += 1
        elif gold[g][0] < pred[p][0]:
            g += 1
        else:
            if gold[g][1] == pred[p][1]:
                matched.append(g)
            g += 1
            p += 1
    return matched


class Alignment(dict):
    """Gold word index -> predicted word index, with ``inverse``."""

    def __init__(self) -> None:
        super().__init__()
        self.inverse: dict[int, int] = {}

    def add(self, gold: int, pred: int) -> None:
        self[gold] = pred
        self.inverse[pred] = gold


def align_words(gold: Sequence[Word], pred: Sequence[Word]) -> Alignment:
    """Align the words of two files of the same text (see the module docstring)."""
    alignment = Alignment()
    g = p = 0
    while g < len(gold) and p < len(pred):
        if gold[g].multiword or pred[p].multiword:
            g_start, p_start, g, p = multiword_stretch(gold, pred, g, p)
            _align_by_forms(gold, pred, range(g_start, g), range(p_start, p), alignment)
        elif (gold[g].start, gold[g].end) == (pred[p].start, pred[p].end):
            alignment.add(g, p)
            g += 1
            p += 1
        elif gold[g].start <= pred[p].start:
            g += 1
        else:
            p += 1
    return alignment


def multiword_stretch(gold: Sequence[Word], pred: Sequence[Word], g: int, p: int) -> tuple[int, int, int, int]:
    """The shortest stretch of words from ``g`` and ``p`` on that covers the
    multiword token there and every word that overlaps it: its first and
    one-past-last gold and predicted words."""
    if gold[g].multiword:
        end = gold[g].end
        if not pred[p].multiword and pred[p].start < gold[g].start:
            p += 1
    else:
        end = pred[p].end
        if not gold[g].multiword and gold[g].start < pred[p].start:
            g += 1
    g_start, p_start = g, p
    while not _beyond(gold, g, end) or not _beyond(pred, p, end):
        if g < len(gold) and (p >= len(pred) or gold[g].start <= pred[p].start):
            end = _extended(gold[g], end)
            g += 1
        else:
            end = _extended(pred[p], end)
            p += 1
    return g_start, p_start, g, p


def _beyond(words: Sequence[Word], i: int, end: int) -> bool:
    """Whether word ``i`` lies past a stretch ending at character ``end``."""
    if i >= len(words):
        return True
    return words[i].start >= end if words[i].multiword else words[i].end > end


def _extended(word: Word, end: int) -> int:
    return max(end, word.end) if word.multiword else end


def _align_by_forms(gold: Sequence[Word], pred: Sequence[Word], gold_range: range, pred_range: range,
                    alignment: Alignment) -> None:
    """Align the words of a stretch along a longest common subsequence of their forms."""
    gold_forms = [gold[i].form for i in gold_range]
    pred_forms = [pred[i].form for i in pred_range]
    lcs = _suffix_lcs(gold_forms, pred_forms)
    i = j = 0
    while i < len(gold_forms) and j < len(pred_forms):
        if gold_forms[i] == pred_forms[j]:
            alignment.add(gold_range[i], pred_range[j])
            i += 1
            j += 1
        elif lcs[i][j] == lcs[i + 1][j]:
            i += 1
        else:
            j += 1


def _suffix_lcs(a: list[str], b: list[str]) -> list[list[int]]:
    """``lcs[i][j]``: the length of a longest common subsequence of ``a[i:]`` and ``b[j:]``."""
    lcs = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in reversed(range(len(a))):
        for j in reversed(range(len(b))):
            lcs[i][j] = lcs[i + 1][j + 1] + 1 if a[i] == b[j] else max(lcs[i + 1][j], lcs[i][j + 1])
    return lcs
