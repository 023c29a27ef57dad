"""The small shared core every transition system builds on.

A *state* (configuration) holds the arcs built so far; each system subclasses
:class:`State` with its own stacks, buffers or lists.  A *system* knows the
actions, their preconditions and effects, the feature positions the model
reads, and builds a static and a dynamic oracle for a gold tree.

Conventions (the public contract of ``docs/transition-contract.md``):

* words are numbered ``1..n``; ``0`` is the artificial root;
* ``state.heads[d]`` is the head of ``d`` or :data:`NO_HEAD`, and
  ``state.labels[d]`` the label of that arc (``None`` while unlabeled);
* in a final state, every word still without a head is taken as a dependent
  of the root (:func:`resolved_heads`);
* the loss of a tree is its unlabeled Hamming distance to the gold tree; the
  loss of a state is the least loss of a final state reachable from it, and the
  cost of an action is ``loss(after) - loss(before)``.
"""
from __future__ import annotations

from typing import ClassVar, Collection, Generic, Hashable, Protocol, Sequence, TypeVar

from ..errors import KgparserError

ROOT = 0
NO_HEAD = -1
#: where a system with a ``root`` option keeps the artificial root: at the bottom of
#: the stack (``"first"``) or after the last word of the buffer (``"end"``)
ROOT_POSITIONS = ("first", "end")

#: the value of :meth:`State.key`: hashable, and equal exactly for equal states
StateKey = tuple[Hashable, ...]
#: a state class, for the systems, oracles and helpers written for any of them
StateT = TypeVar("StateT", bound="State")
#: the state class an oracle reads (it takes the states of its system, or of a superclass)
StateT_contra = TypeVar("StateT_contra", bound="State", contravariant=True)


class State:
    """Arcs built so far, plus each word's leftmost and rightmost dependent.

    ``leftmost[h]`` / ``rightmost[h]`` are the smallest / largest index of a
    dependent attached to ``h`` so far (``-1`` if none); the model reads them
    as features.  Systems add their own slots in subclasses and must extend
    :meth:`copy` and :meth:`key`.
    """

    __slots__ = ("heads", "labels", "leftmost", "rightmost")

    def __init__(self, n: int):
        self.heads = [NO_HEAD] * (n + 1)
        self.labels: list[str | None] = [None] * (n + 1)
        self.leftmost = [NO_HEAD] * (n + 1)
        self.rightmost = [NO_HEAD] * (n + 1)

    @property
    def n(self) -> int:
        """Number of words in the sentence."""
        return len(self.heads) - 1

    def add_arc(self, head: int, dep: int, label: str | None) -> None:
        """Attach ``dep`` to ``head``; the caller has checked the preconditions."""
        self.heads[dep] = head
        self.labels[dep] = label
        if self.leftmost[head] == NO_HEAD or dep < self.leftmost[head]:
            self.leftmost[head] = dep
        if dep > self.rightmost[head]:
            self.rightmost[head] = dep

    def _copy_arcs_to(self, other: StateT) -> StateT:
        other.heads = self.heads[:]
        other.labels = self.labels[:]
        other.leftmost = self.leftmost[:]
        other.rightmost = self.rightmost[:]
        return other

    def copy(self: StateT) -> StateT:
        """An independent copy (subclasses copy their own structures too)."""
        return self._copy_arcs_to(object.__new__(type(self)))

    def key(self) -> StateKey:
        """A hashable value that fully determines the state."""
        return (tuple(self.heads), tuple(self.labels))


class StackBufferState(State):
    """A stack with the root at its bottom and a buffer ``b..n`` of words not
    yet read: the configuration of the systems that shift words in order
    (arc-standard, arc-hybrid, Attardi)."""

    __slots__ = ("stack", "b")

    def __init__(self, n: int):
        super().__init__(n)
        self.stack = [ROOT]
        self.b = 1

    def copy(self) -> StackBufferState:
        new = self._copy_arcs_to(object.__new__(type(self)))
        new.stack = self.stack[:]
        new.b = self.b
        return new

    def key(self) -> StateKey:
        return (tuple(self.stack), self.b, tuple(self.heads), tuple(self.labels))

    def b0(self) -> int:
        """The first buffer word, ``-1`` when the buffer is empty."""
        return self.b if self.b < len(self.heads) else NO_HEAD


