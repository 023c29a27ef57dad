"""Attachment scores of predicted trees against gold trees (gold tokenization).

Semantics follow the CoNLL 2018 shared-task scorer (``conll18_ud_eval.py``) for
the case where prediction and gold share the tokenization:

* ``uas``: fraction of scored words whose predicted HEAD is the gold HEAD.
* ``las_universal``: HEAD and the *universal* part of DEPREL (the label up to
  the first ``:``, so ``nmod:poss`` counts as ``nmod``) both correct.  This is
  what ``conll18_ud_eval.py`` calls LAS: it strips subtypes before comparing.
* ``las``: HEAD and the *full* DEPREL (subtype included) both correct.  This is
  the stricter score most parser papers report as LAS.
* ``label_accuracy``: full DEPREL correct, whatever the head.

Punctuation: by default every word is scored, as in the shared task.  With
``punct=False`` a word is left out when its *gold* UPOS is ``PUNCT`` (the
prediction's tags never change what is scored).

A predicted HEAD or DEPREL of ``_`` counts as wrong.  Gold and prediction must
have the same number of sentences and, sentence by sentence, the same word
forms; otherwise :class:`EvaluationError` names both files and lines.

Tags (over the same scored words, as ``conll18_ud_eval.py``): ``upos`` and
``xpos``, the share of words whose predicted tag is the gold one, counting the
words whose gold tag is given; ``ufeats``, the share whose *universal*
features (:data:`UNIVERSAL_FEATURES`, in any order) match, and ``feats`` the
share whose whole FEATS match (the class the joint tagger predicts), counted
when the gold file has FEATS at all (``_``, no features, is then a value);
``lemma``, the share of words whose predicted LEMMA is the gold one (exactly,
casing included), counting the words whose gold LEMMA is given (the shared
task's scorer counts a gold ``_`` as right whatever the prediction; see
:mod:`kgparser.evaluation.aligned`).  A score the gold file cannot give is None.

Breakdowns (always over the scored words):

* per label (full gold/predicted DEPREL): ``gold`` words with that gold label,
  ``predicted`` words with that predicted label, ``correct`` words where both
  are that label and the head is right; precision = correct / predicted,
  recall = correct / gold, F1 their harmonic mean (labeled attachment per label).
* per distance (``|head - dependent|`` bucketed as root, 1, 2, ..., 6, 7+):
  ``gold`` arcs of that gold length, ``predicted`` arcs of that predicted
  length, ``correct`` arcs of that gold length with the right head (unlabeled).
* non-projective arcs (:func:`nonprojective_counts`): recall over the arcs
  non-projective in the gold tree, precision over those non-projective in the
  predicted tree (an arc is right when its head is the gold head).

A precision, recall or F1 without anything to count (0 / 0) is 0.

Sentence by sentence (:attr:`Scores.by_sentence`, the terms of paired
significance tests over sentences): the scored words, the correct heads and
correct heads with full labels, the words with a gold UPOS and those tagged right,
and, where counted, the non-projective counts.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import KgparserError
from ..io.conllu import Sentence, read_conllu
from ..transitions.trees import nonprojective_arcs

__all__ = ["EvaluationError", "NonProjective", "PRF", "Scores", "check_sentence_counts", "distance_bucket",
           "evaluate", "evaluate_files", "features", "nonprojective_counts", "predicted_nonprojective_arcs",
           "universal_label"]

DISTANCE_BUCKETS = ("root", "1", "2", "3", "4", "5", "6", "7+")
#: the tag scores, in the order they are reported
TAG_SCORES = ("upos", "xpos", "ufeats", "feats", "lemma")
#: the features UD defines for every language (``conll18_ud_eval.py``'s list); UFeats compares only these
UNIVERSAL_FEATURES = frozenset({
    "PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy", "Number", "Case",
    "Definite", "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice", "Evident", "Polarity", "Person",
    "Polite"})


class EvaluationError(KgparserError):
    """Gold and predicted files do not describe the same words."""


def universal_label(label: str | None) -> str | None:
    """The universal part of a UD relation: ``nmod:poss`` -> ``nmod``."""
    return label.split(":", 1)[0] if label is not None else None


def distance_bucket(head: int, dependent: int) -> str | None:
    """Bucket name of an arc's length; None for a missing head (-1)."""
    if head < 0:
        return None
    if head == 0:
        return "root"
    distance = abs(head - dependent)
    return str(distance) if distance < 7 else "7+"


