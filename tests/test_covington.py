"""Covington's non-projective system and the dynamic oracle of Gómez-Rodríguez
& Fernández-González (2015), in both root variants, checked against brute force."""
import random
from pathlib import Path

import pytest
from harness import (
    assert_exact_dynamic_oracle,
    assert_static_oracle_builds,
    assert_zero_cost_paths_reach_gold,
    coverage,
    late_states,
)

from kgparser.transitions import get_system
from kgparser.transitions.base import NO_HEAD, ROOT
from kgparser.transitions.checking import ExactLoss, reachable_states, successor
from kgparser.transitions.covington import CovingtonOptionError
from kgparser.transitions.trees import all_trees, random_tree

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

PAPER = get_system("covington")
ROOT_NODE = get_system("covington", root_node=True)
#: the root node, and a loss that counts a headless word as wrong (root arcs taught)
ROOT_ARCS = get_system("covington", root_node=True, headless="wrong")
BOTH = pytest.mark.parametrize("system", [PAPER, ROOT_NODE, ROOT_ARCS], ids=["paper", "root-node", "root-arcs"])

EWT_TRAIN = (Path(__file__).resolve().parents[2] / "shared" / "ud" / "UD_English-EWT"
             / "en_ewt-ud-train.conllu")


def several_root_dependents(n, rng):
    """A random tree of ``n >= 2`` words whose root has at least two dependents."""
    while True:
        tree = random_tree(n, rng)
        if tree.count(ROOT) >= 2:
            return tree


def mixed_trees(n, rng, count):
    """Random trees: single-rooted, and (from two words on) with several root dependents."""
    return [random_tree(n, rng, single_root=True) if k % 2 or n < 2 else several_root_dependents(n, rng)
            for k in range(count)]


def run(system, n, actions):
    state = system.initial_state(n)
    for action in actions:
        assert action in system.legal_actions(state), (action, state.key())
        system.apply(state, action)
    return state


def test_options_and_registry():
    assert PAPER.options() == {"root_node": False, "tie_break": "none", "lost_words": "free", "headless": "root"}
    assert ROOT_NODE.options() == {"root_node": True, "tie_break": "none", "lost_words": "free", "headless": "root"}
    assert ROOT_ARCS.options()["headless"] == "wrong"
    assert PAPER.actions == ("shift", "no-arc", "left", "right")


@pytest.mark.parametrize("options", [{"headless": "wrong"}, {"root_node": True, "headless": "none"}])
def test_bad_headless_option_is_a_user_error(options):
    with pytest.raises(CovingtonOptionError, match="headless"):
        get_system("covington", **options)


def test_headless_wrong_counts_a_headless_gold_root_as_an_error():
    gold = [NO_HEAD, 2, 0]
    state = run(ROOT_ARCS, 2, ["shift", "left", "shift"])
    assert state.heads == [NO_HEAD, 2, NO_HEAD]
    assert ROOT_NODE.final_loss(state.heads, gold) == 0
    assert ROOT_ARCS.final_loss(state.heads, gold) == 1 == ROOT_ARCS.dynamic_oracle(gold).loss(state)


def test_headless_wrong_teaches_the_root_arc():
    """With the gold root word as ``j`` and the root node as ``i``, ``right``
    is the only zero-cost action under ``headless: wrong``; under the default
    loss no-arc and shift are free too."""
    gold = [NO_HEAD, 0]
    state = ROOT_ARCS.initial_state(1)
    assert ROOT_ARCS.dynamic_oracle(gold).costs(state) == {"shift": 1, "no-arc": 1, "right": 0}
    assert ROOT_NODE.dynamic_oracle(gold).costs(state) == {"shift": 0, "no-arc": 0, "right": 0}


@BOTH
def test_builds_every_tree(system):
    for n in range(1, 5):
        assert coverage(system, n) == {tuple(t) for t in all_trees(n)}
    assert system.can_build(random_tree(30, random.Random(0)))


