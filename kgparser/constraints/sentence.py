"""The constraints of one sentence (:class:`Constraints`) and their
validation, ending with the exact satisfiability run of
:class:`~kgparser.constraints.arc_eager.ConstrainedArcEager`."""
from __future__ import annotations

from typing import Iterable, Sequence

from ..transitions.arc_eager import ArcEager
from ..transitions.base import NO_HEAD
from .arc_eager import ConstrainedArcEager
from .records import FREE, NONE_OUTSIDE, OUTSIDE_OPTIONS, SPAN_ROOT_ONLY, ArcConstraint, ConstraintError, SpanConstraint


class Constraints:
    """Arc and span constraints of one sentence; ``where`` names the sentence
    (file, line, sent_id) in error messages."""

    __slots__ = ("where", "arcs", "spans")

    def __init__(self, arcs: Iterable = (), spans: Iterable = (), *, where: str = "sentence"):
        self.where = where
        self.arcs = [self._arc(a) for a in arcs]
        self.spans = [self._span(s) for s in spans]

    def _arc(self, arc) -> ArcConstraint:
        if isinstance(arc, ArcConstraint):
            return arc
        if not isinstance(arc, (list, tuple)) or len(arc) not in (2, 3):
            self.fail(f"an arc constraint must be [head, dep] or [head, dep, label], got {arc!r}")
        head, dep, label = (*arc, None) if len(arc) == 2 else arc
        if not is_int(head) or not is_int(dep) or not (label is None or isinstance(label, str)):
            self.fail(f"arc constraint {arc!r} needs integer head and dependent and a string label")
        return ArcConstraint(head, dep, label)

    def _span(self, span) -> SpanConstraint:
        if isinstance(span, SpanConstraint):
            return span
        if not isinstance(span, (list, tuple)) or len(span) not in (2, 3):
            self.fail(f"a span constraint must be [first, last] or [first, last, outside], got {span!r}")
        first, last, outside = (*span, FREE) if len(span) == 2 else span
        if not is_int(first) or not is_int(last) or outside not in OUTSIDE_OPTIONS:
            self.fail(f"span constraint {span!r} needs integer ends and an option in {OUTSIDE_OPTIONS}")
        return SpanConstraint(first, last, outside)

    def __bool__(self) -> bool:
        return bool(self.arcs or self.spans)

    def __repr__(self) -> str:
        return f"Constraints(arcs={self.arcs}, spans={self.spans}, where={self.where!r})"

    def fail(self, problem: str):
        raise ConstraintError(f"{self.where}: {problem}")

    def heads(self, n: int) -> list[int]:
        """Constrained head of each word (``-1``: unconstrained), length ``n + 1``."""
        heads = [NO_HEAD] * (n + 1)
        for a in self.arcs:
            heads[a.dep] = a.head
        return heads

    def labels(self, n: int) -> list[str | None]:
        labels: list[str | None] = [None] * (n + 1)
        for a in self.arcs:
            labels[a.dep] = a.label
        return labels

    def violation(self, heads: Sequence[int], labels: Sequence[str | None] | None = None) -> str | None:
        """What a tree (``heads``/``labels`` indexed by word, position 0 unused)
        breaks of these constraints, or ``None`` when it meets them all."""
        for a in self.arcs:
            if heads[a.dep] != a.head:
                return f"arc {a.head} -> {a.dep} is missing (word {a.dep} has head {heads[a.dep]})"
            if a.label is not None and labels is not None and labels[a.dep] != a.label:
                return f"arc {a.head} -> {a.dep} has label {labels[a.dep]!r}, not {a.label!r}"
        for s in self.spans:
            def inside(w, s=s):
                return s.first <= w <= s.last

            tops = [w for w in range(s.first, s.last + 1) if not inside(heads[w])]
            givers = {heads[d] for d in range(1, len(heads)) if inside(heads[d]) and not inside(d)}
            if len(tops) != 1:
                return f"span {s.first}..{s.last} has {len(tops)} words with outside heads: {tops}"
            if s.outside == NONE_OUTSIDE and givers or s.outside == SPAN_ROOT_ONLY and givers - set(tops):
                return f"span {s.first}..{s.last} ({s.outside}) has words with outside dependents: {sorted(givers)}"
        return None

    def check(self, n: int) -> None:
        """Raise :class:`ConstraintError` unless some projective tree over
        ``n`` words satisfies every constraint."""
        self.check_structure(n)
        ConstrainedArcEager(ArcEager(root="end"), self, n, checked=True).check_satisfiable()

    def check_structure(self, n: int) -> None:
        """The checks of :meth:`check` before the (exact) satisfiability test."""
        self._check_arcs(n)
        self._check_spans(n)
        self._check_spans_against_arcs()

    def _check_arcs(self, n: int) -> None:
        seen: dict[int, ArcConstraint] = {}
        for a in self.arcs:
            if not 1 <= a.dep <= n or not 0 <= a.head <= n:
                self.fail(f"arc {a.head} -> {a.dep} is outside the sentence (words 1..{n}, root 0)")
            if a.head == a.dep:
                self.fail(f"arc constraint attaches word {a.dep} to itself")
            if a.dep in seen and seen[a.dep] != a:
                self.fail(f"word {a.dep} has two constrained heads ({seen[a.dep].head} and {a.head})")
            seen[a.dep] = a
        heads = self.heads(n)
        for d in sorted({a.dep for a in self.arcs}):  # a cycle passes through constrained dependents only
            node, steps = d, 0
            while node > 0 and steps <= n:
                node, steps = heads[node], steps + 1
            if node > 0:
                self.fail(f"the arc constraints contain a cycle through word {d}")
        crossing = _crossing_arcs(heads) if len(self.arcs) > 1 else None
        if crossing:
            (h1, d1), (h2, d2) = crossing
            self.fail(f"arc constraints {h1} -> {d1} and {h2} -> {d2} cross (no projective tree has both)")

    def _check_spans(self, n: int) -> None:
        previous = None
        for s in sorted(self.spans, key=lambda s: (s.first, s.last)):
            if not 1 <= s.first <= s.last <= n:
                self.fail(f"span {s.first}..{s.last} is not within words 1..{n}")
            if previous and s.first <= previous.last:
                self.fail(f"spans {previous.first}..{previous.last} and {s.first}..{s.last} overlap")
            previous = s

    def _check_spans_against_arcs(self) -> None:
        """Section 4: at most one word of a span has an outside head, and only
        words the span's option allows have outside dependents."""
        for s in self.spans:
            def inside(w, s=s):
                return s.first <= w <= s.last

            roots = {a.dep for a in self.arcs if inside(a.dep) and not inside(a.head)}
            if len(roots) > 1:
                self.fail(f"span {s.first}..{s.last} has two words with outside heads: {sorted(roots)}")
            givers = {a.head for a in self.arcs if inside(a.head) and not inside(a.dep)}
            if givers and s.outside == NONE_OUTSIDE:
                self.fail(f"span {s.first}..{s.last} allows no outside dependents, but word "
                          f"{min(givers)} has one in the arc constraints")
            if s.outside == SPAN_ROOT_ONLY and len(roots | givers) > 1:
                self.fail(f"span {s.first}..{s.last} allows outside dependents only on its root, but the "
                          f"arc constraints need words {sorted(roots | givers)} to be linked outside it")
            if s.outside == SPAN_ROOT_ONLY and givers:
                giver = next(iter(givers))
                inner = [a.head for a in self.arcs if a.dep == giver and inside(a.head)]
                if inner:
                    self.fail(f"span {s.first}..{s.last}: word {giver} has an outside dependent, so it must "
                              f"be the span's root, but an arc constraint gives it head {inner[0]} inside")


def is_int(x) -> bool:
    """Whether ``x`` is an int and not a bool (JSON true is no word number)."""
    return isinstance(x, int) and not isinstance(x, bool)


def _crossing_arcs(heads: Sequence[int]):
    """Two constrained arcs that cross, the root placed after the last word
    (where the arc-eager variant of the paper puts it), or ``None``."""
    end = len(heads)
    spans = sorted(((min(h or end, d), max(h or end, d), h, d) for d, h in enumerate(heads) if d and h != NO_HEAD),
                   key=lambda arc: (arc[0], -arc[1]))
    open_arcs: list[tuple[int, int, int, int]] = []
    for arc in spans:
        while open_arcs and open_arcs[-1][1] <= arc[0]:
            open_arcs.pop()
        if open_arcs and open_arcs[-1][1] < arc[1]:
            return (open_arcs[-1][2], open_arcs[-1][3]), (arc[2], arc[3])
        open_arcs.append(arc)
    return None
