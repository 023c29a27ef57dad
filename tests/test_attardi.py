"""Attardi's degree-2 parser (Gómez-Rodríguez, Sartorio & Satta 2014): coverage,
static oracle, exactness of the tabular dynamic oracle, its work bound."""
import random
from pathlib import Path

import pytest
from harness import assert_exact_dynamic_oracle, assert_static_oracle_builds, coverage

from kgparser.errors import KgparserError
from kgparser.transitions import get_system
from kgparser.transitions._attardi_table import BufferReduction, FutureLoss
from kgparser.transitions.attardi import Attardi, AttardiOptionError
from kgparser.transitions.base import resolved_heads
from kgparser.transitions.checking import check_dynamic_oracle, check_static_oracle
from kgparser.transitions.trees import all_trees, children, is_projective, random_tree

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

SYSTEM = get_system("attardi")
UD = Path(__file__).resolve().parents[2] / "shared" / "ud"
EWT_TRAIN = UD / "UD_English-EWT" / "en_ewt-ud-train.conllu"


def derived_tree(n, rng):
    """The tree of a random computation: a random tree the parser can build."""
    state = SYSTEM.initial_state(n)
    while not SYSTEM.is_final(state):
        SYSTEM.apply(state, rng.choice(SYSTEM.legal_actions(state)))
    return resolved_heads(state.heads)


def buildable_trees(n, rng, count, nonprojective=None):
    """``count`` distinct buildable trees of ``n`` words (``nonprojective``:
    True = only non-projective ones, None = any)."""
    found = {}
    while len(found) < count:
        tree = derived_tree(n, rng)
        if nonprojective is None or nonprojective != is_projective(tree):
            found[tuple(tree)] = tree
    return list(found.values())


def test_coverage_is_exactly_can_build():
    for n in range(1, 6):
        trees = list(all_trees(n))
        assert coverage(SYSTEM, n) == {tuple(t) for t in trees if SYSTEM.can_build(t)}
    # degree 2 reaches some non-projective trees, but not all of them
    covered = [t for t in trees if SYSTEM.can_build(t)]
    assert any(not is_projective(t) for t in covered)
    assert len(covered) < len(trees)
    assert all(SYSTEM.can_build(t) for t in trees if is_projective(t))


def test_static_oracle_rebuilds_every_buildable_tree():
    small = [t for n in range(1, 6) for t in all_trees(n) if SYSTEM.can_build(t)]
    assert_static_oracle_builds(SYSTEM, small)
    rng = random.Random(0)
    big = [derived_tree(rng.randint(6, 30), rng) for _ in range(300)]
    assert any(not is_projective(t) for t in big)
    assert all(SYSTEM.can_build(t) for t in big)
    assert_static_oracle_builds(SYSTEM, big)


def test_static_oracle_fails_exactly_where_can_build_says_no():
    unbuildable = [t for t in all_trees(5) if not SYSTEM.can_build(t)]
    assert unbuildable
    assert all(check_static_oracle(SYSTEM, t) is not None for t in unbuildable)


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_on_all_states_up_to_five_words():
    rng = random.Random(1)

    def golds(n, _):
        return [t for t in all_trees(n) if SYSTEM.can_build(t)] if n < 4 else buildable_trees(n, rng, 8)

    assert_exact_dynamic_oracle(SYSTEM, range(1, 6), 0, trees=golds)


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_on_all_states_of_six_words():
    rng = random.Random(2)
    golds = buildable_trees(6, rng, 1, nonprojective=True) + buildable_trees(6, rng, 1, nonprojective=False)
    assert_exact_dynamic_oracle(SYSTEM, [6], 0, trees=lambda n, _: golds)


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_on_sampled_states_of_seven_words():
    rng = random.Random(3)
    golds = buildable_trees(7, rng, 2, nonprojective=True)
    assert_exact_dynamic_oracle(SYSTEM, [7], 0, limit=500, seed=3, trees=lambda n, _: golds)


