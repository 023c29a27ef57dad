"""pytest-friendly wrappers around :mod:`kgparser.transitions.checking`.

Seeds are fixed so CI runs are reproducible; sizes are chosen per system so
the whole suite stays fast on two cores.
"""
from __future__ import annotations

import random

from kgparser.transitions.checking import (
    ExactLoss,
    buildable_trees,
    check_dynamic_oracle,
    check_static_oracle,
    check_tie_break,
    follow_preferred,
    gold_trees,
    zero_cost_trees,
)
from kgparser.transitions.trees import is_projective, random_projective_tree, random_tree


def assert_exact_dynamic_oracle(system, sizes, trees_per_size, *, projective_only=False,
                                limit=None, seed=0, exact=True, trees=None):
    """Every cost equals the brute-force cost, on random gold trees of each size
    (all reachable states, or ``limit`` sampled ones)."""
    rng = random.Random(seed)
    checked = 0
    for n in sizes:
        golds = trees(n, rng) if trees else gold_trees(n, rng, trees_per_size, projective_only)
        for gold in golds:
            report = check_dynamic_oracle(system, gold, exact=exact, limit=limit, rng=rng)
            assert not report.problems, "\n".join(report.problems[:5])
            checked += report.states
    assert checked > 0


def assert_static_oracle_builds(system, golds):
    """The static oracle legally derives every given gold tree, labels included."""
    count = 0
    for gold in golds:
        problem = check_static_oracle(system, gold)
        assert problem is None, problem
        count += 1
    assert count > 0


def assert_zero_cost_paths_reach_gold(system, gold):
    """From the start, computations of zero-cost actions end exactly in the gold tree."""
    trees = zero_cost_trees(system, gold)
    assert trees == {tuple(gold)}, f"zero-cost computations built {sorted(trees)} for gold {gold}"


def coverage(system, n):
    """Every tree the system derives on ``n`` words."""
    return buildable_trees(system, n)


def partial_projective_trees(n, rng):
    """Projective trees with some heads blanked to -1 ("don't care")."""
    for _ in range(6):
        tree = random_projective_tree(n, rng, single_root=rng.random() < 0.5)
        yield [h if d == 0 or rng.random() < 0.6 else -1 for d, h in enumerate(tree)]


def assert_costs_keep_the_contract_on_nonprojective_gold(system, n=6, seed=5):
    """On non-projective gold trees, ``costs()`` still prices exactly the legal actions
    with non-negative integers along random computations."""
    rng = random.Random(seed)
    golds = [t for t in (random_tree(n, rng) for _ in range(40)) if not is_projective(t)][:6]
    assert golds
    for gold in golds:
        oracle = system.dynamic_oracle(gold)
        state = system.initial_state(n)
        while not system.is_final(state):
            costs = oracle.costs(state)
            assert set(costs) == set(system.legal_actions(state))
            assert all(isinstance(c, int) and c >= 0 for c in costs.values())
            system.apply(state, rng.choice(sorted(costs)))


def late_states(system, n, rng, count, keep):
    """``count`` distinct states for which ``keep(state)`` holds, met on random
    computations (e.g. states late in the sentence, whose brute-force loss
    needs only the rest of the search space)."""
    found = {}
    while len(found) < count:
        state = system.initial_state(n)
        while not system.is_final(state):
            if keep(state):
                found.setdefault(state.key(), state.copy())
            system.apply(state, rng.choice(system.legal_actions(state)))
    return list(found.values())[:count]


def assert_tie_break(system, golds, *, truth=None, shortest=False, states=None, limit=None, seed=0):
    """The tie-break of ``system``'s dynamic oracle passes
    :func:`~kgparser.transitions.checking.check_tie_break` (a: a non-empty
    subset of the zero-cost actions, b: each keeps the least loss, c: with
    ``shortest``, exactly the shortest) on every gold tree, against
    ``truth(system, gold)`` (default: brute-force Hamming loss), on
    ``states(gold)`` or the reachable states (all, or ``limit`` sampled);
    then computations that follow preferred actions from the start and from
    the states checked end at each one's least loss.  Returns the number of
    states checked."""
    rng = random.Random(seed)
    checked = 0
    for gold in golds:
        brute = truth(system, gold) if truth else ExactLoss(system, gold)
        chosen = states(gold) if states else None
        report = check_tie_break(system, gold, truth=brute, shortest=shortest, states=chosen, limit=limit, rng=rng)
        assert not report.problems, "\n".join(report.problems[:5])
        checked += report.states
        oracle = system.dynamic_oracle(gold)
        for start in (chosen or [system.initial_state(len(gold) - 1)])[:20]:
            end = follow_preferred(system, oracle, start, rng)
            assert brute.final_loss(end) == brute(start), (gold, start.key())
    assert checked > 0
    return checked