def predicted_nonprojective_arcs(pred: Sentence) -> list[tuple[int, int]]:
    """The arcs of a prediction that are non-projective in it; a word without a
    head (``_``) has no arc but hangs from the root when the tree is checked."""
    attached = [pred.heads[0]] + [max(h, 0) for h in pred.heads[1:]]
    return [(h, d) for h, d in nonprojective_arcs(attached) if pred.heads[d] >= 0]


def nonprojective_counts(gold: Sentence, pred: Sentence, scored: set[int]) -> NonProjective:
    """Non-projective arcs onto the ``scored`` words: those non-projective in the
    gold tree, and how many of their words got the gold head (recall's terms);
    those non-projective in the predicted tree, and how many of them have the
    gold head (precision's).  A word without a predicted head (``_``) hangs
    from the root when the predicted tree is checked, and is never counted."""
    gold_arcs = [(h, d) for h, d in nonprojective_arcs(gold.heads) if d in scored]
    pred_arcs = [(h, d) for h, d in predicted_nonprojective_arcs(pred) if d in scored]
    return NonProjective(len(gold_arcs), sum(pred.heads[d] == h for h, d in gold_arcs),
                         len(pred_arcs), sum(gold.heads[d] == h for h, d in pred_arcs))


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


@dataclass
class PRF:
    """Counts of one breakdown row, with precision, recall and F1 derived."""

    gold: int = 0
    predicted: int = 0
    correct: int = 0

    @property
    def precision(self) -> float:
        return _ratio(self.correct, self.predicted)

    @property
    def recall(self) -> float:
        return _ratio(self.correct, self.gold)

    @property
    def f1(self) -> float:
        return _ratio(2 * self.correct, self.gold + self.predicted)

    def __add__(self, other: PRF) -> PRF:
        return PRF(self.gold + other.gold, self.predicted + other.predicted, self.correct + other.correct)

    def to_dict(self) -> dict[str, float | int]:
        return {"gold": self.gold, "predicted": self.predicted, "correct": self.correct,
                "precision": self.precision, "recall": self.recall, "f1": self.f1}


@dataclass
class NonProjective:
    """Non-projective arcs: ``gold`` arcs non-projective in the gold tree and
    ``found``, those whose word got the gold head (recall); ``predicted`` arcs
    non-projective in the predicted tree and ``right``, those with the gold
    head (precision).  The numerators differ because an arc can be
    non-projective in one tree and not in the other."""

    gold: int = 0
    found: int = 0
    predicted: int = 0
    right: int = 0

    @property
    def precision(self) -> float:
        return _ratio(self.right, self.predicted)

    @property
    def recall(self) -> float:
        return _ratio(self.found, self.gold)

    def __add__(self, other: NonProjective) -> NonProjective:
        return NonProjective(self.gold + other.gold, self.found + other.found, self.predicted + other.predicted,
                             self.right + other.right)

    def to_dict(self) -> dict[str, float | int]:
        return {"gold": self.gold, "found": self.found, "predicted": self.predicted, "right": self.right,
                "precision": self.precision, "recall": self.recall}


