"""The DESIGN.md transition-system contract, checked on every registered system."""
import random
import subprocess
import sys

import pytest

from kgparser.transitions import get_system, system_names
from kgparser.transitions.base import NO_HEAD
from kgparser.transitions.trees import find_cycle

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

CONTRACT_NAMES = ["arc-standard", "arc-eager", "arc-hybrid", "arc-hybrid-swap",
                  "covington", "attardi", "two-planar"]


def test_registry_lists_systems_and_rejects_unknown_names():
    assert "arc-hybrid" in system_names()
    with pytest.raises(ValueError, match="did you mean 'arc-hybrid'"):
        get_system("arc-hybird")


def test_transitions_import_without_torch():
    code = ("import sys, kgparser.transitions as t; t.system_names(); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def random_walk(system, n, rng):
    state = system.initial_state(n)
    steps = 0
    while not system.is_final(state):
        legal = system.legal_actions(state)
        assert legal, f"{system.name}: no legal action in non-final state {state.key()}"
        assert set(legal) <= set(system.actions)
        assert len(system.features(state)) == len(system.feature_names)
        action = rng.choice(legal)
        before = state.copy()
        label = None
        if action in system.arc_actions:
            head, dep = system.arc_of(state, action)
            label = f"lab{dep}"
        system.apply(state, action, label)
        assert before.key() != state.key(), f"{action} did not change the state"
        if action in system.arc_actions:
            assert state.heads[dep] == head and state.labels[dep] == label
            assert before.heads[dep] == NO_HEAD
        steps += 1
        assert steps < 50 * (n + 2) ** 2, "computation does not terminate"
    return state


@pytest.mark.parametrize("name", system_names())
def test_random_computations_end_in_well_formed_trees(name):
    system = get_system(name)
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(0, 12)
        state = random_walk(system, n, rng)
        heads = state.heads
        assert len(heads) == n + 1 and len(state.labels) == n + 1
        assert find_cycle([NO_HEAD] + [0 if h == NO_HEAD else h for h in heads[1:]]) is None
        for d in range(1, n + 1):
            if heads[d] != NO_HEAD:
                assert heads[d] != d and 0 <= heads[d] <= n


@pytest.mark.parametrize("name", system_names())
def test_copy_is_independent_and_key_is_hashable(name):
    system = get_system(name)
    rng = random.Random(3)
    state = system.initial_state(6)
    for _ in range(4):
        if system.is_final(state):
            break
        system.apply(state, rng.choice(system.legal_actions(state)))
    clone = state.copy()
    hash(clone.key())
    assert clone.key() == state.key()
    if not system.is_final(clone):
        system.apply(clone, system.legal_actions(clone)[0])
        assert clone.key() != state.key()


@pytest.mark.parametrize("name", system_names())
def test_leftmost_and_rightmost_dependents_are_tracked(name):
    system = get_system(name)
    rng = random.Random(11)
    for _ in range(50):
        state = random_walk(system, rng.randint(1, 9), rng)
        for h in range(len(state.heads)):
            deps = [d for d in range(1, len(state.heads)) if state.heads[d] == h]
            assert state.leftmost[h] == (min(deps) if deps else NO_HEAD)
            assert state.rightmost[h] == (max(deps) if deps else NO_HEAD)


def test_every_contract_system_is_registered():
    missing = [n for n in CONTRACT_NAMES if n not in system_names()]
    assert not missing, f"not registered yet: {missing}"
