"""Lemmas as edit scripts: the class the joint tagger predicts for LEMMA.

A lemma is predicted as a rule that turns the word's form into it, learned
from the training words, as UDPipe does (Straka, Hajič & Straková 2016;
Straka 2018, "UDPipe 2.0 Prototype at CoNLL 2018 UD Shared Task", section 3):
an *edit script* on the lower-cased form — cut so many characters at the
start and at the end, add a string at each — and a *casing* of the result.
Counting the characters cut, not naming them, makes a rule apply to forms
never seen in training: ``walked -> walk`` (cut 2 at the end) gives
``jumped -> jump``.  Where form and lemma share no character (``went ->
go``) the script is the whole lemma.

The casing is the first of these that gives the lemma:

``l``  the result lower-cased (``Dogs -> dog``)
``f``  the form's own casing kept (``Americans -> American``, ``IBM -> IBM``)
``t``  the result lower-cased with its first character upper-cased (``SMITH -> Smith``)
``u``  the result upper-cased
``k``  the script computed on the form and lemma as written (mixed casing: ``MCDONALD'S -> McDonald``)

A class is a plain string (``l0:2:0:`` cuts two characters at the end;
``l=go`` is the lemma ``go`` whatever the form), so it is one vocabulary
item of the tagger's LEMMA column.  Every (form, lemma) pair gets a class
that gives the lemma back (:func:`lemma_class`, :func:`apply_class`); a
class that does not fit a form (cutting more than it has) or does not parse
gives the form itself.

The tagger's best class is not always one that can be right for the form:
counting characters, ``l0:2:0:`` fits ``jumped`` and ``runs`` alike.  A
:class:`LemmaLexicon` learned from the training words keeps, per class, the
strings it cut there (``ed`` for ``l0:2:0:``, never ``ns``), and the tagger
takes the best-scoring class that cut the same strings in training, as
UDPipe 1's edit rules apply only to the suffixes they were learned from
(Straka, Hajič & Straková 2016, section 4.2).  Words seen in training take
their training lemma, as a morphological dictionary gives it (the most
frequent with the predicted UPOS, else with any).  Torch-free.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from functools import lru_cache
from typing import Iterable

__all__ = ["CASINGS", "LemmaLexicon", "apply_class", "lemma_class"]

#: the casings, in the order a class is chosen (see the module docstring)
CASINGS = "lftuk"
#: the script of a lemma that shares no character with its form: the lemma itself
_ABSOLUTE = "="


@lru_cache(maxsize=1 << 16)  # training asks for the classes of its words at every batch
def lemma_class(form: str, lemma: str) -> str:
    """The class that turns ``form`` into ``lemma`` (:func:`apply_class` gives it back)."""
    lowered = _script(form.lower(), lemma.lower())
    for casing in CASINGS[:-1]:
        if _applied(casing, lowered, form) == lemma:
            return casing + lowered
    return "k" + _script(form, lemma)


def apply_class(cls: str, form: str) -> str:
    """The lemma class ``cls`` gives ``form``; the form itself where the class
    does not fit it (or is not a lemma class)."""
    if len(cls) < 2 or cls[0] not in CASINGS:
        return form
    lemma = _applied(cls[0], cls[1:], form)
    return form if lemma is None else lemma


def _applied(casing: str, script: str, form: str) -> str | None:
    """``script`` with ``casing`` applied to ``form``; None where it does not fit."""
    if casing in "fk":
        return _edit(script, form)
    result = _edit(script, form.lower())
    if result is None or casing == "l":
        return result
    return result.upper() if casing == "u" else result[:1].upper() + result[1:]


def _script(form: str, lemma: str) -> str:
    """The edit script of ``form`` into ``lemma``: around their longest common
    substring (the first in the form, then in the lemma, of the longest), the
    characters cut from the form and the strings added, as
    ``{cut at start}:{cut at end}:{length of the start added}:{start added}{end added}``;
    ``={lemma}`` where they share no character."""
    start, lemma_start, length = _longest_common_substring(form, lemma)
    if not length:
        return _ABSOLUTE + lemma
    added = lemma[:lemma_start]
    return f"{start}:{len(form) - start - length}:{len(added)}:{added}{lemma[lemma_start + length:]}"


def _edit(script: str, form: str) -> str | None:
    """``script`` (:func:`_script`) applied to ``form``; None where it cuts the
    whole form (or more) or does not parse."""
    if script[:1] == _ABSOLUTE:
        return script[1:]
    try:
        head, tail, added_length, added = script.split(":", 3)
        cut_start, cut_end, start_length = int(head), int(tail), int(added_length)
    except ValueError:
        return None
    if min(cut_start, cut_end, start_length) < 0 or cut_start + cut_end >= len(form):
        return None
    return added[:start_length] + form[cut_start:len(form) - cut_end] + added[start_length:]


def _longest_common_substring(a: str, b: str) -> tuple[int, int, int]:
    """``(start in a, start in b, length)`` of the first longest common substring
    (earliest in ``a``, then in ``b``); length 0 where they share no character."""
    best = (0, 0, 0)
    previous = [0] * (len(b) + 1)
    for i, char in enumerate(a, start=1):
        current = [0] * (len(b) + 1)
        for j, other in enumerate(b, start=1):
            if char == other:
                current[j] = previous[j - 1] + 1
                length = current[j]
                start = (i - length, j - length)
                if length > best[2] or (length == best[2] and start < best[:2]):
                    best = (*start, length)
        previous = current
    return best


def cut_key(cls: str, form: str) -> str:
    """What ``cls`` cuts from ``form``: the start and end cut, tab-separated (a
    CoNLL-U form has no tab), or ``=`` and the form as the class cases it for a
    class that gives its lemma whole; ``""`` where it is no lemma class."""
    if len(cls) < 2 or cls[0] not in CASINGS:
        return ""
    cased = form if cls[0] in "fk" else form.lower()
    if cls[1:2] == _ABSOLUTE:
        return _ABSOLUTE + cased
    try:
        head, tail = (int(number) for number in cls[1:].split(":", 2)[:2])
    except ValueError:
        return ""
    return cased[:head] + "\t" + (cased[len(cased) - tail:] if tail else "")


class LemmaLexicon:
    """What the training words teach about lemmas beyond the tagger's classes:
    the lemma of each seen form (with its UPOS, and alone) and what each class
    cut in training (:func:`cut_key`); see the module docstring."""

    def __init__(self, lemmas: dict[tuple[str, str], str], cuts: dict[str, set[str]]):
        #: (form, UPOS) -> lemma, and (form, "") -> the form's lemma whatever its UPOS
        self.lemmas = lemmas
        #: class -> the cut keys it had in training
        self.cuts = cuts

    @classmethod
    def build(cls, words: Iterable[tuple[str, str | None, str | None]]) -> LemmaLexicon:
        """From training ``(form, upos, lemma)`` triples (None for ``_``): the most
        frequent lemma of each (form, UPOS) and of each form (ties: the first seen)."""
        seen: defaultdict[tuple[str, str], Counter] = defaultdict(Counter)
        cuts: defaultdict[str, set[str]] = defaultdict(set)
        for form, upos, lemma in words:
            if lemma is None:
                continue
            if upos is not None:
                seen[form, upos][lemma] += 1
            seen[form, ""][lemma] += 1
            script = lemma_class(form, lemma)
            cuts[script].add(cut_key(script, form))
        return cls({key: counts.most_common(1)[0][0] for key, counts in seen.items()}, dict(cuts))

    @classmethod
    def from_sentences(cls, sentences: Iterable) -> LemmaLexicon:
        """:meth:`build` from sentences' ``forms``, ``upos`` and ``lemma`` (None for ``_``)."""
        return cls.build(word for sentence in sentences
                         for word in zip(sentence.forms, sentence.upos, sentence.lemma))

    def known(self, form: str, upos: str | None) -> str | None:
        """The training lemma of ``form`` (with ``upos`` where it was seen so, else
        its most frequent), or None for a form not seen with a lemma."""
        return self.lemmas.get((form, upos or "")) or self.lemmas.get((form, ""))

    def fitting(self, form: str, ranked: Iterable[str]) -> str | None:
        """The lemma of the first class of ``ranked`` (best first) that cut from
        ``form`` what it cut in training, or None (the caller keeps the tagger's best)."""
        for script in ranked:
            if cut_key(script, form) in self.cuts.get(script, ()):
                lemma = _applied(script[0], script[1:], form)
                if lemma is not None:
                    return lemma
        return None

    def decided(self, form: str, ranked: list[str]) -> str:
        """The lemma of an unseen ``form`` from classes ranked best first: the first
        that cut from it what it cut in training (:meth:`fitting`), else the best."""
        lemma = self.fitting(form, ranked)
        return apply_class(ranked[0], form) if lemma is None else lemma

    def to_data(self) -> dict:
        """Plain data for a checkpoint: two JSON strings, which load far faster than
        the same lists as pickled objects (a treebank has tens of thousands)."""
        return {"lemmas": json.dumps([[form, upos, lemma] for (form, upos), lemma in self.lemmas.items()]),
                "cuts": json.dumps([[script, *sorted(keys)] for script, keys in self.cuts.items()])}

    @classmethod
    def from_data(cls, data: dict) -> LemmaLexicon:
        return cls({(form, upos): lemma for form, upos, lemma in json.loads(data["lemmas"])},
                   {script: set(keys) for script, *keys in json.loads(data["cuts"])})