def stack_top(stack: Sequence[int], depth: int) -> list[int]:
    """The ``depth`` topmost stack items, top first, ``-1`` below the bottom
    (the stack positions s0, s1, ... that the model reads)."""
    size = len(stack)
    return [stack[-k] if k <= size else NO_HEAD for k in range(1, depth + 1)]


def resolved_heads(heads: Sequence[int]) -> list[int]:
    """Heads of a final state, with every headless word attached to the root."""
    return [NO_HEAD] + [ROOT if h == NO_HEAD else h for h in heads[1:]]


def hamming_loss(heads: Sequence[int], gold_heads: Sequence[int]) -> int:
    """Number of words whose (resolved) head differs from the gold head."""
    return sum(
        1 for d in range(1, len(gold_heads)) if (ROOT if heads[d] == NO_HEAD else heads[d]) != gold_heads[d]
    )


class StaticOracle(Protocol[StateT_contra]):
    def next_action(self, state: StateT_contra) -> str: ...


class DynamicOracle(Protocol[StateT_contra]):
    """``costs(state)``: the cost of every legal action.  An oracle that bounds
    its work per call and answers some calls approximately (Attardi's
    ``work_limit``) counts those calls in an int attribute ``fallbacks``,
    which training reports per epoch."""

    def costs(self, state: StateT_contra) -> dict[str, int]: ...


class TransitionSystem(Generic[StateT]):
    """Base class of every transition system, over states of class ``StateT``.

    Subclasses set the class attributes and implement the methods that raise
    ``NotImplementedError``; options are keyword arguments of ``__init__``.
    """

    #: set by :func:`kgparser.transitions.register`
    name: ClassVar[str] = ""
    #: every unlabeled action, in a fixed order (the model's output inventory)
    actions: ClassVar[tuple[str, ...]] = ()
    #: the actions that build an arc and therefore take a label
    arc_actions: ClassVar[frozenset[str]] = frozenset()
    #: names of the positions :meth:`features` returns, e.g. ("s0", "s1", "s2", "b0")
    feature_names: ClassVar[tuple[str, ...]] = ()
    #: actions decided by the static oracle even in dynamic training, and never explored
    static_actions: ClassVar[frozenset[str]] = frozenset()

    def initial_state(self, n: int) -> StateT:
        raise NotImplementedError

    def legal_actions(self, state: StateT) -> list[str]:
        raise NotImplementedError

    def apply(self, state: StateT, action: str, label: str | None = None) -> None:
        """Perform ``action`` on ``state`` in place; arc actions record ``label``."""
        raise NotImplementedError

    def is_final(self, state: StateT) -> bool:
        raise NotImplementedError

    def arc_of(self, state: StateT, action: str) -> tuple[int, int]:
        """The arc ``(head, dependent)`` that arc action ``action`` would add."""
        raise NotImplementedError

    def features(self, state: StateT) -> list[int]:
        """Word index at each of :attr:`feature_names` (``-1`` where empty)."""
        raise NotImplementedError

    def can_build(self, gold_heads: Sequence[int]) -> bool:
        """Whether the system can derive exactly this tree."""
        raise NotImplementedError

    def static_oracle(self, gold_heads: Sequence[int]) -> StaticOracle[StateT]:
        raise NotImplementedError

    def dynamic_oracle(self, gold_heads: Sequence[int]) -> DynamicOracle[StateT]:
        raise NotImplementedError

    def options(self) -> dict[str, object]:
        """The options this instance was built with (for configs and checkpoints)."""
        return {}

    def final_loss(self, heads: Sequence[int], gold_heads: Sequence[int]) -> int:
        """The loss of a final state's ``heads`` that the dynamic oracle's costs
        are exact for: the Hamming loss, headless words on the root (docs/transition-contract.md);
        with a ``headless: wrong`` option (:func:`headless_option`), every word
        whose head differs from gold, a headless one included."""
        if getattr(self, "headless", HEADLESS_ROOT) == HEADLESS_WRONG:
            return sum(1 for d in range(1, len(gold_heads)) if heads[d] != gold_heads[d])
        return hamming_loss(heads, gold_heads)

    @property
    def has_arc_probes(self) -> bool:
        """Whether the system overrides :meth:`arc_probe` (the decoder skips the
        probing loop for those that do not)."""
        return type(self).arc_probe is not TransitionSystem.arc_probe

    def arc_probe(self, state: StateT, head: int, dep: int) -> tuple[list[int], str] | None:
        """Feature positions of a configuration, near ``state`` (a final state), in
        which arc action ``action`` adds ``head -> dep``, as ``(positions, action)``;
        ``None`` where the system cannot say (the default).  The decoder scores these
        to attach the words a final state leaves loose (:mod:`kgparser.inference.tree_repair`,
        ``decoding.root_choice: scored``); ``head`` 0 asks for a root arc."""
        return None

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"get_system({self.name!r}{', ' if opts else ''}{opts})"