@dataclass
class Scores:
    """Result of :func:`evaluate`; scores are fractions in [0, 1]."""

    punct: bool
    sentences: int = 0
    words: int = 0
    excluded_punct: int = 0
    correct_heads: int = 0
    correct_labeled: int = 0
    correct_labeled_universal: int = 0
    correct_labels: int = 0
    complete_unlabeled: int = 0
    complete_labeled: int = 0
    per_label: dict[str, PRF] = field(default_factory=dict)
    per_distance: dict[str, PRF] = field(default_factory=dict)
    #: summed over the sentences; None where not counted
    nonprojective: NonProjective | None = None
    #: per tag score (:data:`TAG_SCORES`): words with a gold value, and those predicted right
    tagged: dict[str, int] = field(default_factory=dict)
    correct_tags: dict[str, int] = field(default_factory=dict)
    #: count -> its value in each sentence, in order: ``words``, ``correct_heads`` and
    #: ``correct_labeled`` (as the totals), ``upos_words`` and ``correct_upos`` (the
    #: scored words with a gold UPOS, those predicted right), and where counted ``nonprojective_gold``,
    #: ``_found``, ``_predicted`` and ``_right``
    by_sentence: dict[str, list[int]] = field(default_factory=dict)

    def tag_accuracy(self, score: str) -> float | None:
        """``upos``, ``xpos``, ``ufeats``, ``feats`` or ``lemma`` accuracy; None where gold has no such tags."""
        total = self.tagged.get(score, 0)
        return self.correct_tags.get(score, 0) / total if total else None

    @property
    def uas(self) -> float:
        return _ratio(self.correct_heads, self.words)

    @property
    def las(self) -> float:
        """HEAD and full DEPREL correct."""
        return _ratio(self.correct_labeled, self.words)

    @property
    def las_universal(self) -> float:
        """HEAD and universal DEPREL correct (CoNLL 2018 "LAS")."""
        return _ratio(self.correct_labeled_universal, self.words)

    @property
    def label_accuracy(self) -> float:
        return _ratio(self.correct_labels, self.words)

    @property
    def uem(self) -> float:
        """Fraction of sentences whose scored words all have the right head."""
        return _ratio(self.complete_unlabeled, self.sentences)

    @property
    def lem(self) -> float:
        """Fraction of sentences whose scored words all have the right head and full label."""
        return _ratio(self.complete_labeled, self.sentences)

    def to_dict(self, breakdown: bool = True) -> dict:
        result: dict[str, Any] = {
            "uas": self.uas, "las": self.las, "las_universal": self.las_universal,
            "label_accuracy": self.label_accuracy, "uem": self.uem, "lem": self.lem,
            "punct": self.punct, "sentences": self.sentences, "words": self.words,
            "excluded_punct": self.excluded_punct, "correct_heads": self.correct_heads,
            "correct_labeled": self.correct_labeled,
            "correct_labeled_universal": self.correct_labeled_universal,
            "correct_labels": self.correct_labels,
            **{score: self.tag_accuracy(score) for score in TAG_SCORES},
        }
        if breakdown:
            result["per_label"] = {label: row.to_dict() for label, row in sorted(self.per_label.items())}
            result["per_distance"] = {bucket: self.per_distance[bucket].to_dict()
                                      for bucket in DISTANCE_BUCKETS if bucket in self.per_distance}
            if self.nonprojective is not None:
                result["nonprojective"] = self.nonprojective.to_dict()
        return result

    def format(self, breakdown: bool = False) -> str:
        """Plain-text report (percentages)."""
        scope = "all words" if self.punct else f"excluding {self.excluded_punct} words with gold UPOS PUNCT"
        lines = [
            f"Sentences: {self.sentences}   Words scored: {self.words} ({scope})",
            f"UAS                 {100 * self.uas:6.2f}  ({self.correct_heads}/{self.words})",
            f"LAS (full labels)   {100 * self.las:6.2f}  ({self.correct_labeled}/{self.words})",
            f"LAS (universal)     {100 * self.las_universal:6.2f}  "
            f"({self.correct_labeled_universal}/{self.words})  [CoNLL 2018 LAS]",
            f"Label accuracy      {100 * self.label_accuracy:6.2f}  ({self.correct_labels}/{self.words})",
            f"UEM / LEM           {100 * self.uem:6.2f} / {100 * self.lem:6.2f}",
        ]
        accuracies = {score: self.tag_accuracy(score) for score in TAG_SCORES}
        lines += [f"{_TAG_NAMES[score]:<20}{100 * accuracy:6.2f}  "
                  f"({self.correct_tags.get(score, 0)}/{self.tagged[score]})"
                  for score, accuracy in accuracies.items() if accuracy is not None]
        if breakdown:
            lines += ["", _table("Label", sorted(self.per_label.items())),
                      "", _table("Distance", [(b, self.per_distance[b]) for b in DISTANCE_BUCKETS
                                              if b in self.per_distance])]
            if self.nonprojective is not None:
                lines += ["", self._nonprojective_line()]
        return "\n".join(lines)

    def _nonprojective_line(self) -> str:
        c = self.nonprojective
        assert c is not None  # called only where there is a count
        return (f"Non-projective arcs: gold {c.gold}, {c.found} with the gold head (recall "
                f"{100 * c.recall:.2f}); predicted {c.predicted}, {c.right} with the "
                f"gold head (precision {100 * c.precision:.2f})")


