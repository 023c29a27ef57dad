import random

import pytest
from harness import assert_exact_dynamic_oracle, assert_static_oracle_builds, coverage

from kgparser.projectivize import projectivize_tree
from kgparser.transitions import get_system
from kgparser.transitions.arc_standard import ArcStandardDynamicOracle, ArcStandardOptionError
from kgparser.transitions.checking import ExactLoss, reachable_states
from kgparser.transitions.trees import all_trees, is_projective, random_projective_tree, random_tree

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

SYSTEM = get_system("arc-standard")


def random_nonprojective_trees(count):
    """``count`` random non-projective trees of ``n`` words (none below 3 words)."""

    def make(n, rng):
        found = []
        for attempt in range(200 * count):
            if len(found) == count:
                break
            tree = random_tree(n, rng, single_root=bool(attempt % 2))
            if not is_projective(tree):
                found.append(tree)
        return found

    return make


def test_builds_exactly_the_projective_trees():
    for n in range(1, 6):
        assert coverage(SYSTEM, n) == {tuple(t) for t in all_trees(n) if is_projective(t)}


def test_can_build_is_projectivity():
    rng = random.Random(5)
    for _ in range(100):
        tree = random_tree(rng.randint(1, 9), rng)
        assert SYSTEM.can_build(tree) == is_projective(tree)


def test_static_oracle_rebuilds_every_projective_tree():
    assert_static_oracle_builds(SYSTEM, (t for n in range(1, 6) for t in all_trees(n) if is_projective(t)))
    rng = random.Random(0)
    assert_static_oracle_builds(SYSTEM, (random_projective_tree(rng.randint(1, 40), rng) for _ in range(200)))


def dominates(heads, ancestor, node):
    while node > 0 and node != ancestor:
        node = heads[node]
    return node == ancestor


def completions_by_characterisation(state, trees):
    """The trees of ``trees`` that extend ``state`` as the chart of the oracle
    assumes: projective, new arcs only between unattached words (and the
    root), and a stack word below the top that gets a left dependent or a head
    on its left dominates the top."""
    stack, top = state.stack, state.stack[-1]
    middle = set(stack[1:-1])
    units = {0} | {d for d in range(1, len(state.heads)) if state.heads[d] == -1}
    found = set()
    for tree in trees:
        if any(h != -1 and tree[d] != h for d, h in enumerate(state.heads) if d > 0):
            continue
        if any(tree[d] not in units for d in units if d > 0):
            continue
        needs_top = {tree[d] for d in range(1, len(tree)) if state.heads[d] == -1 and d < tree[d]}
        needs_top |= {d for d in middle if tree[d] < d}
        if all(dominates(tree, word, top) for word in needs_top & middle):
            found.add(tuple(tree))
    return found


def test_reachable_trees_are_those_of_the_chart_characterisation():
    rng = random.Random(9)
    for n in range(1, 6):
        trees = [t for t in all_trees(n) if is_projective(t)]
        truth = ExactLoss(SYSTEM, [0] * (n + 1))
        for state in reachable_states(SYSTEM, n, limit=150, rng=rng):
            assert truth.final_trees(state) == completions_by_characterisation(state, trees), state.key()


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_for_nonprojective_gold_small():
    assert_exact_dynamic_oracle(SYSTEM, range(3, 7), None, trees=random_nonprojective_trees(3), seed=2)


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_for_projective_gold_small():
    assert_exact_dynamic_oracle(SYSTEM, range(1, 7), 3, projective_only=True, seed=3)


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_on_sampled_states_seven_words():
    assert_exact_dynamic_oracle(SYSTEM, [7], None, trees=random_nonprojective_trees(2), limit=800, seed=4)
    assert_exact_dynamic_oracle(SYSTEM, [7], 2, projective_only=True, limit=800, seed=5)


def every_projective_tree(n, rng):
    return [t for t in all_trees(n) if is_projective(t)]


