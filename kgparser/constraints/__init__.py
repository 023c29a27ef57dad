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
constraints, iff no projective tree satisfies them (``kgparser.inference``
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

Modules
-------
:mod:`.records` (single arc and span constraints, :class:`ConstraintError`),
:mod:`.sentence` (:class:`Constraints` and their validation), :mod:`.system`
(the :class:`ConstrainedSystem` interface), :mod:`.arc_eager`
(:class:`ConstrainedArcEager`) with :mod:`.forest` (its tables over the
constrained arcs), :mod:`.reachable_arcs` (:class:`ReachableArcs`),
:mod:`.filtering` (:func:`constrain`, :class:`ConstraintFilter`), :mod:`.jsonl`
and :mod:`.misc` (the file formats).  Every name is importable from
``kgparser.constraints``.
"""
from __future__ import annotations

from .arc_eager import ConstrainedArcEager, ConstrainedArcEagerState
from .filtering import ConstraintFilter, constrain, constraint_filter, unsupported
from .jsonl import ConstraintTable, constraints_for, read_constraints_jsonl
from .misc import constraints_from_misc
from .reachable_arcs import ReachableArcs
from .records import FREE, NONE_OUTSIDE, OUTSIDE_OPTIONS, SPAN_ROOT_ONLY, ArcConstraint, ConstraintError, SpanConstraint
from .sentence import Constraints
from .system import ConstrainedSystem, forced_arc_labels

__all__ = [
    "OUTSIDE_OPTIONS", "FREE", "SPAN_ROOT_ONLY", "NONE_OUTSIDE",
    "ConstraintError", "ArcConstraint", "SpanConstraint", "Constraints",
    "ConstrainedSystem", "forced_arc_labels", "ReachableArcs", "ConstrainedArcEagerState", "ConstrainedArcEager",
    "unsupported", "constrain", "ConstraintFilter", "constraint_filter",
    "ConstraintTable", "read_constraints_jsonl", "constraints_for", "constraints_from_misc",
]