class BufferIndexState(Protocol):
    """A state whose buffer is the words ``b..n`` (:class:`RootPositionOption`)."""

    @property
    def b(self) -> int: ...

    @property
    def heads(self) -> Sequence[int]: ...


class RootPositionOption:
    """The ``root`` option of the systems that read words in order from a buffer
    ``b..n`` (``state.b``) and can keep the root either at the bottom of the stack
    (``"first"``) or after word ``n`` as the last buffer item (``"end"``,
    Ballesteros & Nivre 2013, "Going to the roots of dependency parsing")."""

    #: the system's name (a :class:`TransitionSystem` sets it)
    name: ClassVar[str]

    def __init__(self, root: str = "first"):
        if root not in ROOT_POSITIONS:
            raise KgparserError(f"{self.name} option 'root' must be one of {ROOT_POSITIONS}, got {root!r}")
        self.root = root
        self.root_first = root == "first"

    def options(self) -> dict[str, object]:
        return {"root": self.root}

    def buffer_front(self, state: BufferIndexState) -> int:
        """``b0``: a word, the root (``0``, root at the end) or ``-1`` (empty)."""
        if state.b < len(state.heads):
            return state.b
        return NO_HEAD if self.root_first else ROOT


class StackBufferSystem(TransitionSystem[StackBufferState]):
    """Base of the systems over :class:`StackBufferState` that read words in
    order and end with an empty buffer and only the root on the stack
    (arc-standard, arc-hybrid, Attardi)."""

    def initial_state(self, n: int) -> StackBufferState:
        return StackBufferState(n)

    def is_final(self, state: StackBufferState) -> bool:
        return state.b >= len(state.heads) and len(state.stack) == 1


# --- oracle tie-breaks --------------------------------------------------------
#
# Training takes every least-cost action as correct and follows the one the
# model scores best.  Where several actions cost 0 and some of them only
# lengthen the computation (Covington's no-arc while shift is free, 2-Planar's
# switch or reduce), the model learns the long way round.  A *tie-break* is a
# secondary cost that narrows the zero-cost actions without ever changing
# which actions are optimal for the primary loss (the Hamming loss, or the
# loss the paper's oracle is exact for, e.g. 2-Planar's relative to planes):
#
# * ``exact_costs(state)``: the primary costs, exact as the papers give them;
# * ``costs(state)``: the same plus 1 on each zero-cost action the secondary
#   rules disfavour, never on all of them, so the least cost stays the exact
#   least cost and the actions at it (``preferred(state)``) are a non-empty
#   subset of the exact zero-cost actions; trainers that take the least-cost
#   actions as correct need no change.
#
# Values of the ``tie_break`` option: ``"none"`` (the papers' oracles);
# ``"shortest"`` (the zero-cost actions after which a minimum-loss computation
# is shortest: the "regularization term ... representing the transition
# sequence length from c to its minimum-loss reachable tree(s)" of
# Fernández-González & Gómez-Rodríguez 2018, section 3, made exact); or a
# list of action names, most preferred first (the zero-cost actions of the
# best rank; unlisted actions share the last rank).

