"""Arc-eager and arc-hybrid, each with the root first and at the end: the
projective systems whose dynamic oracles are exact and arc-decomposable
(Goldberg & Nivre 2013), checked against brute force."""
import random

import pytest
from harness import (
    assert_costs_keep_the_contract_on_nonprojective_gold,
    assert_exact_dynamic_oracle,
    assert_static_oracle_builds,
    coverage,
    partial_projective_trees,
)

from kgparser.transitions import get_system
from kgparser.transitions.trees import all_trees, is_projective, random_projective_tree

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

VARIANTS = [get_system(name, root=root) for name in ("arc-eager", "arc-hybrid") for root in ("first", "end")]
IDS = [f"{system.name}-root-{system.root}" for system in VARIANTS]


@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_builds_exactly_the_projective_trees(system):
    for n in range(1, 6):
        assert coverage(system, n) == {tuple(t) for t in all_trees(n) if is_projective(t)}


@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_static_oracle_rebuilds_every_projective_tree(system):
    assert_static_oracle_builds(system, (t for n in range(1, 6) for t in all_trees(n) if is_projective(t)))
    rng = random.Random(0)
    assert_static_oracle_builds(system, (random_projective_tree(rng.randint(1, 40), rng) for _ in range(200)))


@pytest.mark.exhaustive
@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_dynamic_oracle_is_exact_for_projective_gold_small(system):
    assert_exact_dynamic_oracle(system, range(1, 7), 12, projective_only=True)


@pytest.mark.exhaustive
@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_dynamic_oracle_is_exact_for_projective_gold_seven_words(system):
    assert_exact_dynamic_oracle(system, [7], 6, projective_only=True, limit=3000, seed=1)


@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_dynamic_oracle_is_exact_for_partial_gold(system):
    # a blanked word adds the same 1 to every final loss, so brute-force cost
    # differences are exactly the costs over the given arcs
    assert_exact_dynamic_oracle(system, range(1, 6), 0, trees=partial_projective_trees, seed=2)


@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_dynamic_oracle_on_nonprojective_gold_keeps_the_contract(system):
    assert_costs_keep_the_contract_on_nonprojective_gold(system)
