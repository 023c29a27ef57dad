"""pytest-friendly wrappers around :mod:`kgparser.transitions.checking`.

Seeds are fixed so CI runs are reproducible; sizes are chosen per system so
the whole suite stays fast on two cores.
"""
from __future__ import annotations

import random

from kgparser.transitions.checking import (
    buildable_trees,
    check_dynamic_oracle,
    check_static_oracle,
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