TIE_BREAK_NONE = "none"
TIE_BREAK_SHORTEST = "shortest"
#: values of the ``lost_words`` option (:class:`TieBreakingOracle`)
LOST_WORDS_FREE, LOST_WORDS_SPARE, LOST_WORDS_ATTACH = "free", "spare", "attach"
LOST_WORDS = (LOST_WORDS_FREE, LOST_WORDS_SPARE, LOST_WORDS_ATTACH)


#: values of the ``headless`` option of the systems with a root node (:func:`headless_option`)
HEADLESS_ROOT, HEADLESS_WRONG = "root", "wrong"


#: a checked ``tie_break`` option (:func:`tie_break_option`): ``"none"``, ``"shortest"`` or actions, best first
TieBreak = str | tuple[str, ...]


class TieBreakError(KgparserError, ValueError):
    """A bad value of a system's ``tie_break`` option."""


def tie_break_option(system: str, actions: Sequence[str], value: object, *, shortest: bool = True,
                     why_not_shortest: str | None = None) -> TieBreak:
    """``value`` checked and normalised: ``"none"``, ``"shortest"`` or a tuple
    of distinct action names of ``system``.  ``shortest=False`` for a system
    whose computations all have the same length, where it would change nothing
    (or, with ``why_not_shortest``, for another reason)."""
    if isinstance(value, str) and (value == TIE_BREAK_NONE or (value == TIE_BREAK_SHORTEST and shortest)):
        return value
    if value == TIE_BREAK_SHORTEST:
        why = why_not_shortest or (f"every {system} computation on a sentence has the same length, "
                                   f"so 'shortest' would change nothing")
        raise TieBreakError(f"{system} option 'tie_break': {why}; give an order of actions "
                            f"({', '.join(actions)})")
    if isinstance(value, (list, tuple)) and value and all(isinstance(a, str) for a in value):
        unknown = [a for a in value if a not in actions]
        if not unknown and len(set(value)) == len(value):
            return tuple(value)
    kinds = "'none', " + ("'shortest', " if shortest else "")
    raise TieBreakError(f"{system} option 'tie_break' must be {kinds}or a list of distinct actions among "
                        f"{', '.join(actions)}, most preferred first; got {value!r}")


def lost_words_option(system: str, value: str) -> str:
    """``value`` of a system's ``lost_words`` option, checked (:class:`TieBreakingOracle`)."""
    if value not in LOST_WORDS:
        raise TieBreakError(f"{system} option 'lost_words' must be one of {', '.join(LOST_WORDS)}, got {value!r}")
    return value


def headless_option(system: str, value: str, root_node: bool, error: type[Exception] = KgparserError) -> str:
    """``value`` of a system's ``headless`` option, checked: what the loss its
    dynamic oracle minimizes makes of a word left without a head.  ``"root"``
    (docs/transition-contract.md): the root's dependent, so the gold root word may stay headless
    at no cost and the oracle never teaches the root arc; ``"wrong"``: an
    error, so the gold arc from the root node is an ordinary arc of the loss
    (issue 18: UD has one root).  ``"wrong"`` needs the root node."""
    if value not in (HEADLESS_ROOT, HEADLESS_WRONG):
        raise error(f"{system} option 'headless' must be {HEADLESS_ROOT} or {HEADLESS_WRONG}, got {value!r}")
    if value == HEADLESS_WRONG and not root_node:
        raise error(f"{system} option 'headless: wrong' needs 'root_node: true' (without the root node "
                    f"a word gets the root as head only by staying headless)")
    return value


def tie_break_value(tie_break: TieBreak) -> str | list[str]:
    """The option as plain data (configs, checkpoints): a string or a list."""
    return list(tie_break) if isinstance(tie_break, tuple) else tie_break


def penalize(costs: dict[str, int], disfavoured: Collection[str]) -> dict[str, int]:
    """``costs`` plus 1 on each action in ``disfavoured``, unless every action
    at the least cost is disfavoured (then ``costs`` unchanged): the least
    cost stays the same and at least one action keeps it."""
    least = min(costs.values())
    if not disfavoured or all(a in disfavoured for a, c in costs.items() if c == least):
        return costs
    return {a: c + 1 if a in disfavoured else c for a, c in costs.items()}