@BOTH
def test_static_oracle_rebuilds_every_tree(system):
    assert_static_oracle_builds(system, (t for n in range(1, 6) for t in all_trees(n)))
    rng = random.Random(0)
    assert_static_oracle_builds(system, (random_tree(rng.randint(1, 40), rng, single_root=bool(k % 2))
                                         for k in range(200)))


def test_static_oracle_attaches_to_the_root_explicitly_only_with_the_root_node():
    gold = [NO_HEAD, 2, 0, 2, 0]
    for system, explicit in ((PAPER, False), (ROOT_NODE, True)):
        state = system.initial_state(4)
        oracle = system.static_oracle(gold)
        while not system.is_final(state):
            system.apply(state, oracle.next_action(state))
        assert [state.heads[d] for d in (2, 4)] == ([0, 0] if explicit else [NO_HEAD, NO_HEAD])


def test_the_root_is_a_focus_word_only_with_the_root_node():
    assert PAPER.legal_actions(PAPER.initial_state(2)) == ["shift"]
    assert ROOT_NODE.legal_actions(ROOT_NODE.initial_state(2)) == ["shift", "no-arc", "right"]
    state = run(ROOT_NODE, 2, ["right"])
    assert state.heads[1] == ROOT and ROOT_NODE.legal_actions(state) == ["shift"]


@BOTH
def test_single_head_and_acyclicity_checks_match_the_arcs(system):
    """The union-find answers agree with walking the heads of the partial forest."""
    def ancestors(heads, node):
        seen = []
        while node > 0 and heads[node] != NO_HEAD:
            node = heads[node]
            seen.append(node)
        return seen

    rng = random.Random(5)
    for _ in range(150):
        n = rng.randint(1, 15)
        state = system.initial_state(n)
        while not system.is_final(state):
            legal = system.legal_actions(state)
            i, j, heads = state.i, state.j, state.heads
            focus = i >= state.first
            left_ok = focus and i != ROOT and heads[i] == NO_HEAD and i not in ancestors(heads, j)
            right_ok = focus and heads[j] == NO_HEAD and j not in ancestors(heads, i)
            assert ("left" in legal) == left_ok and ("right" in legal) == right_ok, state.key()
            system.apply(state, rng.choice(legal))


@BOTH
def test_features_are_the_focus_words_and_their_neighbours(system):
    state = run(system, 5, ["shift", "shift", "shift"])
    assert system.features(state) == [3, 2, NO_HEAD, 4, 5]
    system.apply(state, "no-arc")
    system.apply(state, "right")
    below = ROOT if system.root_node else NO_HEAD
    assert system.features(state) == [1, below, 2, 4, 5]
    assert state.heads[4] == 2
    state = run(system, 1, ["shift"])
    assert system.features(state) == [1, below, NO_HEAD, NO_HEAD, NO_HEAD] and system.is_final(state)


def test_loss_of_figure_2_counts_the_cycle():
    """Paper, Figure 2: c = ⟨[1, 2], [], [3, 4], {1 -> 2}⟩, gold 2->3, 3->4, 4->1,
    0->2: one individually unreachable arc, one cycle, loss 2."""
    gold = [NO_HEAD, 4, 0, 2, 3]
    state = run(PAPER, 4, ["shift", "right", "shift"])
    assert (state.i, state.j, state.heads) == (2, 3, [NO_HEAD, NO_HEAD, 1, NO_HEAD, NO_HEAD])
    assert PAPER.dynamic_oracle(gold).loss(state) == 2 == ExactLoss(PAPER, gold)(state)


@pytest.mark.exhaustive
@BOTH
def test_theorem_1_loss_equals_brute_force(system):
    rng = random.Random(3)
    for n in range(1, 6):
        for gold in mixed_trees(n, rng, 3):
            truth, oracle = ExactLoss(system, gold), system.dynamic_oracle(gold)
            for state in reachable_states(system, n, limit=1500, rng=rng):
                assert oracle.loss(state) == truth(state), (gold, state.key())