@pytest.mark.exhaustive
def test_linear_recursion_is_exact_on_every_state_up_to_six_words():
    """Projective gold takes the linear recursion (section 6): every reachable
    state of every gold tree of up to four words, and of random ones of five
    and six, has brute-force costs."""
    assert_exact_dynamic_oracle(SYSTEM, range(1, 5), None, trees=every_projective_tree, seed=10)
    assert_exact_dynamic_oracle(SYSTEM, [5, 6], 6, projective_only=True, seed=11)


@pytest.mark.exhaustive
def test_linear_recursion_is_exact_on_sampled_states_eight_words():
    assert_exact_dynamic_oracle(SYSTEM, [7], 2, projective_only=True, limit=300, seed=12)
    assert_exact_dynamic_oracle(SYSTEM, [8], 2, projective_only=True, limit=250, seed=13)


def test_linear_recursion_agrees_with_the_cubic_chart_on_long_sentences():
    """10-40 words, states reached with random mistakes: uniform ones (many
    arcs lost), shift-heavy ones (deep stacks) and rare ones among zero-cost
    steps (what training sees)."""
    rng = random.Random(14)
    for walk in (random_walk_states, deep_walk_states, mostly_optimal_walk_states):
        for _ in range(5):
            gold = random_projective_tree(rng.randint(10, 40), rng, single_root=rng.random() < 0.7)
            linear = ArcStandardDynamicOracle(gold)
            cubic = ArcStandardDynamicOracle(gold, linear=False)
            for state in walk(gold, rng):
                assert linear.costs(state) == cubic.costs(state), (gold, state.key())
            assert linear._memos, "projective gold did not take the recursion"
            assert not linear.fallbacks and not cubic.fallbacks


def deep_walk_states(gold, rng):
    state = SYSTEM.initial_state(len(gold) - 1)
    states = []
    while not SYSTEM.is_final(state):
        states.append(state.copy())
        legal = SYSTEM.legal_actions(state)
        SYSTEM.apply(state, "shift" if "shift" in legal and rng.random() < 0.7 else rng.choice(legal))
    return states


def mostly_optimal_walk_states(gold, rng):
    oracle = ArcStandardDynamicOracle(gold, linear=False)
    state = SYSTEM.initial_state(len(gold) - 1)
    states = []
    while not SYSTEM.is_final(state):
        states.append(state.copy())
        costs = oracle.costs(state)
        if rng.random() < 0.15:
            SYSTEM.apply(state, rng.choice(list(costs)))
        else:
            SYSTEM.apply(state, rng.choice([a for a, c in costs.items() if c == 0]))
    return states


def test_projective_shortcut_agrees_with_the_full_chart():
    rng = random.Random(6)
    for n in range(1, 8):
        gold = random_projective_tree(n, rng, single_root=bool(n % 2))
        compare_oracles_on(gold, reachable_states(SYSTEM, n, limit=400, rng=rng))
    for _ in range(10):
        gold = random_projective_tree(rng.randint(10, 30), rng, single_root=True)
        compare_oracles_on(gold, random_walk_states(gold, rng))


def compare_oracles_on(gold, states):
    shortcut = ArcStandardDynamicOracle(gold)
    full = ArcStandardDynamicOracle(gold, use_projective_shortcut=False)
    assert shortcut.projective and not full.projective
    for state in states:
        if not SYSTEM.is_final(state):
            assert shortcut.costs(state) == full.costs(state), (gold, state.key())
    assert not shortcut.fallbacks and not full.fallbacks


def random_walk_states(gold, rng):
    state = SYSTEM.initial_state(len(gold) - 1)
    states = []
    while not SYSTEM.is_final(state):
        states.append(state.copy())
        SYSTEM.apply(state, rng.choice(SYSTEM.legal_actions(state)))
    return states