def least_cost_actions(costs: dict[str, int]) -> list[str]:
    """The actions at the least cost (those a trainer takes as correct)."""
    least = min(costs.values())
    return [a for a, c in costs.items() if c == least]


class TieBreakingOracle(Generic[StateT]):
    """Mixin of dynamic oracles with the ``tie_break`` option.

    Subclasses set ``self.system`` and ``self.tie_break`` (a value of
    :func:`tie_break_option`) and implement :meth:`exact_costs`; for
    ``"shortest"`` also :meth:`remaining_length`.  A system-specific rule
    that applies before the tie-break (2-Planar's Switch regularization)
    overrides :meth:`regularized_costs`.  A system with the ``lost_words``
    option gets a last, lowest-priority rule about the arcs onto words whose
    gold head is already out of reach (free under the Hamming loss, so
    zero-cost ones are exactly those): ``"spare"`` disfavours them among the
    actions still at the least cost, ``"attach"`` disfavours the others when
    one of them is there (``self.gold`` tells which arcs are gold)."""

    system: TransitionSystem[StateT]
    tie_break: TieBreak = TIE_BREAK_NONE
    gold: list[int]

    def exact_costs(self, state: StateT) -> dict[str, int]:
        """The primary costs: ``loss(after) - loss(before)`` where the paper
        makes them exact."""
        raise NotImplementedError

    def remaining_length(self, state: StateT) -> int:
        """The number of transitions of the shortest computation from ``state``
        to a final state of least loss (needed by ``tie_break="shortest"``)."""
        raise NotImplementedError

    def regularized_costs(self, state: StateT, costs: dict[str, int]) -> dict[str, int]:
        """``costs`` after the system's own regularization (default: none)."""
        return costs

    def costs(self, state: StateT) -> dict[str, int]:
        """The costs training uses: :meth:`exact_costs`, regularized, plus 1
        on the least-cost actions the tie-break, then the ``lost_words`` rule,
        do not prefer."""
        costs = self.regularized_costs(state, self.exact_costs(state))
        if len(costs) < 2:
            return costs
        if self.tie_break != TIE_BREAK_NONE:
            tied = least_cost_actions(costs)
            if len(tied) > 1:
                costs = penalize(costs, set(tied) - set(self._preferred_among(state, tied)))
        rule = self.lost_words
        return costs if rule == LOST_WORDS_FREE else self._lost_words_costs(state, costs, rule)

    @property
    def lost_words(self) -> str:
        """The system's ``lost_words`` option (``free`` for systems without it)."""
        return getattr(self.system, "lost_words", LOST_WORDS_FREE)

    def _lost_words_costs(self, state: StateT, costs: dict[str, int], rule: str) -> dict[str, int]:
        """``costs`` with the free wrong arcs among the least-cost actions
        disfavoured (``spare``), or the others when there are any (``attach``)."""
        tied = least_cost_actions(costs)
        wrong = self.wrong_arc_actions(state, tied)
        if rule == LOST_WORDS_SPARE:
            return penalize(costs, wrong)
        return penalize(costs, set(tied) - wrong) if wrong else costs

    def wrong_arc_actions(self, state: StateT, actions: Sequence[str]) -> set[str]:
        """The arc actions among ``actions`` whose arc is not a gold arc."""
        wrong: set[str] = set()
        for action in actions:
            if action in self.system.arc_actions:
                head, dep = self.system.arc_of(state, action)
                if self.gold[dep] != head:
                    wrong.add(action)
        return wrong

    def preferred(self, state: StateT) -> list[str]:
        """The actions training takes as correct: those of least :meth:`costs`."""
        return least_cost_actions(self.costs(state))

    def _preferred_among(self, state: StateT, tied: list[str]) -> list[str]:
        if self.tie_break == TIE_BREAK_SHORTEST:
            lengths = {a: self.remaining_length(self._successor(state, a)) for a in tied}
            return least_cost_actions(lengths)
        order = self.tie_break
        rank = {a: order.index(a) if a in order else len(order) for a in tied}
        return least_cost_actions(rank)

    def _successor(self, state: StateT, action: str) -> StateT:
        after = state.copy()
        self.system.apply(after, action)
        return after
