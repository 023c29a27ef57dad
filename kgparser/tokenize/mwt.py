"""Which tokens are multiword tokens and what their words are, learned from
the training file.  A token form seen there is a multiword token when it
mostly was one (lower-cased); the character model decides for the others.
A multiword token seen there gets its most frequent expansion (the
form as written first, else its lower-cased form, re-cased as the token is);
an unseen one gets the expansion of the longest learned suffix rule it
matches.  A suffix rule is read off each training multiword token whose
first word shares a stem with it (Turkish ``yoktu`` -> ``yok`` ``tu``:
``-tu`` -> stem + ``""``, ``tu``; Greek ``στο`` -> ``σε`` ``το``: ``-το`` ->
stem + ``ε``, ``το``), much as UDPipe splits multiword tokens by prefix and
suffix rules learned from the training data (Straka & Straková 2017);
Stanza (Qi et al. 2020) puts a dictionary before a seq2seq model.  A token no rule
matches stays one word.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

Expansion = tuple[str, ...]


class MultiwordExpander:
    """Token form -> the forms of its words (see the module docstring)."""

    def __init__(self, exact: dict[str, Expansion], lowered: dict[str, Expansion],
                 rules: dict[str, tuple[str, Expansion]], single: set[str]):
        self.exact = exact
        self.lowered = lowered
        #: suffix -> (what follows the stem in the first word, the other words)
        self.rules = rules
        self.longest_rule = max(map(len, rules), default=0)
        #: lower-cased forms seen in training mostly as tokens of one word
        self.single = single

    @classmethod
    def learn(cls, tokens: Iterable[tuple[str, Expansion]]) -> MultiwordExpander:
        """Learn from ``(form, words)`` of the training file's tokens."""
        multiword: Counter[str] = Counter()
        single: Counter[str] = Counter()
        exact: dict[str, Counter] = defaultdict(Counter)
        lowered: dict[str, Counter] = defaultdict(Counter)
        rules: dict[str, Counter] = defaultdict(Counter)
        for form, words in tokens:
            if len(words) < 2:
                single[form.lower()] += 1
                continue
            multiword[form.lower()] += 1
            exact[form][words] += 1
            low_form, low_words = form.lower(), tuple(w.lower() for w in words)
            lowered[low_form][low_words] += 1
            for suffix, rule in suffix_rules(low_form, low_words):
                rules[suffix][rule] += 1
        mostly_single = {form for form, count in single.items() if count > multiword[form]}
        return cls(_most_frequent(exact), _most_frequent(lowered), _most_frequent(rules), mostly_single)

    def is_multiword(self, form: str, predicted: bool) -> bool:
        """Whether ``form`` is a multiword token: as mostly in training where
        it was seen there, else as the character model ``predicted``."""
        low = form.lower()
        if low in self.single:
            return False
        return low in self.lowered or predicted

    def expand(self, form: str) -> Expansion:
        """The words of the multiword token ``form`` (``(form,)`` when nothing is known)."""
        if form in self.exact:
            return self.exact[form]
        low = form.lower()
        words = self.lowered.get(low) or self._by_rule(low)
        return recased(form, words) if words else (form,)

    def _by_rule(self, low: str) -> Expansion | None:
        for length in range(min(self.longest_rule, len(low) - 1), 0, -1):
            rule = self.rules.get(low[-length:])
            if rule:
                rest, others = rule
                return (low[:-length] + rest,) + others
        return None

    def to_data(self) -> dict:
        """Plain data (see :meth:`from_data`)."""
        return {"exact": _pairs(self.exact), "lowered": _pairs(self.lowered),
                "rules": [[suffix, rest, list(others)] for suffix, (rest, others) in self.rules.items()],
                "single": sorted(self.single)}

    @classmethod
    def from_data(cls, data: dict) -> MultiwordExpander:
        return cls({form: tuple(words) for form, words in data["exact"]},
                   {form: tuple(words) for form, words in data["lowered"]},
                   {suffix: (rest, tuple(others)) for suffix, rest, others in data["rules"]}, set(data["single"]))


def suffix_rules(form: str, words: Expansion) -> list[tuple[str, tuple[str, Expansion]]]:
    """The rules one multiword token teaches: for each stem it shares with its
    first word (at least one character, leaving a suffix), the suffix and
    what replaces it."""
    shared = 0
    limit = min(len(form) - 1, len(words[0]))
    while shared < limit and form[shared] == words[0][shared]:
        shared += 1
    return [(form[stem:], (words[0][stem:], words[1:])) for stem in range(1, shared + 1)]


def recased(form: str, words: Expansion) -> Expansion:
    """Lower-cased ``words`` cased as ``form`` is: all upper case, or a capital first letter."""
    if len(form) > 1 and form.isupper():
        return tuple(w.upper() for w in words)
    if form[:1].isupper():
        return (words[0][:1].upper() + words[0][1:],) + words[1:]
    return words


def _most_frequent(counts: dict[str, Counter]) -> dict:
    """Each key's most frequent value (the first seen among equals)."""
    return {key: counter.most_common(1)[0][0] for key, counter in counts.items()}


def _pairs(table: dict[str, Expansion]) -> list:
    return [[form, list(words)] for form, words in table.items()]