def test_buffer_fragment_hanging_from_an_attached_word_is_not_reduced():
    # gold: 2 -> 1, 0 -> 2, 1 -> 3.  After `shift, right` (0 -> 1, wrong), 3
    # can no longer get its head 1: reducing the fragment {2, 3} into 2
    # (section 5.2 conditions only) would hide that loss.
    gold = [-1, 2, 0, 1]
    state = SYSTEM.initial_state(3)
    SYSTEM.apply(state, "shift")
    SYSTEM.apply(state, "right")
    assert BufferReduction(gold, children(gold)).reduced(state.stack, 2) == [2, 3]
    report = check_dynamic_oracle(SYSTEM, gold)
    assert report.states > 0 and not report.problems


def test_dynamic_oracle_is_well_formed_for_trees_it_cannot_build():
    rng = random.Random(4)
    unbuildable = [t for t in all_trees(5) if not SYSTEM.can_build(t)]
    for gold in rng.sample(unbuildable, 4):
        report = check_dynamic_oracle(SYSTEM, gold, exact=False)
        assert report.states > 0 and not report.problems, report.problems[:3]


def test_fallback_is_taken_over_budget_and_prices_the_static_path_at_zero():
    rng = random.Random(5)
    system = get_system("attardi", work_limit=0)
    for gold in buildable_trees(12, rng, 5, nonprojective=True):
        oracle, static = system.dynamic_oracle(gold), system.static_oracle(gold)
        state = system.initial_state(len(gold) - 1)
        calls = 0
        while not system.is_final(state):
            costs = oracle.costs(state)
            calls += len(costs) > 1  # a single legal action needs no table
            assert set(costs) == set(system.legal_actions(state)) and min(costs.values()) == 0
            action = static.next_action(state)
            assert costs[action] == 0
            system.apply(state, action)
        assert oracle.fallbacks == calls


def test_fallback_bounds_the_work_of_pathological_states():
    """A 60-word stack over a 19-word buffer: the budget (in work units, a
    deterministic stand-in for time) runs out and the call still answers."""
    rng = random.Random(6)
    n = 80
    gold = random_tree(n, rng)
    system = Attardi(work_limit=200_000)
    oracle = system.dynamic_oracle(gold)
    state = system.initial_state(n)
    for _ in range(60):  # shift a lot, then reduce at random: long stack, long buffer
        system.apply(state, "shift")
    system.apply(state, "right2")
    costs = oracle.costs(state)
    assert oracle.fallbacks == 1
    assert set(costs) == set(system.legal_actions(state)) and min(costs.values()) == 0


def test_exact_costs_need_no_fallback_on_small_sentences():
    rng = random.Random(7)
    gold = buildable_trees(9, rng, 1, nonprojective=True)[0]
    oracle = SYSTEM.dynamic_oracle(gold)
    state = SYSTEM.initial_state(9)
    while not SYSTEM.is_final(state):
        costs = oracle.costs(state)
        SYSTEM.apply(state, rng.choice(list(costs)))
    assert oracle.fallbacks == 0


def test_actions_link_and_pop_the_words_of_figure_1():
    state = SYSTEM.initial_state(4)
    for _ in range(4):
        SYSTEM.apply(state, "shift")
    assert SYSTEM.features(state) == [4, 3, 2, 1, -1]
    expected = {"left": (4, 3, [0, 1, 2, 4]), "right": (3, 4, [0, 1, 2, 3]),
                "left2": (4, 2, [0, 1, 3, 4]), "right2": (2, 4, [0, 1, 2, 3])}
    for action, (head, dep, stack) in expected.items():
        after = state.copy()
        assert SYSTEM.arc_of(after, action) == (head, dep)
        SYSTEM.apply(after, action, "lab")
        assert after.heads[dep] == head and after.labels[dep] == "lab" and after.stack == stack