_TAG_NAMES = {"upos": "UPOS", "xpos": "XPOS", "ufeats": "UFeats", "feats": "FEATS (whole)", "lemma": "Lemmas"}


def _table(title: str, rows: Sequence[tuple[str, PRF]]) -> str:
    width = max([len(title)] + [len(name) for name, _ in rows])
    out = [f"{title:<{width}}  {'gold':>7} {'pred':>7} {'correct':>7} {'prec':>6} {'rec':>6} {'F1':>6}"]
    for name, row in rows:
        out.append(f"{name:<{width}}  {row.gold:>7} {row.predicted:>7} {row.correct:>7} "
                   f"{100 * row.precision:6.2f} {100 * row.recall:6.2f} {100 * row.f1:6.2f}")
    return "\n".join(out)


def _check_aligned(index: int, gold: Sentence, pred: Sentence) -> None:
    where = f"sentence {index} (gold {gold.source}:{gold.line}, prediction {pred.source}:{pred.line})"
    if gold.n != pred.n:
        raise EvaluationError(f"{where}: {gold.n} gold words but {pred.n} predicted words")
    for i, (gold_form, pred_form) in enumerate(zip(gold.forms, pred.forms), start=1):
        if gold_form != pred_form:
            raise EvaluationError(f"{where}: word {i} is {gold_form!r} in gold but {pred_form!r} in prediction")


def check_sentence_counts(gold_sentences: Sequence[Sentence], pred_sentences: Sequence[Sentence],
                          gold_name: str | None = None, pred_name: str | None = None) -> None:
    """Raise :class:`EvaluationError` naming both files unless they hold as many
    sentences (a file is named by its sentences' source where not given)."""
    if len(gold_sentences) != len(pred_sentences):
        gold_name = gold_name or (gold_sentences[0].source if gold_sentences else "gold")
        pred_name = pred_name or (pred_sentences[0].source if pred_sentences else "prediction")
        raise EvaluationError(f"{gold_name} has {len(gold_sentences)} sentences but "
                              f"{pred_name} has {len(pred_sentences)}")


def evaluate(gold_sentences: Sequence[Sentence], pred_sentences: Sequence[Sentence], *,
             punct: bool = True, nonprojective: bool = True) -> Scores:
    """Score predicted trees against gold trees (see the module docstring); with
    ``nonprojective`` False the non-projective arcs are not counted (the slowest
    part, which training's dev scores do without)."""
    check_sentence_counts(gold_sentences, pred_sentences)
    scores = Scores(punct=punct, nonprojective=NonProjective() if nonprojective else None)
    gold_has_feats = any(f is not None for sentence in gold_sentences for f in sentence.feats)
    for index, (gold, pred) in enumerate(zip(gold_sentences, pred_sentences), start=1):
        _check_aligned(index, gold, pred)
        _score_sentence(scores, gold, pred, gold_has_feats)
    return scores


def _score_sentence(scores: Scores, gold: Sentence, pred: Sentence, gold_has_feats: bool) -> None:
    """Add one sentence to the totals of ``scores`` and its own counts to ``scores.by_sentence``."""
    scored = [d for d in range(1, gold.n + 1) if scores.punct or gold.upos[d - 1] != "PUNCT"]
    upos_before = scores.tagged.get("upos", 0), scores.correct_tags.get("upos", 0)
    heads = labeled = 0
    for d in scored:
        head_ok, label_ok = _score_word(scores, gold, pred, d, gold_has_feats)
        heads += head_ok
        labeled += head_ok and label_ok
    scores.sentences += 1
    scores.excluded_punct += gold.n - len(scored)
    scores.complete_unlabeled += heads == len(scored)
    scores.complete_labeled += labeled == len(scored)
    counts = {"words": len(scored), "correct_heads": heads, "correct_labeled": labeled,
              "upos_words": scores.tagged.get("upos", 0) - upos_before[0],
              "correct_upos": scores.correct_tags.get("upos", 0) - upos_before[1]}
    if scores.nonprojective is not None:
        nonprojective = nonprojective_counts(gold, pred, set(scored))
        scores.nonprojective += nonprojective
        counts.update((f"nonprojective_{name}", count) for name, count in vars(nonprojective).items())
    for name, count in counts.items():
        scores.by_sentence.setdefault(name, []).append(count)


