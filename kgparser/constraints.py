"""Hard span and arc constraints on the parser output (Nivre, Goldberg &
McDonald 2014, "Constrained arc-eager dependency parsing", Computational
Linguistics 40(2); ``../shared/papers/constrained-arc-eager.txt``).

Constraints for one sentence
----------------------------
:class:`Constraints` holds

* **arcs** ``(head, dep, label)``: ``head -> dep`` must be in the output
  (``head`` 0 is the root); ``label`` ``None`` leaves the label free;
* **spans** ``(first, last, outside)``: the words ``first..last`` must form
  one tree (exactly one of them, the span's root, has its head outside the
  span); ``outside`` says which span words may have dependents outside the
  span: ``"free"`` (any), ``"root"`` (only the span's root) or ``"none"`` (no
  word, so the span is a complete subtree; section 4, NONE and ROOT).

``Constraints.check(n)`` validates them and raises :class:`ConstraintError`
naming the sentence: ids out of range, a word with two constrained heads,
cycles, overlapping spans, crossing (non-projective) arcs, two words of one
span with outside heads, outside dependents a span's option forbids, and
finally any set no projective tree satisfies (an exact test: one greedy run
of the constrained system, which is sound and complete and never stuck when
some tree satisfies the constraints).  One-word spans are allowed (with NONE or
ROOT they restrict that word's outside dependents).

Using them while parsing
------------------------
``constraint_filter(system, constraints, n)`` checks the constraints and
returns a per-sentence :class:`ConstraintFilter` (``None`` when there are
none) for a batched parser that advances its states with the plain
``system``: call ``allowed_actions(state, legal)`` (or the object itself) in
every non-final state after ``system.legal_actions(state)``; it returns the
legal actions that keep the constraints satisfiable, never an empty list when
the state is non-final; ``forced_label(head, dep)`` is the label a constrained
arc must carry, or ``None``.  Both take O(1) per transition for arc-eager.
With ``check_satisfiable=False`` (arc-eager, root at the end) the exact
satisfiability run is left to the caller's own decoding, which is then the
test: the filter returns an empty list, or the final state misses the
constraints, iff no projective tree satisfies them (``kgparser.parser``
then drops them, or raises, and decodes the sentence again without them).

``constrain(system, constraints, n)`` returns the underlying per-sentence
:class:`ConstrainedSystem` (``system`` itself when there are no constraints),
which owns its states: ``initial_state()``, ``legal_actions(state)``,
``allowed(state, legal)``, ``apply(state, action, label)`` (forces the
constrained label), ``forced_label(head, dep)``, ``forced_labels(state,
actions)``, ``is_final``, ``arc_of``, ``features``; use it for search (beam,
exhaustive tests).  Implementations:

* :class:`ConstrainedArcEager`, for ``arc-eager`` with ``root="end"``: span and
  arc constraints as the added preconditions of Figure 2, each checked in O(1)
  with precomputed constrained heads and leftmost/rightmost constrained
  dependents, the designated span roots ``r(s)`` and the component count
  ``#CC`` of the current span; designated roots fixed by the arcs are set in
  preprocessing (section 4, "Combining constraints"), and three further O(1)
  preconditions (see the class) remove the dead ends that the plain
  conjunction of span and arc preconditions has.
* :class:`ReachableArcs`, arc constraints for the systems whose dynamic oracle
  is exact and arc-decomposable and accepts a partial gold tree (``-1`` =
  "don't care"): ``arc-eager`` (either root position) and ``arc-hybrid``.
  An action is allowed iff its cost with respect to the constrained arcs alone
  is zero, i.e. it keeps every constrained arc reachable (Goldberg & Nivre
  2013; arc-decomposability makes the individually reachable arcs jointly
  reachable).  Other systems are
  refused with a clear error: arc-standard and Attardi's oracles are not
  arc-decomposable (zero cost over a subset of arcs is not a per-arc test),
  and Covington's oracle (which corrects for cycles over a complete gold
  tree) is not adapted to partial trees here.

File formats
------------
JSON lines (:func:`read_constraints_jsonl`, UTF-8), one object per constrained
sentence, identified by ``"sent_id"`` (the CoNLL-U ``# sent_id``) or
``"index"`` (0-based position in the file), or by both: the sentence at that
index must then have that sent_id (:func:`constraints_for`); two records for
one sentence are an error::

    {"sent_id": "s12", "arcs": [[3, 1, "nsubj"], [0, 3]], "spans": [[4, 7, "root"]]}

The label of an arc and the option of a span (default ``"free"``) may be left
out.  CoNLL-U MISC keys (:func:`constraints_from_misc`), on the token they
concern:

* ``Head=3`` on a dependent: its head must be word 3 (``0``: the root);
  ``HeadLabel=nsubj`` adds the label (only together with ``Head``);
* ``Span=B`` on the first word of a span, ``Span=I`` inside, ``Span=E`` on the
  last word, ``Span=S`` on a one-word span; ``SpanOutside=none|root|free`` on
  the ``B``/``S`` word sets the option (default ``free``).

Only word lines count (not multiword-token ranges or empty nodes).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from .config import read_text_file
from .errors import KgparserError
from .transitions.arc_eager import LEFT, REDUCE, RIGHT, SHIFT, ArcEager, ArcEagerState
from .transitions.arc_hybrid import ArcHybrid
from .transitions.base import NO_HEAD, ROOT, TransitionSystem

OUTSIDE_OPTIONS = ("free", "root", "none")
FREE, SPAN_ROOT_ONLY, NONE_OUTSIDE = OUTSIDE_OPTIONS


class ConstraintError(KgparserError):
    """Constraints that are malformed, inconsistent or unsatisfiable."""


@dataclass(frozen=True, slots=True)
class ArcConstraint:
    head: int
    dep: int
    label: str | None = None


@dataclass(frozen=True, slots=True)
class SpanConstraint:
    first: int
    last: int
    outside: str = FREE


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
        if not _is_int(head) or not _is_int(dep) or not (label is None or isinstance(label, str)):
            self.fail(f"arc constraint {arc!r} needs integer head and dependent and a string label")
        return ArcConstraint(head, dep, label)

    def _span(self, span) -> SpanConstraint:
        if isinstance(span, SpanConstraint):
            return span
        if not isinstance(span, (list, tuple)) or len(span) not in (2, 3):
            self.fail(f"a span constraint must be [first, last] or [first, last, outside], got {span!r}")
        first, last, outside = (*span, FREE) if len(span) == 2 else span
        if not _is_int(first) or not _is_int(last) or outside not in OUTSIDE_OPTIONS:
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


def _rightmost_reached(heads: Sequence[int], own: Sequence[int], deps: Iterable[int]) -> list[int]:
    """For each word, the rightmost of ``own[w]`` over the words ``w`` of its
    subtree in the (acyclic) constraint forest ``heads``, whose words with a
    head among words are ``deps``."""
    reach = list(own)
    if not deps:
        return reach
    depth = _depths(heads, deps)
    for d in sorted(deps, key=depth.__getitem__, reverse=True):  # dependents before their heads
        if reach[d] > reach[heads[d]]:
            reach[heads[d]] = reach[d]
    return reach


def _depths(heads: Sequence[int], deps: Iterable[int]) -> list[int]:
    """Depth of each word in the (acyclic) constraint forest ``heads`` (``0``
    for a word without a constrained head among words), found for ``deps``
    and their ancestors, each word climbed once."""
    depth = [-1] * len(heads)
    for d in deps:
        path, word = [], d
        while depth[word] < 0 and heads[word] > 0:
            path.append(word)
            word = heads[word]
        level = max(depth[word], 0)
        depth[word] = level
        for w in reversed(path):
            level += 1
            depth[w] = level
    return depth


def _covering_arc_ends(heads: Sequence[int], deps: Iterable[int]) -> list[int]:
    """For each word, the right end of the innermost constrained arc strictly
    over it (the root counts as position ``n + 1``; ``n + 1`` if none): a word
    under an arc is dominated by the arc's head, so a head it takes from the
    right lies at or before that end.  The arcs do not cross (checked), so
    writing the arcs' ends over their inner words, longest arc first, leaves
    each word the end of the innermost one (arcs from the root change
    nothing: their end is ``n + 1``); ``deps``: the words with a head among
    words."""
    n = len(heads) - 1
    ends = [n + 1] * (n + 1)
    arcs = sorted(((min(heads[d], d), max(heads[d], d)) for d in deps), key=lambda arc: arc[0] - arc[1])
    for left, right in arcs:
        ends[left + 1:right] = [right] * (right - left - 1)
    return ends


def _is_int(x) -> bool:
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


def forced_arc_labels(forced_label, arc_of, arc_actions, state, actions: Sequence[str]) -> dict | None:
    """The labels that ``forced_label(head, dep)`` forces on the arcs of the
    arc actions among ``actions`` in ``state``, by action; ``None`` when it
    forces none."""
    labels = {a: forced_label(*arc_of(state, a)) for a in actions if a in arc_actions}
    return {a: label for a, label in labels.items() if label is not None} or None


class ConstrainedSystem:
    """A transition system restricted, for one sentence, to the computations
    whose output satisfies the constraints.  See the module docstring."""

    def __init__(self, system: TransitionSystem, constraints: Constraints, n: int):
        self.system = system
        self.constraints = constraints
        self.n = n
        self.required_head = constraints.heads(n)
        self.required_label = constraints.labels(n)

    def initial_state(self, n: int | None = None):
        return self.system.initial_state(self.n if n is None else n)

    def legal_actions(self, state) -> list[str]:
        return self.allowed(state, self.system.legal_actions(state))

    def allowed(self, state, legal: Sequence[str]) -> list[str]:
        raise NotImplementedError

    def forced_label(self, head: int, dep: int) -> str | None:
        """The label the arc ``head -> dep`` must carry (``None``: free)."""
        return self.required_label[dep] if self.required_head[dep] == head else None

    def forced_labels(self, state, actions: Sequence[str]) -> dict | None:
        """The labels that the arcs of ``actions`` (legal in ``state``) must
        carry, by action, or ``None`` when none is forced."""
        return forced_arc_labels(self.forced_label, self.system.arc_of, self.system.arc_actions, state, actions)

    def apply(self, state, action: str, label: str | None = None) -> None:
        """Apply ``action``; an arc constrained with a label gets that label."""
        if action in self.system.arc_actions:
            label = self.forced_label(*self.system.arc_of(state, action)) or label
        self.system.apply(state, action, label)

    def is_final(self, state) -> bool:
        return self.system.is_final(state)

    def arc_of(self, state, action: str) -> tuple[int, int]:
        return self.system.arc_of(state, action)

    def features(self, state) -> list[int]:
        return self.system.features(state)

    def satisfied_by(self, heads: Sequence[int]) -> bool:
        """Whether a final tree (headless words resolved to the root) meets the arcs."""
        return all((ROOT if heads[a.dep] == NO_HEAD else heads[a.dep]) == a.head for a in self.constraints.arcs)


class ReachableArcs(ConstrainedSystem):
    """Arc constraints for any system with an exact, arc-decomposable dynamic
    oracle: allow an action iff it makes no constrained arc unreachable."""

    def __init__(self, system: TransitionSystem, constraints: Constraints, n: int):
        super().__init__(system, constraints, n)
        if isinstance(system, (ArcEager, ArcHybrid)):
            self.oracle = system.dynamic_oracle(self.required_head)
        else:
            constraints.fail(f"arc constraints need a system with an arc-decomposable dynamic oracle "
                             f"(arc-eager, arc-hybrid), not {system.name!r}")

    def allowed(self, state, legal: Sequence[str]) -> list[str]:
        costs = self.oracle.costs(state)
        return [a for a in legal if costs[a] == 0]


class ConstrainedArcEagerState(ArcEagerState):
    """An arc-eager state plus the span bookkeeping of section 4:
    ``span_root[s]``, the designated root of span ``s`` (``-1`` while unknown);
    ``components`` (``#CC``), the number of words of the current span pushed so
    far that have no head inside it; and, for each pushed span word,
    ``component[w]``, the word of its component that has no head inside the
    span, with ``reach[c]``, the rightmost word that component's constrained
    arcs reach."""

    __slots__ = ("span_root", "components", "component", "reach", "chain", "extent")

    def copy(self) -> "ConstrainedArcEagerState":
        new = self._copy_arcs_to(object.__new__(ConstrainedArcEagerState))
        new.stack = self.stack[:]
        new.b = self.b
        new.popped = self.popped[:]
        new.span_root = self.span_root[:]
        new.components = self.components
        new.component = self.component[:]
        new.reach = self.reach[:]
        new.chain = self.chain[:]
        new.extent = self.extent[:]
        return new

    def key(self) -> tuple:
        return (*super().key(), tuple(self.span_root), self.components)


class ConstrainedArcEager(ConstrainedSystem):
    """Figure 2 of the paper: arc-eager with the root at the end of the buffer
    and the added preconditions for arc and span constraints, each O(1).

    Constrained arcs: an action may not take away a constrained head or
    dependent (section 3).  Spans (section 4): the designated root of a span
    takes no head inside it and is not reduced before the span's last word is
    pushed; no other span word takes an outside head; the span's last word is
    pushed only if that leaves one component (``#CC``); NONE / ROOT restrict
    outside dependents.  A word becomes its span's designated root when it
    takes an outside head or (ROOT) an outside dependent, or when the arc
    constraints say so.

    Combining both kinds needs more than the conjunction of the paper's
    preconditions (its section 4 only adds consistency checks); exhaustive
    search finds dead ends without these three additions, each O(1) with
    bookkeeping updated on ``shift``/``right``:

    * *forced span roots*: a headless stack word takes its head from the
      right, beyond every word its component's constrained arcs reach; if they
      reach the span's last word, that head is outside and the component must
      be the span's root, so this may only happen to the span's single
      component (span 1..4 with the arc 3 -> 4 otherwise reaches the dead end
      ``stack [1, 3], buffer [4]``);
    * *possible span roots*: a word under a constrained arc from a span word
      to an outside word, or with its constrained head inside the span, can
      never be the span's root;
    * *heads to the right*: a headless stack word must still have a possible
      head to its right, no further than the nearest constrained arc over it
      (it is dominated by that arc's head), beyond its subtree (which holds
      the whole of any other span one of whose words it holds), and not in a
      span whose option forbids outside dependents (the arc 1 -> 3 with span
      3..3 NONE must not shift word 2, which could then only attach to 3).
    """

    def __init__(self, system: ArcEager, constraints: Constraints, n: int, *, checked: bool = False):
        if not (isinstance(system, ArcEager) and system.root == "end"):
            constraints.fail("span constraints need the arc-eager system with root='end'")
        super().__init__(system, constraints, n)
        if not checked:
            constraints.check(n)
        heads = self.required_head
        # the leftmost constrained dependent of each word on its left (-1: none)
        self.waiting_dep = waiting = [NO_HEAD] * (n + 1)
        self.rightmost_dep = rightmost = [NO_HEAD] * (n + 1)
        for a in constraints.arcs:
            if a.dep < a.head and (waiting[a.head] == NO_HEAD or a.dep < waiting[a.head]):
                waiting[a.head] = a.dep
            if a.dep > rightmost[a.head]:
                rightmost[a.head] = a.dep
        self.spans = sorted(constraints.spans, key=lambda s: s.first) if constraints.spans else []
        self.span_of = [NO_HEAD] * (n + 1)
        for i, s in enumerate(self.spans):
            self.span_of[s.first:s.last + 1] = [i] * (s.last + 1 - s.first)
        self.preset_roots = self._roots_from_arcs()
        inner = {a.dep for a in constraints.arcs if a.head > 0}  # words with a head among words
        self.reach_right = _rightmost_reached(heads, self._fixed_span_ends(), inner)
        self.root_possible = self._possible_span_roots()
        self.cover_end = _covering_arc_ends(heads, inner)
        self.outside_head_slots = self._count_outside_head_slots()
        self._find_word_tables()

    def _find_word_tables(self) -> None:
        """What :meth:`legal_actions` decides by table lookups for the words
        in no span (each list also has the root's entry), besides
        ``waiting_dep`` and ``rightmost_dep``:

        * ``may_shift[w]``: for ``w`` in no span, the preconditions of
          ``shift`` other than its left dependents hold whatever the state: it
          is not constrained to a head on its left, and it can still take a
          head on its right (its head is constrained, or a word that may take
          an outside dependent lies past its subtree and before the end of the
          nearest constrained arc over it, see :meth:`_has_right_head`);
        * ``chain_free[w]``: a headless stack word ``w`` always has a possible
          head to its right (its head is constrained, or it is in no span and
          under no constrained arc): ``right`` may extend its chain."""
        heads, span_of, cover, n = self.required_head, self.span_of, self.cover_end, self.n
        reach, slots = self.reach_right, self.outside_head_slots
        span_words = [w for s in self.spans for w in range(s.first, s.last + 1)]
        self.chain_free = chain_free = [end > n for end in cover]
        for w in span_words:
            chain_free[w] = False
        for a in self.constraints.arcs:
            chain_free[a.dep] = True
        self.may_shift = may_shift = list(chain_free)
        for w in span_words:
            may_shift[w] = False
        for a in self.constraints.arcs:
            if ROOT < a.head < a.dep:
                may_shift[a.dep] = False
        for w in [w for w, end in enumerate(cover) if end <= n]:  # under a constrained arc
            if heads[w] == NO_HEAD and span_of[w] < 0:
                end = cover[w]
                may_shift[w] = reach[w] < end and slots[end] > slots[reach[w]]

    def _roots_from_arcs(self) -> list[int]:
        """Section 4: the designated root of each span fixed by the arcs (a
        span word with an outside head, or under ROOT with an outside
        dependent), ``-1`` where the arcs leave it open."""
        roots = [NO_HEAD] * len(self.spans)
        if not self.spans:
            return roots
        for a in self.constraints.arcs:
            span_head = self.span_of[a.head] if a.head > 0 else NO_HEAD
            span_dep = self.span_of[a.dep]
            if span_head == span_dep:
                continue
            if span_dep >= 0:
                roots[span_dep] = a.dep
            if span_head >= 0 and self.spans[span_head].outside == SPAN_ROOT_ONLY:
                roots[span_head] = a.head
        return roots

    def _fixed_span_ends(self) -> list[int]:
        """For each word, the last word its subtree surely reaches without
        the other arcs: the end of its span if the arcs make it the span's
        root, else itself."""
        ends = list(range(self.n + 1))
        for i, root in enumerate(self.preset_roots):
            if root != NO_HEAD:
                ends[root] = self.spans[i].last
        return ends

    def _possible_span_roots(self) -> list[bool]:
        """Whether each span word may be its span's root as far as the arcs
        say: its constrained head is not inside the span, and no constrained
        arc from a span word to an outside word passes over it (the span root
        dominates every span word, so such an arc would make it dominate its
        own ancestor)."""
        heads, span_of = self.required_head, self.span_of
        possible = [True] * (self.n + 1)
        if not self.spans:
            return possible
        lowest = [s.first for s in self.spans]
        highest = [s.last for s in self.spans]
        for a in self.constraints.arcs:
            h, d = a.head, a.dep
            span = span_of[h] if h > 0 else NO_HEAD
            if span >= 0 and span_of[d] != span:
                if d < self.spans[span].first:
                    lowest[span] = max(lowest[span], h)
                else:
                    highest[span] = min(highest[span], h)
        for span, s in enumerate(self.spans):
            for w in range(s.first, s.last + 1):
                inside_head = heads[w] > 0 and span_of[heads[w]] == span
                possible[w] = lowest[span] <= w <= highest[span] and not inside_head
        return possible

    def _count_outside_head_slots(self) -> list[int]:
        """Prefix counts of the words that may take a dependent from outside
        their span (not in a NONE span; in a ROOT span, a possible root)."""
        if not self.spans:
            return list(range(self.n + 1))
        counts = [0] * (self.n + 1)
        for x in range(1, self.n + 1):
            span = self.span_of[x]
            option = self.spans[span].outside if span >= 0 else FREE
            ok = option == FREE or option == SPAN_ROOT_ONLY and self.root_possible[x]
            counts[x] = counts[x - 1] + ok
        return counts

    def _has_right_head(self, state, word: int, extent: int) -> bool:
        """Whether a headless stack word whose subtree reaches ``extent`` can
        still find a head to its right: not past the end of the nearest
        constrained arc over it, and not a word whose span forbids outside
        dependents."""
        if self.required_head[word] != NO_HEAD:
            return True
        last = self.cover_end[word]
        span = self.span_of[word]
        if span >= 0:
            end = self.spans[span].last
            if extent < min(last, end) and state.span_root[span] != word:
                return True
            if not self._may_become_root(state, word, span):
                return False
            extent = max(extent, end)
        if last > self.n:
            return True
        return extent < last and self.outside_head_slots[last] > self.outside_head_slots[extent]

    def _chain_extent(self, state, chain: int, word: int) -> int:
        """How far right the subtree of the headless stack word ``chain``
        reaches once ``word`` joins it: a word of another span brings its
        whole span along (the span's root is then in the subtree)."""
        extent = max(state.extent[chain], self.reach_right[word])
        span = self.span_of[word]
        if span >= 0 and span != self.span_of[chain]:
            extent = max(extent, self.spans[span].last)
        return extent

    def initial_state(self, n: int | None = None) -> ConstrainedArcEagerState:
        state = object.__new__(ConstrainedArcEagerState)
        ArcEagerState.__init__(state, self.n, [])
        state.span_root = self.preset_roots[:]
        state.components = 0
        state.component = [NO_HEAD] * (self.n + 1)
        state.reach = [NO_HEAD] * (self.n + 1)
        state.chain = [NO_HEAD] * (self.n + 1)
        state.extent = [NO_HEAD] * (self.n + 1)
        return state

    def unconstrained_state(self, n: int) -> ConstrainedArcEagerState:
        """An initial state of this system's state class for a sentence
        without constraints, which the plain arc-eager system advances: a
        decoder that gives such states to the unconstrained sentences of a
        batch keeps its attribute lookups specialized to one class (CPython
        specializes them per class: decoding the test set of the speed
        demonstration with half of the states of each class took about 3%
        more time)."""
        state = object.__new__(ConstrainedArcEagerState)
        ArcEagerState.__init__(state, n, [])
        state.span_root, state.components, state.component, state.reach = [], 0, [], []
        state.chain, state.extent = [], []
        return state

    def _span(self, word: int) -> int:
        return self.span_of[word] if word > 0 else NO_HEAD

    def _may_become_root(self, state, word: int, span: int) -> bool:
        return state.span_root[span] in (NO_HEAD, word) and self.root_possible[word]

    def _may_take_outside_dep(self, state, word: int, span: int) -> bool:
        option = self.spans[span].outside
        if option == FREE:
            return True
        if option == NONE_OUTSIDE:
            return False
        head = state.heads[word]
        inside_head = head != NO_HEAD and self._span(head) == span
        return self._may_become_root(state, word, span) and not inside_head

    def _keeps_constrained_deps(self, state, word: int) -> bool:
        """``word`` leaves the stack: no constrained dependent may be in the buffer."""
        return self.rightmost_dep[word] < state.b

    def _left_deps_done(self, state, word: int) -> bool:
        """``word`` enters the stack: its constrained left dependents are
        attached already (they are popped by ``left`` nearest first, so the
        leftmost is the last)."""
        k = self.waiting_dep[word]
        return k == NO_HEAD or state.heads[k] != NO_HEAD

    def _may_push(self, state, word: int, head: int) -> bool:
        """Push ``word`` (with ``head``, or ``-1`` for shift): the last word of
        a span may only enter if the span is then one component, and a
        component that must become the span's root must be its only one."""
        span = self.span_of[word]
        if span < 0:
            return True
        components = self._components_after_push(state, word, head)
        if word == self.spans[span].last and components != 1:
            return False
        top = self._forced_top(state, word, head)
        return top == NO_HEAD or (components == 1 and self._may_become_root(state, top, span))

    def _forced_top(self, state, word: int, head: int) -> int:
        """The component word that pushing ``word`` forces to be the root of
        its span (``-1`` if none)."""
        span = self.span_of[word]
        joins = head != NO_HEAD and self._span(head) == span
        top = state.component[head] if joins else word
        reach = max(state.reach[top], self.reach_right[word]) if joins else self.reach_right[word]
        if reach >= self.spans[span].last or state.span_root[span] == word:
            return top
        return NO_HEAD

    def _components_after_push(self, state, word: int, head: int) -> int:
        span = self.span_of[word]
        if head != NO_HEAD and self._span(head) == span:
            return state.components
        return 1 if word == self.spans[span].first else state.components + 1

    def _left_ok(self, state, s0: int, b0: int) -> bool:
        required = self.required_head[s0]
        if required not in (NO_HEAD, b0) or not self._keeps_constrained_deps(state, s0):
            return False
        si, sj = self.span_of[s0], self._span(b0)
        if si >= 0:
            if si == sj:
                if state.span_root[si] == s0:
                    return False
            elif not self._may_become_root(state, s0, si):
                return False
        return sj < 0 or si == sj or self._may_take_outside_dep(state, b0, sj)

    def _right_ok(self, state, s0: int, b0: int) -> bool:
        required = self.required_head[b0]
        if required not in (NO_HEAD, s0) or not self._left_deps_done(state, b0):
            return False
        si, sj = self.span_of[s0], self.span_of[b0]
        if sj >= 0:
            if si == sj:
                if state.span_root[sj] == b0:
                    return False
            elif not self._may_become_root(state, b0, sj):
                return False
        if si >= 0 and si != sj and not self._may_take_outside_dep(state, s0, si):
            return False
        chain = state.chain[s0]
        if not self._has_right_head(state, chain, self._chain_extent(state, chain, b0)):
            return False
        return self._may_push(state, b0, s0)

    def _reduce_ok(self, state, s0: int, b0: int) -> bool:
        if not self._keeps_constrained_deps(state, s0):
            return False
        si = self.span_of[s0]
        return not (si >= 0 and self._span(b0) == si and state.span_root[si] == s0)

    def _shift_ok(self, state, b0: int) -> bool:
        required = self.required_head[b0]
        if ROOT < required < b0 or not self._left_deps_done(state, b0):
            return False
        if not self._has_right_head(state, b0, self.reach_right[b0]):
            return False
        return self._may_push(state, b0, NO_HEAD)

    def legal_actions(self, state) -> list[str]:
        """The legal actions whose preconditions hold, in one pass (the
        decoder's call in every state), in arc-eager's order.  Where no span
        is involved (``s0``, ``b0`` and the bottom of ``s0``'s chain in no
        span) the preconditions are inlined table lookups
        (:meth:`_find_word_tables`); otherwise the full checks decide."""
        b, stack, heads, span_of = state.b, state.stack, state.heads, self.span_of
        if b > self.n:  # only the root is left: s0 takes it as head, or is reduced
            if not stack:
                return []
            s0 = stack[-1]
            if heads[s0] != NO_HEAD:
                # no constrained dependent is left in the buffer, and the root is in no span
                return [REDUCE]
            if span_of[s0] < 0:
                return [LEFT] if self.required_head[s0] <= ROOT else []
            return [LEFT] if self._left_ok(state, s0, ROOT) else []
        waiting = self.waiting_dep[b]
        deps_done = waiting < 0 or heads[waiting] != NO_HEAD  # b0's constrained left dependents are attached
        if not stack:
            return [SHIFT] if (self.may_shift[b] and deps_done if span_of[b] < 0 else self._shift_ok(state, b)) else []
        s0 = stack[-1]
        chain = state.chain[s0]
        if span_of[b] >= 0 or span_of[s0] >= 0 or span_of[chain] >= 0:
            return self._checked_actions(state, s0, b)
        # no span involved: the arc preconditions and the chain's right head, inlined
        allowed = [SHIFT] if deps_done and self.may_shift[b] else []
        if heads[s0] == NO_HEAD:
            required = self.required_head[s0]
            if (required == NO_HEAD or required == b) and self.rightmost_dep[s0] < b:
                allowed.append(LEFT)
        elif self.rightmost_dep[s0] < b:
            allowed.append(REDUCE)
        required = self.required_head[b]
        if (required == NO_HEAD or required == s0) and deps_done and (
                self.chain_free[chain] or self._covered_chain_ok(state, chain, b)):
            allowed.append(RIGHT)
        return allowed

    def _checked_actions(self, state, s0: int, b0: int) -> list[str]:
        """The legal actions (``b0`` a word, ``s0`` on the stack) that pass
        the full checks."""
        allowed = [SHIFT] if self._shift_ok(state, b0) else []
        if state.heads[s0] == NO_HEAD:
            if self._left_ok(state, s0, b0):
                allowed.append(LEFT)
        elif self._reduce_ok(state, s0, b0):
            allowed.append(REDUCE)
        if self._right_ok(state, s0, b0):
            allowed.append(RIGHT)
        return allowed

    def forced_labels(self, state, actions: Sequence[str]) -> dict | None:
        """:meth:`ConstrainedSystem.forced_labels` with arc-eager's two arcs
        inlined (the decoder asks in every state it scores); the answer may
        also name an arc action that is not in ``actions``."""
        stack = state.stack
        if not stack:
            return None
        s0, b = stack[-1], state.b
        required, labels = self.required_head, self.required_label
        if b > self.n:
            return {LEFT: labels[s0]} if required[s0] == ROOT and labels[s0] is not None else None
        left = labels[s0] if required[s0] == b else None
        right = labels[b] if required[b] == s0 else None
        if left is None and right is None:
            return None
        return {LEFT: left, RIGHT: right}

    def _covered_chain_ok(self, state, chain: int, b0: int) -> bool:
        """:meth:`_has_right_head` of a chain bottom in no span, without a
        constrained head and under a constrained arc, once ``b0`` (in no span)
        joins its chain."""
        last = self.cover_end[chain]
        extent = max(state.extent[chain], self.reach_right[b0])
        return extent < last and self.outside_head_slots[last] > self.outside_head_slots[extent]

    def allowed(self, state, legal: Sequence[str]) -> list[str]:
        """The ``legal`` actions whose preconditions hold (:meth:`legal_actions`)."""
        ok = self.legal_actions(state)
        return [action for action in legal if action in ok]

    def apply(self, state, action: str, label: str | None = None) -> None:
        """The transition and its bookkeeping; a constrained arc gets its label
        (:meth:`ConstrainedSystem.apply` and :meth:`ArcEager.apply`, inlined:
        this runs once per transition)."""
        b, stack, span_of = state.b, state.stack, self.span_of
        if action == SHIFT:
            if span_of[b] >= 0:
                self._count_push(state, b, NO_HEAD)
            state.chain[b] = b
            state.extent[b] = self.reach_right[b]
            stack.append(b)
            state.b = b + 1
            return
        if action == RIGHT:
            s0 = stack[-1]
            if span_of[b] >= 0:
                self._count_push(state, b, s0)
            chain = state.chain[b] = state.chain[s0]
            if span_of[b] >= 0:
                state.extent[chain] = self._chain_extent(state, chain, b)
            elif self.reach_right[b] > state.extent[chain]:
                state.extent[chain] = self.reach_right[b]
            if span_of[s0] >= 0 or span_of[b] >= 0:
                self._note_link(state, s0, b)
            if self.required_head[b] == s0:
                label = self.required_label[b] or label
            state.add_arc(s0, b, label)
            stack.append(b)
            state.b = b + 1
            return
        if action == REDUCE:
            state.popped[stack.pop()] = 1
            return
        if action != LEFT:
            raise ValueError(f"arc-eager has no action {action!r}")
        s0 = stack.pop()
        state.popped[s0] = 1
        b0 = b if b <= self.n else ROOT  # span_of[ROOT] is -1: the root is in no span
        if span_of[s0] >= 0 and span_of[s0] == span_of[b0]:
            state.components -= 1
        if span_of[s0] >= 0 or span_of[b0] >= 0:
            self._note_link(state, b0, s0)
        if self.required_head[s0] == b0:
            label = self.required_label[s0] or label
        state.add_arc(b0, s0, label)

    def _count_push(self, state, word: int, head: int) -> None:
        span = self.span_of[word]
        if span < 0:
            return
        top = self._forced_top(state, word, head)
        if top != NO_HEAD:
            state.span_root[span] = top
        state.components = self._components_after_push(state, word, head)
        if head != NO_HEAD and self._span(head) == span:
            root = state.component[word] = state.component[head]
            state.reach[root] = max(state.reach[root], self.reach_right[word])
        else:
            state.component[word] = word
            state.reach[word] = self.reach_right[word]

    def _note_link(self, state, head: int, dep: int) -> None:
        """Record designated roots set by an arc that leaves a span."""
        sh, sd = self._span(head), self.span_of[dep]
        if sh == sd:
            return
        if sd >= 0:
            state.span_root[sd] = dep
        if sh >= 0 and self.spans[sh].outside == SPAN_ROOT_ONLY:
            state.span_root[sh] = head

    def satisfied_by(self, heads: Sequence[int]) -> bool:
        if not super().satisfied_by(heads):
            return False
        for i, s in enumerate(self.spans):
            tops = [w for w in range(s.first, s.last + 1) if self._span(heads[w]) != i]
            if len(tops) != 1:
                return False
            givers = {heads[d] for d in range(1, self.n + 1) if self._span(heads[d]) == i != self.span_of[d]}
            if s.outside == NONE_OUTSIDE and givers or s.outside == SPAN_ROOT_ONLY and givers - set(tops):
                return False
        return True

    def check_satisfiable(self) -> None:
        """One greedy run: the system is sound and complete, so it reaches a
        final state meeting the constraints iff some projective tree does.
        Disjoint spans alone (checked) always are: attach every span word to
        its span's last word and the other words to the root."""
        if not self.constraints.arcs:
            return
        state = self.initial_state()
        while not self.is_final(state):
            legal = self.legal_actions(state)
            if not legal:
                self.constraints.fail("no projective tree satisfies these constraints")
            self.apply(state, legal[0])
        if not self.satisfied_by(state.heads):
            self.constraints.fail("no projective tree satisfies these constraints")


def unsupported(system: TransitionSystem, *, spans: bool, arcs: bool) -> str | None:
    """Why ``system`` cannot enforce span (``spans``) or arc (``arcs``)
    constraints, or ``None`` when it can."""
    if isinstance(system, ArcEager) and system.root == "end":
        return None
    if spans:
        return f"span constraints need arc-eager with root='end', not {system!r}"
    if arcs and not isinstance(system, (ArcEager, ArcHybrid)):
        return (f"arc constraints need a system with an arc-decomposable dynamic oracle "
                f"(arc-eager, arc-hybrid), not {system.name!r}")
    return None


def constrain(system: TransitionSystem, constraints: Constraints | None, n: int, *,
              check_satisfiable: bool = True):
    """The per-sentence view of ``system`` restricted by ``constraints``
    (checked first); ``system`` itself when there are none.

    ``check_satisfiable=False`` leaves out the satisfiability run for
    :class:`ConstrainedArcEager` (every other check is made): its caller's own
    run is then the exact test, stuck (no allowed action) or ending in a state
    that misses the constraints (:meth:`ConstrainedSystem.satisfied_by`) iff no
    projective tree satisfies them."""
    if not constraints:
        return system
    if isinstance(system, ArcEager) and system.root == "end":
        constraints.check_structure(n)  # then check() = this system's own satisfiability run
        constrained = ConstrainedArcEager(system, constraints, n, checked=True)
        if check_satisfiable:
            constrained.check_satisfiable()
        return constrained
    constraints.check(n)
    reason = unsupported(system, spans=bool(constraints.spans), arcs=bool(constraints.arcs))
    if reason:
        constraints.fail(reason)
    return ReachableArcs(system, constraints, n)


class ConstraintFilter:
    """The constraints of one sentence as a decoding filter for a parser that
    builds states with the plain system and calls :meth:`allowed_actions` in
    every non-final state it reaches (``kgparser.parser``'s protocol:
    ``allowed_actions(state, legal)``, ``forced_label(head, dep)``; calling
    the object is ``allowed_actions``).

    Span bookkeeping of :class:`ConstrainedArcEager` lives in a private shadow
    state that follows the parser's state one transition per call (the
    transition is read off the state in O(1)); :class:`ReachableArcs` needs no
    bookkeeping and reads the parser's state directly.

    The constrained system (:attr:`constrained`) is built when first used
    unless given; :meth:`decoding_system` lends one without keeping it.
    """

    __slots__ = ("system", "constraints", "n", "_constrained", "satisfiable_checked", "follows_states", "shadow")

    def __init__(self, system: TransitionSystem, constraints: Constraints, n: int, *,
                 constrained: ConstrainedSystem | None = None, satisfiable_checked: bool = True):
        self.system, self.constraints, self.n = system, constraints, n
        self._constrained = constrained
        #: False when the satisfiability run was left to the decoder (see :func:`constrain`)
        self.satisfiable_checked = satisfiable_checked
        #: whether the filter follows the parser's states in a shadow state
        #: (made on the first call: a parser that lets the constrained system
        #: advance its own states never needs it); without a given system, the
        #: filter's is a :class:`ConstrainedArcEager`
        self.follows_states = constrained is None or isinstance(constrained, ConstrainedArcEager)
        self.shadow = None

    @property
    def constrained(self) -> ConstrainedSystem:
        """The constrained system of the sentence (made on first use, then kept)."""
        if self._constrained is None:
            self._constrained = self.decoding_system()
        return self._constrained

    def decoding_system(self) -> ConstrainedSystem:
        """The constrained system if made already, else a new one that the
        filter does not keep: a decoder that takes one per batch lets the
        per-word tables go with the batch."""
        if self._constrained is not None:
            return self._constrained
        return ConstrainedArcEager(self.system, self.constraints, self.n, checked=True)

    def allowed_actions(self, state, legal: Sequence[str]) -> list[str]:
        if not self.follows_states:
            return self.constrained.allowed(state, legal)
        if self.shadow is None:
            self.shadow = self.constrained.initial_state()
        self._follow(state)
        return self.constrained.allowed(self.shadow, legal)

    __call__ = allowed_actions

    def forced_label(self, head: int, dep: int) -> str | None:
        return self.constrained.forced_label(head, dep)

    def _follow(self, state) -> None:
        """Replay on the shadow the transition that led to ``state``."""
        shadow = self.shadow
        if state.b == shadow.b + 1 and len(state.stack) == len(shadow.stack) + 1:
            action = SHIFT if state.heads[shadow.b] == NO_HEAD else RIGHT
        elif state.b == shadow.b and len(state.stack) == len(shadow.stack) - 1:
            action = LEFT if shadow.heads[shadow.stack[-1]] == NO_HEAD else REDUCE
        elif state.b == shadow.b and len(state.stack) == len(shadow.stack):
            return
        else:
            raise ValueError("ConstraintFilter.allowed_actions must be called in every state the parser reaches")
        dep = state.b - 1 if action in (SHIFT, RIGHT) else shadow.stack[-1]
        self.constrained.apply(shadow, action, state.labels[dep])


def constraint_filter(system: TransitionSystem, constraints: Constraints | None, n: int, *,
                      check_satisfiable: bool = True) -> ConstraintFilter | None:
    """The decoding filter for one sentence (``None`` without constraints);
    the constraints are checked first (``check_satisfiable``: see
    :func:`constrain`; without the satisfiability run, the filter's
    :class:`ConstrainedArcEager` is built when first used)."""
    if not constraints:
        return None
    if isinstance(system, ArcEager) and system.root == "end" and not check_satisfiable:
        constraints.check_structure(n)
        return ConstraintFilter(system, constraints, n, satisfiable_checked=False)
    constrained = constrain(system, constraints, n, check_satisfiable=check_satisfiable)
    return ConstraintFilter(system, constraints, n, constrained=constrained,
                            satisfiable_checked=check_satisfiable or not isinstance(constrained, ConstrainedArcEager))


class ConstraintTable(dict):
    """The records of a side file by ``sent_id`` (str) or ``index`` (int); a
    record that gives both is kept under its sent_id and pinned to its index
    (``pins``: index -> sent_id; ``pinned_at``: sent_id -> index)."""

    def __init__(self):
        super().__init__()
        self.pins: dict[int, str] = {}
        self.pinned_at: dict[str, int] = {}

    def add(self, keys: list, constraints: Constraints) -> None:
        self[keys[0]] = constraints
        if len(keys) == 2:
            sent_id, index = keys
            self.pins[index], self.pinned_at[sent_id] = sent_id, index


def read_constraints_jsonl(path: str) -> ConstraintTable:
    """Constraints from a JSON-lines side file (UTF-8), keyed by ``sent_id`` or
    ``index``; see the module docstring for the format.  Two records for one
    sent_id or one index are an error."""
    table, first_line = ConstraintTable(), {}
    for number, line in enumerate(read_text_file(path, ConstraintError, "constraints file").split("\n"), 1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        keys, constraints = _record_constraints(_json_record(line, where), where)
        for key in keys:
            if key in first_line:
                raise ConstraintError(f"{where}: a second record for {_key_name(key)} "
                                      f"(the first is on line {first_line[key]})")
            first_line[key] = number
        table.add(keys, constraints)
    return table


def _json_record(line: str, where: str):
    try:
        return json.loads(line)
    except json.JSONDecodeError as err:
        problem = f"{err.msg} at column {err.colno}"
    except ValueError as err:  # an integer of over 4300 digits
        problem = str(err).partition(";")[0]
    except RecursionError:
        problem = "nested too deeply"
    raise ConstraintError(f"{where}: not valid JSON ({problem})")


def _key_name(key) -> str:
    return f"sent_id {key!r}" if isinstance(key, str) else f"index {key}"


def _record_constraints(record, where: str) -> tuple[list, Constraints]:
    """The keys (sent_id and/or index, in this order) and the constraints of a record."""
    if not isinstance(record, Mapping):
        raise ConstraintError(f"{where}: expected a JSON object, got {type(record).__name__}")
    unknown = set(record) - {"sent_id", "index", "arcs", "spans"}
    if unknown:
        raise ConstraintError(f"{where}: unknown key(s) {sorted(unknown)}; expected sent_id/index, arcs, spans")
    keys = _record_keys(record, where)
    for field in ("arcs", "spans"):
        if not isinstance(record.get(field, []), list):
            raise ConstraintError(f"{where}: '{field}' must be a list")
    return keys, Constraints(record.get("arcs", []), record.get("spans", []), where=f"{where} ({keys[0]!r})")


def _record_keys(record: Mapping, where: str) -> list:
    if "sent_id" in record and not isinstance(record["sent_id"], str):
        raise ConstraintError(f"{where}: sent_id must be a string")
    if "index" in record and (not _is_int(record["index"]) or record["index"] < 0):
        raise ConstraintError(f"{where}: index must be a non-negative integer")
    keys = [record[name] for name in ("sent_id", "index") if name in record]
    if not keys:
        raise ConstraintError(f"{where}: needs 'sent_id' or 'index' to name its sentence")
    return keys


def constraints_for(table: ConstraintTable, sent_id: str | None, index: int) -> Constraints | None:
    """The side-file constraints of the sentence at ``index`` (0-based) with
    ``sent_id``: its record by sent_id or by index (one of them; a record pinned
    to another index is not for it).  A record that gives both must name this
    sentence: a :class:`ConstraintError` says what the sentence has instead."""
    if index in table.pins:
        return _pinned_record(table, sent_id, index)
    by_id = table.get(sent_id) if sent_id is not None and sent_id not in table.pinned_at else None
    by_index = table.get(index)
    if by_id is not None and by_index is not None:
        raise ConstraintError(f"{by_index.where}: a second record for the sentence at index {index}, "
                              f"besides {by_id.where} for its sent_id")
    return by_id if by_id is not None else by_index


def _pinned_record(table: ConstraintTable, sent_id: str | None, index: int) -> Constraints:
    pinned = table.pins[index]
    record = table[pinned]
    if pinned != sent_id:
        actual = "no sent_id" if sent_id is None else f"sent_id {sent_id!r}"
        raise ConstraintError(f"{record.where}: gives index {index} and sent_id {pinned!r}, but the sentence "
                              f"at index {index} has {actual}")
    return record


def constraints_from_misc(misc: Sequence, where: str = "sentence") -> Constraints:
    """Constraints from the MISC column of words ``1..n`` (``misc[0]`` is word 1):
    each entry a ``"Key=Value|..."`` string, a dict (as the ``conllu`` package
    gives) or ``None``/``"_"``."""
    arcs, spans, open_span = [], [], None
    for word, entry in enumerate(misc, 1):
        fields = _misc_fields(entry)
        at = f"{where}, word {word}"
        if "Head" in fields:
            head = fields["Head"]
            if not head.isdigit():
                raise ConstraintError(f"{at}: Head={head!r} is not a word number")
            arcs.append((int(head), word, fields.get("HeadLabel")))
        elif "HeadLabel" in fields:
            raise ConstraintError(f"{at}: HeadLabel needs Head on the same word")
        tag = fields.get("Span")
        outside = fields.get("SpanOutside", FREE)
        if outside not in OUTSIDE_OPTIONS:
            raise ConstraintError(f"{at}: SpanOutside={outside!r}, expected one of {OUTSIDE_OPTIONS}")
        if tag is None:
            if open_span is not None:
                raise ConstraintError(f"{at}: span opened at word {open_span[0]} is not closed (Span=E)")
            continue
        if tag in ("B", "S"):
            if open_span is not None:
                raise ConstraintError(f"{at}: Span={tag} inside the span opened at word {open_span[0]}")
            open_span = (word, outside)
        elif tag not in ("I", "E"):
            raise ConstraintError(f"{at}: Span={tag!r}, expected B, I, E or S")
        elif open_span is None:
            raise ConstraintError(f"{at}: Span={tag} without a Span=B before it")
        if tag in ("E", "S"):
            spans.append((open_span[0], word, open_span[1]))
            open_span = None
    if open_span is not None:
        raise ConstraintError(f"{where}: span opened at word {open_span[0]} is not closed (Span=E)")
    return Constraints(arcs, spans, where=where)


def _misc_fields(entry) -> dict[str, str]:
    if entry is None or entry == "_":
        return {}
    if isinstance(entry, Mapping):
        return {k: "" if v is None else str(v) for k, v in entry.items()}
    fields = {}
    for item in str(entry).split("|"):
        key, sep, value = item.partition("=")
        if sep:
            fields[key] = value
    return fields