def test_zero_cost_computations_reach_an_optimal_projectivization():
    """Longer sentences, no brute force: from the start, zero-cost actions lose
    exactly the arcs that optimal projectivization must move."""
    rng = random.Random(8)
    for _ in range(12):
        n = rng.randint(8, 25)
        gold = random_tree(n, rng, single_root=True)
        oracle = SYSTEM.dynamic_oracle(gold)
        state = SYSTEM.initial_state(n)
        while not SYSTEM.is_final(state):
            costs = oracle.costs(state)
            SYSTEM.apply(state, rng.choice([a for a, c in costs.items() if c == 0]))
        wrong = sum(1 for d in range(1, n + 1) if state.heads[d] != gold[d])
        assert wrong == projectivize_tree(gold)[2]


def test_costs_follow_a_lost_gold_arc():
    # gold: 1 <- 2 -> 3, 2 under the root; after shift shift shift, "right"
    # (2 -> 3) is free, "left" (2 <- 3) removes 2, losing all three arcs
    gold = [-1, 2, 0, 2]
    state = SYSTEM.initial_state(3)
    for _ in range(3):
        SYSTEM.apply(state, "shift")
    assert SYSTEM.dynamic_oracle(gold).costs(state) == {"left": 3, "right": 0}
    assert SYSTEM.static_oracle(gold).next_action(state) == "right"


def test_features_are_the_top_three_stack_words_and_first_buffer_word():
    state = SYSTEM.initial_state(4)
    assert SYSTEM.features(state) == [0, -1, -1, 1]
    for _ in range(3):
        SYSTEM.apply(state, "shift")
    assert SYSTEM.features(state) == [3, 2, 1, 4]
    SYSTEM.apply(state, "left", "nsubj")
    assert SYSTEM.features(state) == [3, 1, 0, 4]
    assert state.heads[2] == 3 and state.labels[2] == "nsubj"


def test_work_limit_option_is_checked_and_kept():
    assert get_system("arc-standard", work_limit=7).options() == {"work_limit": 7}
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(ArcStandardOptionError, match="work_limit"):
            get_system("arc-standard", work_limit=bad)


@pytest.mark.exhaustive
def test_calls_over_the_work_limit_fall_back_and_are_counted():
    """``work_limit=0``: every call answers with the local costs, one per
    legal action with a zero, and counts itself; on random trees walked with
    mistakes those costs are mostly the exact ones (measured: 57% of the
    states with a choice on projective gold, 27% on any gold; every
    zero-cost action truly costs 0 on 92% and 82%)."""
    rng = random.Random(31)
    for make, exact_share, sound_share in ((random_projective_tree, 0.5, 0.85), (random_tree, 0.2, 0.75)):
        states = same = sound = 0
        for _ in range(60):
            gold = make(rng.randint(5, 20), rng)
            exact = ArcStandardDynamicOracle(gold)
            approx = ArcStandardDynamicOracle(gold, work_limit=0)
            for calls, state in enumerate(random_walk_states(gold, rng), 1):
                truth, costs = exact.costs(state), approx.costs(state)
                assert approx.fallbacks == calls and not exact.fallbacks
                assert set(costs) == set(SYSTEM.legal_actions(state)) and min(costs.values()) == 0
                if len(costs) > 1:
                    states += 1
                    same += costs == truth
                    sound += all(truth[action] == 0 for action, cost in costs.items() if cost == 0)
        assert same > exact_share * states and sound > sound_share * states, (same, sound, states)


@pytest.mark.exhaustive
def test_a_long_sentence_stays_within_the_work_limit():
    """A 1,500-word random tree (non-projective: the cubic chart) and chains
    whose stack or critical words pass the limit: every call is bounded, the
    expensive ones fall back."""
    rng = random.Random(32)
    n = 1500
    for gold in (random_tree(n, rng), [-1] + list(range(n)), [-1] + list(range(2, n + 1)) + [0]):
        oracle = SYSTEM.dynamic_oracle(gold)
        state = SYSTEM.initial_state(n)
        for _ in range(2 * n):
            costs = oracle.costs(state)
            SYSTEM.apply(state, min(costs, key=costs.get))
        assert SYSTEM.is_final(state) and oracle.fallbacks > 0