@BOTH
def test_dynamic_oracle_is_exact_on_every_tree_up_to_three_words(system):
    assert_exact_dynamic_oracle(system, [1, 2, 3], 0, trees=lambda n, rng: all_trees(n))


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_on_every_tree_of_four_words():
    assert_exact_dynamic_oracle(PAPER, [4], 0, trees=lambda n, rng: all_trees(n))


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_on_random_trees_up_to_five_words():
    assert_exact_dynamic_oracle(PAPER, range(1, 6), 8, trees=lambda n, rng: mixed_trees(n, rng, 8))


@pytest.mark.exhaustive
@pytest.mark.parametrize("system", [ROOT_NODE, ROOT_ARCS], ids=["root-node", "root-arcs"])
def test_dynamic_oracle_with_root_node_is_exact_on_random_trees_up_to_five_words(system):
    assert_exact_dynamic_oracle(system, [4, 5], 2, trees=lambda n, rng: mixed_trees(n, rng, 2), seed=1)


@pytest.mark.exhaustive
def test_dynamic_oracle_with_root_arcs_is_exact_on_every_tree_of_four_words():
    assert_exact_dynamic_oracle(ROOT_ARCS, [4], 0, trees=lambda n, rng: all_trees(n))


@pytest.mark.exhaustive
@BOTH
@pytest.mark.parametrize("n,min_j", [(6, 4), (7, 6)])
def test_dynamic_oracle_is_exact_on_sampled_states_of_longer_sentences(system, n, min_j):
    rng = random.Random(n)
    checked = 0
    for gold in mixed_trees(n, rng, 2):
        truth, oracle = ExactLoss(system, gold), system.dynamic_oracle(gold)
        for state in late_states(system, n, rng, 60, lambda s: s.j >= min_j):
            base = truth(state)
            expected = {a: truth(successor(system, state, a)) - base for a in system.legal_actions(state)}
            assert oracle.costs(state) == expected, (gold, state.key())
            checked += 1
    assert checked == 120


@BOTH
def test_zero_cost_computations_build_exactly_the_gold_tree(system):
    rng = random.Random(4)
    for n in range(1, 6):
        for gold in mixed_trees(n, rng, 2):
            assert_zero_cost_paths_reach_gold(system, gold)


def assert_costs_are_loss_differences(system, gold, rng, explore=0.5):
    """Along one computation (zero-cost actions, or with probability ``explore``
    a random one), every action's cost is the difference of Theorem 1 losses,
    and the final loss is the system's loss of the tree built (Hamming, or
    with ``headless: wrong`` headless words wrong)."""
    oracle = system.dynamic_oracle(gold)
    state = system.initial_state(len(gold) - 1)
    assert oracle.loss(state) == 0
    while not system.is_final(state):
        costs = oracle.costs(state)
        base = oracle.loss(state)
        legal = system.legal_actions(state)
        assert costs == {a: oracle.loss(successor(system, state, a)) - base for a in legal}
        zero = [a for a, c in costs.items() if c == 0]
        system.apply(state, rng.choice(list(costs) if rng.random() < explore else zero))
    assert oracle.loss(state) == system.final_loss(state.heads, gold)


@BOTH
def test_costs_are_loss_differences_on_long_random_trees(system):
    rng = random.Random(9)
    for k in range(12):
        n = rng.randint(10, 40)
        gold = random_tree(n, rng, single_root=bool(k % 2))
        assert_costs_are_loss_differences(system, gold, rng, explore=0.3 if k % 3 else 0.0)


def ewt_trees(max_sentences):
    import conllu

    with open(EWT_TRAIN, encoding="utf-8") as f:
        for k, sentence in enumerate(conllu.parse_incr(f)):
            if k == max_sentences:
                return
            words = [t for t in sentence if isinstance(t["id"], int)]
            yield [NO_HEAD] + [t["head"] for t in words]


@pytest.mark.slow
@pytest.mark.skipif(not EWT_TRAIN.exists(), reason="UD_English-EWT not in ../shared/ud")
@BOTH
def test_costs_on_english_ewt_sentences(system):
    rng = random.Random(0)
    for gold in ewt_trees(30):
        assert_costs_are_loss_differences(system, gold, rng, explore=rng.choice([0.0, 0.2, 1.0]))
        assert_static_oracle_builds(system, [gold])
