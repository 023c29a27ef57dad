import random

import pytest

from harness import assert_exact_dynamic_oracle, assert_static_oracle_builds, coverage
from kgparser.errors import KgparserError
from kgparser.transitions import get_system
from kgparser.transitions.trees import all_trees, is_projective, random_projective_tree, random_tree

VARIANTS = [get_system("arc-hybrid"), get_system("arc-hybrid", root="end")]
IDS = ["root-first", "root-end"]


@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_builds_exactly_the_projective_trees(system):
    for n in range(1, 6):
        assert coverage(system, n) == {tuple(t) for t in all_trees(n) if is_projective(t)}


@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_static_oracle_rebuilds_every_projective_tree(system):
    assert_static_oracle_builds(system, (t for n in range(1, 6) for t in all_trees(n) if is_projective(t)))
    rng = random.Random(0)
    assert_static_oracle_builds(system, (random_projective_tree(rng.randint(1, 40), rng) for _ in range(200)))


@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_dynamic_oracle_is_exact_for_projective_gold_small(system):
    assert_exact_dynamic_oracle(system, range(1, 7), 12, projective_only=True)


@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_dynamic_oracle_is_exact_for_projective_gold_seven_words(system):
    assert_exact_dynamic_oracle(system, [7], 6, projective_only=True, limit=3000, seed=1)


def partial_projective_trees(n, rng):
    """Projective trees with some heads blanked to -1 ("don't care")."""
    for _ in range(6):
        tree = random_projective_tree(n, rng, single_root=rng.random() < 0.5)
        yield [h if d == 0 or rng.random() < 0.6 else -1 for d, h in enumerate(tree)]


@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_dynamic_oracle_is_exact_for_partial_gold(system):
    # a blanked word adds the same 1 to every final loss, so brute-force cost
    # differences are exactly the costs over the given arcs
    assert_exact_dynamic_oracle(system, range(1, 6), 0, trees=partial_projective_trees, seed=2)


@pytest.mark.parametrize("system", VARIANTS, ids=IDS)
def test_dynamic_oracle_on_nonprojective_gold_keeps_the_contract(system):
    rng = random.Random(5)
    golds = [t for t in (random_tree(6, rng) for _ in range(40)) if not is_projective(t)][:6]
    assert golds
    for gold in golds:
        oracle = system.dynamic_oracle(gold)
        state = system.initial_state(6)
        while not system.is_final(state):
            costs = oracle.costs(state)
            assert set(costs) == set(system.legal_actions(state))
            assert all(isinstance(c, int) and c >= 0 for c in costs.values())
            system.apply(state, rng.choice(sorted(costs)))


def test_root_end_gives_every_word_a_head_and_reads_the_root_in_the_buffer():
    system = get_system("arc-hybrid", root="end")
    state = system.initial_state(2)
    assert system.legal_actions(state) == ["shift"]
    system.apply(state, "shift")
    assert system.features(state) == [1, -1, -1, 2]
    system.apply(state, "shift")
    assert system.features(state) == [2, 1, -1, 0]
    assert sorted(system.legal_actions(state)) == ["left", "right"]
    system.apply(state, "right", "obj")
    assert not system.is_final(state)
    assert system.legal_actions(state) == ["left"]
    assert system.arc_of(state, "left") == (0, 1)
    system.apply(state, "left", "root")
    assert system.is_final(state)
    assert state.heads == [-1, 0, 1]


def test_root_first_keeps_the_root_on_the_stack():
    system = get_system("arc-hybrid")
    state = system.initial_state(1)
    assert system.features(state) == [0, -1, -1, 1]
    assert system.legal_actions(state) == ["shift"]
    system.apply(state, "shift")
    assert system.legal_actions(state) == ["right"]
    system.apply(state, "right", "root")
    assert system.is_final(state) and state.heads == [-1, 0]


def test_options_round_trip_and_bad_root_is_rejected():
    assert get_system("arc-hybrid").options() == {"root": "first"}
    assert get_system("arc-hybrid", root="end").options() == {"root": "end"}
    with pytest.raises(KgparserError, match="arc-hybrid option 'root'"):
        get_system("arc-hybrid", root="last")
