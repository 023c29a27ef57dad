import random

from harness import assert_exact_dynamic_oracle, assert_static_oracle_builds, coverage
from kgparser.transitions import get_system
from kgparser.transitions.trees import all_trees, is_projective, random_projective_tree

SYSTEM = get_system("arc-hybrid")


def test_builds_exactly_the_projective_trees():
    for n in range(1, 6):
        assert coverage(SYSTEM, n) == {tuple(t) for t in all_trees(n) if is_projective(t)}


def test_static_oracle_rebuilds_every_projective_tree():
    assert_static_oracle_builds(SYSTEM, (t for n in range(1, 6) for t in all_trees(n) if is_projective(t)))
    rng = random.Random(0)
    assert_static_oracle_builds(SYSTEM, (random_projective_tree(rng.randint(1, 40), rng) for _ in range(200)))


def test_dynamic_oracle_is_exact_for_projective_gold_small():
    assert_exact_dynamic_oracle(SYSTEM, range(1, 7), 12, projective_only=True)


def test_dynamic_oracle_is_exact_for_projective_gold_seven_words():
    assert_exact_dynamic_oracle(SYSTEM, [7], 6, projective_only=True, limit=3000, seed=1)

