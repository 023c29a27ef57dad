"""Exhaustive checks of transition systems and their oracles.

The ground truth is computed by brute force: the loss of a state is the least
Hamming loss of any final state reachable from it, found by searching every
computation (memoised on ``state.key()``).  A dynamic oracle is *exact* when
its ``costs()`` equal ``loss(after) - loss(before)`` for every legal action in
every reachable state.  Used by the test-suite for every registered system,
and usable on any new system before it is trusted for training.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Generic, Iterable, Sequence, cast, overload

from .base import (
    LOST_WORDS_ATTACH,
    LOST_WORDS_FREE,
    TIE_BREAK_NONE,
    DynamicOracle,
    StateKey,
    StateT,
    TieBreakingOracle,
    TransitionSystem,
    least_cost_actions,
    resolved_heads,
)

#: the actions searched from a state (default: its legal actions)
Moves = Callable[[StateT], Iterable[str]]


class ExactLoss(Generic[StateT]):
    """Brute-force loss of states of one sentence, memoised across calls.

    ``moves(state)`` restricts the computations searched (default: every legal
    action), e.g. to those whose swaps follow a static oracle;
    ``final_loss(state)`` replaces the system's loss of final states
    (:meth:`~.base.TransitionSystem.final_loss`; e.g. by a loss relative to
    2-Planar's canonical planes)."""

    def __init__(self, system: TransitionSystem[StateT], gold_heads: Sequence[int],
                 moves: Moves[StateT] | None = None, final_loss: Callable[[StateT], int] | None = None):
        self.system = system
        self.gold = list(gold_heads)
        self.moves: Moves[StateT] = moves or system.legal_actions
        self.final_loss: Callable[[StateT], int] = final_loss or (
            lambda state: system.final_loss(state.heads, self.gold))
        self._memo: dict[StateKey, int] = {}
        self._best: dict[StateKey, tuple[int, int]] = {}

    def __call__(self, state: StateT) -> int:
        key = state.key()
        memo = self._memo
        if key in memo:
            return memo[key]
        system = self.system
        if system.is_final(state):
            result = self.final_loss(state)
        else:
            result = min(self(successor(system, state, a)) for a in self.moves(state))
        memo[key] = result
        return result

    def best(self, state: StateT) -> tuple[int, int]:
        """``(loss, length)``: the least loss of a final state reachable from
        ``state`` and the fewest transitions of a computation reaching one."""
        key = state.key()
        memo = self._best
        if key not in memo:
            system = self.system
            if system.is_final(state):
                memo[key] = (self.final_loss(state), 0)
            else:
                loss, length = min(self.best(successor(system, state, a)) for a in self.moves(state))
                memo[key] = (loss, length + 1)
        return memo[key]

    def final_trees(self, state: StateT, allowed: Moves[StateT] | None = None) -> set[tuple[int, ...]]:
        """Resolved heads of every final state reachable from ``state`` using,
        in each state, only the actions ``allowed(state)`` (default: all legal)."""
        seen: set[StateKey] = set()
        trees: set[tuple[int, ...]] = set()
        todo = [state]
        while todo:
            s = todo.pop()
            k = s.key()
            if k in seen:
                continue
            seen.add(k)
            if self.system.is_final(s):
                trees.add(tuple(resolved_heads(s.heads)))
                continue
            actions = allowed(s) if allowed else self.system.legal_actions(s)
            todo.extend(successor(self.system, s, a) for a in actions)
        return trees


def successor(system: TransitionSystem[StateT], state: StateT, action: str) -> StateT:
    """The state reached from ``state`` by ``action`` (``state`` is untouched)."""
    nxt = state.copy()
    system.apply(nxt, action)
    return nxt


def reachable_states(system: TransitionSystem[StateT], n: int, *, limit: int | None = None,
                     rng: random.Random | None = None) -> list[StateT]:
    """Every state reachable from the initial state of an ``n``-word sentence,
    or, if there are more than ``limit``, a sample of ``limit`` states gathered
    along random computations."""
    start = system.initial_state(n)
    if limit is None:
        return _all_reachable(system, start)
    everything = _all_reachable(system, start, cap=limit)
    if everything is not None:
        return everything
    return _sample_reachable(system, start, limit, rng or random.Random(0))


@overload
def _all_reachable(system: TransitionSystem[StateT], start: StateT, cap: None = None) -> list[StateT]: ...


@overload
def _all_reachable(system: TransitionSystem[StateT], start: StateT, cap: int) -> list[StateT] | None: ...


def _all_reachable(system: TransitionSystem[StateT], start: StateT, cap: int | None = None) -> list[StateT] | None:
    """Every state reachable from ``start``; ``None`` as soon as there are more than ``cap``."""
    seen = {start.key(): start}
    todo = [start]
    while todo:
        s = todo.pop()
        if system.is_final(s):
            continue
        for a in system.legal_actions(s):
            nxt = successor(system, s, a)
            k = nxt.key()
            if k not in seen:
                seen[k] = nxt
                if cap is not None and len(seen) > cap:
                    return None
                todo.append(nxt)
    return list(seen.values())


def _sample_reachable(system: TransitionSystem[StateT], start: StateT, limit: int, rng: random.Random) -> list[StateT]:
    seen: dict[StateKey, StateT] = {}
    while len(seen) < limit:
        s = start.copy()
        while True:
            seen.setdefault(s.key(), s.copy())
            if system.is_final(s) or len(seen) >= limit:
                break
            system.apply(s, rng.choice(system.legal_actions(s)))
    return list(seen.values())


@dataclass
class OracleReport:
    """What :func:`check_dynamic_oracle` found; ``problems`` is empty when all is well."""

    states: int = 0
    problems: list[str] = field(default_factory=list)

    def fail(self, message: str, limit: int = 20) -> None:
        if len(self.problems) < limit:
            self.problems.append(message)


def check_dynamic_oracle(system: TransitionSystem[StateT], gold_heads: Sequence[int], *, exact: bool = True,
                         limit: int | None = None, rng: random.Random | None = None) -> OracleReport:
    """Compare the dynamic oracle with brute force on the states reachable for
    ``gold_heads`` (all of them, or a sample of ``limit``).

    Always checked: ``costs()`` has one entry per legal action, costs are
    non-negative integers, some action costs 0 in every non-final state,
    and ``costs()`` leaves the state unchanged.  With ``exact``: every cost
    equals ``loss(after) - loss(before)``.
    """
    n = len(gold_heads) - 1
    truth = ExactLoss(system, gold_heads) if exact else None
    oracle = system.dynamic_oracle(gold_heads)
    report = OracleReport()
    for state in reachable_states(system, n, limit=limit, rng=rng):
        if not system.is_final(state):
            check_state_costs(system, oracle, state, gold_heads, report, truth)
    return report


def check_state_costs(system: TransitionSystem[StateT], oracle: DynamicOracle[StateT], state: StateT,
                      gold_heads: Sequence[int], report: OracleReport,
                      truth: ExactLoss[StateT] | None = None) -> dict[str, int] | None:
    """Check ``oracle.costs(state)`` for one non-final state (see
    :func:`check_dynamic_oracle`); with ``truth``, each action ``truth``
    searches must cost ``truth(after) - truth(before)``.  Returns the costs,
    or ``None`` if they could not be checked."""
    report.states += 1
    where = f"gold={list(gold_heads)} state={state.key()}"
    legal = system.legal_actions(state)
    if not legal:
        report.fail(f"no legal action in a non-final state; {where}")
        return None
    before = state.key()
    costs = oracle.costs(state)
    if state.key() != before:
        report.fail(f"costs() changed the state; {where}")
    if set(costs) != set(legal):
        report.fail(f"costs() keys {sorted(costs)} != legal actions {sorted(legal)}; {where}")
        return None
    if any(not isinstance(c, int) or c < 0 for c in costs.values()):
        report.fail(f"costs must be non-negative ints, got {costs}; {where}")
    if min(costs.values()) != 0:
        report.fail(f"no zero-cost action, costs {costs}; {where}")
    if truth is not None:
        base = truth(state)
        true_costs = {a: truth(successor(system, state, a)) - base for a in truth.moves(state)}
        if any(costs[a] != c for a, c in true_costs.items()):
            report.fail(f"costs {costs} != true costs {true_costs}; {where}")
    return costs


def check_tie_break(system: TransitionSystem[StateT], gold_heads: Sequence[int], *,
                    truth: ExactLoss[StateT] | None = None, shortest: bool = False,
                    states: Iterable[StateT] | None = None, limit: int | None = None,
                    rng: random.Random | None = None) -> OracleReport:
    """Check the tie-break of ``system``'s dynamic oracle (see the notes in
    :mod:`kgparser.transitions.base`) against brute force (``truth``, default
    the Hamming loss) on ``states`` (default: those reachable for
    ``gold_heads``, all of them or a sample of ``limit``).

    In every non-final state: (a) ``costs()`` exceeds ``exact_costs()`` by 0
    or 1 on each action, and its least-cost actions (``preferred()``) are a
    non-empty subset of the actions of least exact cost; (b) each preferred
    action keeps the brute-force loss, so, by induction over the states
    checked, every computation that follows preferred actions only ends at
    the least loss of the state it starts from; (c) with ``shortest``, a
    least-loss computation is no longer after a preferred action than after
    any action of least exact cost, and the preferred actions are all the
    actions of least ``regularized_costs()`` (the system's own
    regularization, if any) with that property; ``remaining_length()`` is
    the length of a shortest least-loss computation; (d) with the system's
    ``lost_words`` option ``spare`` (``attach``), the preferred actions build
    no arc outside the gold tree unless all of them do (only such arcs, where
    there are any), and are exactly the actions (c) or the least regularized
    cost selects, narrowed so."""
    truth = truth or ExactLoss(system, gold_heads)
    # the systems with the ``tie_break`` option have a TieBreakingOracle (TransitionSystem does not say which)
    oracle = cast(TieBreakingOracle[StateT], system.dynamic_oracle(gold_heads))
    report = OracleReport()
    if states is None:
        states = reachable_states(system, len(gold_heads) - 1, limit=limit, rng=rng)
    for state in states:
        if not system.is_final(state):
            report.states += 1
            _check_state_tie_break(system, oracle, state, truth, shortest, report)
    return report


def _check_state_tie_break(system: TransitionSystem[StateT], oracle: TieBreakingOracle[StateT], state: StateT,
                           truth: ExactLoss[StateT], shortest: bool, report: OracleReport) -> None:
    where = f"gold={truth.gold} state={state.key()}"
    exact, costs, preferred = oracle.exact_costs(state), oracle.costs(state), oracle.preferred(state)
    zero = [a for a, c in exact.items() if c == min(exact.values())]
    if set(costs) != set(exact) or any(costs[a] - exact[a] not in (0, 1) for a in exact):
        report.fail(f"costs {costs} are not exact costs {exact} plus 0 or 1; {where}")
    if not preferred or not set(preferred) <= set(zero):
        report.fail(f"preferred {preferred} not a non-empty subset of the least exact cost {zero}; {where}")
        return
    base = truth(state)
    kept = [a for a in preferred if truth(successor(system, state, a)) == base]
    if kept != preferred:
        report.fail(f"preferred {preferred}: only {kept} keep the least loss {base}; {where}")
    if shortest:
        length = oracle.remaining_length(state)
        if length != truth.best(state)[1]:
            report.fail(f"remaining_length {length} != brute force {truth.best(state)[1]}; {where}")
        lengths = {a: truth.best(successor(system, state, a))[1] for a in zero}
        if max(lengths[a] for a in preferred) > min(lengths.values()):
            report.fail(f"preferred {preferred} are not the shortest (lengths {lengths}); {where}")
        tied = least_cost_actions(oracle.regularized_costs(state, exact))
        shortest_tied = _lost_word_rule([a for a in tied if lengths[a] == min(lengths[t] for t in tied)], oracle,
                                        state)
        if sorted(preferred) != sorted(shortest_tied):
            report.fail(f"preferred {preferred} != shortest of {tied}: {shortest_tied} (lengths {lengths}); {where}")
    if oracle.lost_words != LOST_WORDS_FREE:
        # spare: no wrong arc unless only those; attach: only wrong arcs where there are any
        wrong = oracle.wrong_arc_actions(state, preferred)
        if wrong and len(wrong) < len(preferred):
            report.fail(f"preferred {preferred} mix the free wrong arcs {sorted(wrong)} with other actions; {where}")
        if oracle.tie_break == TIE_BREAK_NONE:
            expected = _lost_word_rule(least_cost_actions(oracle.regularized_costs(state, exact)), oracle, state)
            if sorted(preferred) != sorted(expected):
                report.fail(f"preferred {preferred} != {expected} (lost_words: {oracle.lost_words}); {where}")


def _lost_word_rule(actions: list[str], oracle: TieBreakingOracle[StateT], state: StateT) -> list[str]:
    """``actions`` narrowed by the system's ``lost_words`` option: less the free
    wrong arcs (``spare``) or only those (``attach``), where some are left."""
    if oracle.lost_words == LOST_WORDS_FREE:
        return actions
    wrong = oracle.wrong_arc_actions(state, actions)
    kept = [a for a in actions if (a in wrong) == (oracle.lost_words == LOST_WORDS_ATTACH)]
    return kept or actions


def lengthening_ties(truth: ExactLoss[StateT], states: Iterable[StateT]) -> tuple[int, int]:
    """``(ties, lengthening)``: among ``states``, how many have several
    actions of least brute-force loss, and in how many of those a least-loss
    computation is longer after some of them than after others (where a
    ``tie_break="shortest"`` changes what training takes as correct)."""
    system = truth.system
    ties = lengthening = 0
    for state in states:
        if system.is_final(state):
            continue
        after = [truth.best(successor(system, state, a)) for a in truth.moves(state)]
        least = min(loss for loss, _ in after)
        lengths = {length for loss, length in after if loss == least}
        tied = sum(1 for loss, _ in after if loss == least) > 1
        ties += tied
        lengthening += tied and len(lengths) > 1
    return ties, lengthening


def follow_preferred(system: TransitionSystem[StateT], oracle: TieBreakingOracle[StateT], state: StateT,
                     rng: random.Random) -> StateT:
    """The final state reached from (a copy of) ``state`` by taking, at each
    step, a random action of ``oracle.preferred``."""
    state = state.copy()
    while not system.is_final(state):
        system.apply(state, rng.choice(oracle.preferred(state)))
    return state


def check_static_oracle(system: TransitionSystem[StateT], gold_heads: Sequence[int],
                        gold_labels: Sequence[str | None] | None = None) -> str | None:
    """Follow the static oracle from the start; return a problem or ``None`` if
    it legally reaches a final state whose tree (and labels) equal the gold."""
    n = len(gold_heads) - 1
    oracle = system.static_oracle(gold_heads)
    state = system.initial_state(n)
    labels = gold_labels or [None] + [f"l{d}" for d in range(1, n + 1)]
    for _ in range(100 * (n + 1) ** 2):
        if system.is_final(state):
            break
        action = oracle.next_action(state)
        if action not in system.legal_actions(state):
            return f"static oracle chose illegal {action!r} in {state.key()} for gold {list(gold_heads)}"
        label = labels[system.arc_of(state, action)[1]] if action in system.arc_actions else None
        system.apply(state, action, label)
    else:
        return f"static oracle did not terminate for gold {list(gold_heads)}"
    got = resolved_heads(state.heads)
    if got[1:] != list(gold_heads[1:]):
        return f"static oracle built {got[1:]} instead of {list(gold_heads[1:])}"
    wrong = [d for d in range(1, n + 1) if state.heads[d] != -1 and state.labels[d] != labels[d]]
    if wrong:
        return f"static oracle put wrong labels on words {wrong} for gold {list(gold_heads)}"
    return None


def zero_cost_trees(system: TransitionSystem[StateT], gold_heads: Sequence[int]) -> set[tuple[int, ...]]:
    """Trees of every computation that only takes actions the dynamic oracle
    prices at zero, from the initial state."""
    oracle = system.dynamic_oracle(gold_heads)
    truth = ExactLoss(system, gold_heads)

    def zero(state: StateT) -> list[str]:
        return [a for a, c in oracle.costs(state).items() if c == 0]

    return truth.final_trees(system.initial_state(len(gold_heads) - 1), zero)


def buildable_trees(system: TransitionSystem[StateT], n: int) -> set[tuple[int, ...]]:
    """Every tree (resolved heads) some computation of ``system`` derives."""
    return ExactLoss(system, [0] * (n + 1)).final_trees(system.initial_state(n))


def gold_trees(n: int, rng: random.Random, count: int, projective_only: bool = False) -> Iterable[list[int]]:
    """``count`` random gold trees of ``n`` words (a mix of single- and multi-rooted)."""
    from .trees import random_projective_tree, random_tree

    make = random_projective_tree if projective_only else random_tree
    for i in range(count):
        yield make(n, rng, single_root=bool(i % 2))