def test_root_is_never_a_dependent_and_heads_the_last_word():
    state = SYSTEM.initial_state(2)
    SYSTEM.apply(state, "shift")
    assert SYSTEM.legal_actions(state) == ["shift", "right"]
    SYSTEM.apply(state, "shift")
    assert "left2" not in SYSTEM.legal_actions(state)
    SYSTEM.apply(state, "right2")
    assert state.heads[2] == 0


def test_bad_option_is_a_user_error():
    with pytest.raises(KgparserError, match="work_limit"):
        get_system("attardi", work_limit=-1)
    assert issubclass(AttardiOptionError, KgparserError)
    assert get_system("attardi", work_limit=5).options() == {"work_limit": 5, "tie_break": "none", "lost_words": "free"}


def read_heads(path, limit):
    sentence = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            line = line.rstrip("\n")
            if not line:
                if sentence:
                    yield [-1] + sentence
                    limit -= 1
                    if not limit:
                        return
                sentence = []
            elif not line.startswith("#"):
                cols = line.split("\t")
                if cols[0].isdigit():
                    sentence.append(int(cols[6]))


@pytest.mark.slow
@pytest.mark.skipif(not EWT_TRAIN.exists(), reason="UD English-EWT not available")
def test_real_sentences_with_errors_stay_within_budget():
    rng = random.Random(8)
    for gold in read_heads(EWT_TRAIN, 40):
        if SYSTEM.can_build(gold):
            assert check_static_oracle(SYSTEM, gold) is None
        oracle = SYSTEM.dynamic_oracle(gold)
        state = SYSTEM.initial_state(len(gold) - 1)
        while not SYSTEM.is_final(state):
            costs = oracle.costs(state)
            if rng.random() < 0.2:
                action = rng.choice(list(costs))
            else:
                action = rng.choice([a for a, c in costs.items() if c == 0])
            SYSTEM.apply(state, action)
        assert oracle.fallbacks == 0


def test_reused_oracle_takes_the_configuration_loss_from_its_previous_call(monkeypatch):
    """Along a computation, the loss of each state was computed by the
    previous call (for one of its successors): a reused oracle gives the
    costs of a fresh one without tables for the configuration itself."""
    configuration_tables = []
    exact = FutureLoss.exact

    def recording_exact(self, budget, at_least=0, at_most=None):
        if at_most is not None:
            configuration_tables.append(self)
        return exact(self, budget, at_least, at_most)

    monkeypatch.setattr(FutureLoss, "exact", recording_exact)
    rng = random.Random(15)
    reused_tables = 0
    for _ in range(30):
        gold = derived_tree(rng.randint(8, 12), rng)
        reused = SYSTEM.dynamic_oracle(gold)
        state = SYSTEM.initial_state(len(gold) - 1)
        while not SYSTEM.is_final(state):
            before = len(configuration_tables)
            costs = reused.costs(state)
            reused_tables += len(configuration_tables) - before
            assert SYSTEM.dynamic_oracle(gold).costs(state) == costs
            SYSTEM.apply(state, rng.choice(list(costs)))
    assert reused_tables == 0 and configuration_tables


def test_fallback_costs_are_mostly_the_exact_ones():
    """The greedy upper bounds price most states exactly (84% on Hungarian
    sentences; a local estimate of the damage of each reduce: 42%)."""
    rng = random.Random(8)
    exact, approximate = SYSTEM, get_system("attardi", work_limit=0)
    same = states = 0
    for gold in buildable_trees(18, rng, 30, nonprojective=True):
        oracle, fallback = exact.dynamic_oracle(gold), approximate.dynamic_oracle(gold)
        state = exact.initial_state(len(gold) - 1)
        while not exact.is_final(state):
            costs = oracle.costs(state)
            if len(costs) > 1:
                states += 1
                same += fallback.costs(state) == costs
            wrong = [a for a, c in costs.items() if c]
            action = rng.choice(wrong) if wrong and rng.random() < 0.2 else min(costs, key=costs.get)
            exact.apply(state, action)
    assert states > 500 and same / states > 0.8, (same, states)