def _score_word(scores: Scores, gold: Sentence, pred: Sentence, d: int, gold_has_feats: bool) -> tuple[bool, bool]:
    """Add word ``d`` to the counts; whether its head and its label are right."""
    gold_head, pred_head = gold.heads[d], pred.heads[d]
    gold_label, pred_label = gold.deprels[d], pred.deprels[d]
    if gold_head < 0 or gold_label is None:
        raise EvaluationError(f"{gold.source}:{gold.line}: gold word {d} has no HEAD or DEPREL")
    head_ok = pred_head == gold_head and pred_head >= 0
    label_ok = pred_label == gold_label and pred_label is not None
    universal_ok = pred_label is not None and universal_label(pred_label) == universal_label(gold_label)
    scores.words += 1
    scores.correct_heads += head_ok
    scores.correct_labels += label_ok
    scores.correct_labeled += head_ok and label_ok
    scores.correct_labeled_universal += head_ok and universal_ok
    _count_tags(scores, gold, pred, d - 1, gold_has_feats)
    _count_breakdown(scores.per_label, gold_label, pred_label, head_ok and label_ok)
    gold_bucket = distance_bucket(gold_head, d)
    assert gold_bucket is not None  # the gold head is checked above
    _count_breakdown(scores.per_distance, gold_bucket, distance_bucket(pred_head, d), head_ok)
    return head_ok, label_ok


def _count_breakdown(rows: dict[str, PRF], gold_key: str, pred_key: str | None, correct: bool) -> None:
    """Add a word to its gold row and its predicted row (none where the prediction has none)."""
    rows.setdefault(gold_key, PRF()).gold += 1
    if pred_key is not None:
        rows.setdefault(pred_key, PRF()).predicted += 1
    if correct:
        rows[gold_key].correct += 1


def _count_tags(scores: Scores, gold: Sentence, pred: Sentence, i: int, gold_has_feats: bool) -> None:
    """Add word ``i`` (0-based) to the tag scores its gold values allow."""
    pairs: list[tuple[str, object, object]] = [("upos", gold.upos[i], pred.upos[i]),
                                               ("xpos", gold.xpos[i], pred.xpos[i]),
                                               ("lemma", _lemma(gold.lemmas[i]), _lemma(pred.lemmas[i]))]
    if gold_has_feats:
        pairs += [("ufeats", features(gold.feats[i], True), features(pred.feats[i], True)),
                  ("feats", features(gold.feats[i], False), features(pred.feats[i], False))]
    for score, gold_value, pred_value in pairs:
        if gold_value is not None:
            scores.tagged[score] = scores.tagged.get(score, 0) + 1
            scores.correct_tags[score] = scores.correct_tags.get(score, 0) + (gold_value == pred_value)


def _lemma(lemma: str) -> str | None:
    return None if lemma == "_" else lemma


def features(feats: str | None, universal: bool) -> frozenset:
    """The features of a FEATS value as a set (only the universal ones with ``universal``)."""
    features = frozenset(feats.split("|")) if feats else frozenset()
    return frozenset(f for f in features if f.split("=", 1)[0] in UNIVERSAL_FEATURES) if universal else features


def evaluate_files(gold: str | Path, pred: str | Path, *, punct: bool = True) -> Scores:
    """Read both files and :func:`evaluate`.  Gold must hold complete trees; the
    prediction may leave HEAD/DEPREL as ``_`` (scored as wrong)."""
    gold_sentences = read_conllu(gold, require_tree=True)
    pred_sentences = read_conllu(pred, require_tree=False)
    return evaluate(gold_sentences, pred_sentences, punct=punct)
