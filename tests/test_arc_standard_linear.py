"""The linear-time recursion of the arc-standard dynamic oracle for projective
gold trees (Nederhof 2019, section 6; :mod:`kgparser.transitions._arc_standard_linear`):
exact against brute force on every reachable state of small sentences, and
its memo bounded by ``c * (stack + critical words)`` on adversarial and random
configurations."""
import random

import pytest

from kgparser.transitions import get_system
from kgparser.transitions.arc_standard import ArcStandardDynamicOracle
from kgparser.transitions.base import StackBufferState
from kgparser.transitions.checking import ExactLoss, OracleReport, check_state_costs, reachable_states
from kgparser.transitions.trees import all_trees, is_projective, random_projective_tree

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

SYSTEM = get_system("arc-standard")

# states memoised per unit (stack word or critical word), summed over the
# configurations one ``costs()`` call reduces; the previous recursion was
# quadratic on the high fan-out and ladder families (about 900 states for 83
# units at size 20, 13000 for 163 at size 80)
STATES_PER_UNIT = 8


def configuration(n, stack, b):
    state = StackBufferState(n)
    state.stack, state.b = list(stack), b
    return state


def high_fan_out(left, right):
    """Head ``h = left + 1`` with ``left`` dependents on the stack and ``right``
    in the buffer; everything up to ``h`` shifted."""
    h = left + 1
    gold = [-1] + [h] * left + [0] + [h] * right
    return gold, list(range(h + 1)), h + 1


def ladder(k):
    """Stack ``1..k``, buffer chain ``k+1 <- k+2 <- ... <- 2k`` (under the root),
    word ``l`` headed by the chain word ``2k + 1 - l``: each stack level meets
    the chain at a different word."""
    gold = [-1] * (2 * k + 1)
    for w in range(k + 1, 2 * k):
        gold[w] = w + 1
    gold[2 * k] = 0
    for length in range(1, k + 1):
        gold[length] = 2 * k + 1 - length
    return gold, list(range(k + 1)), k + 1


def chain(n, rightward):
    """Each word headed by its right (or left) neighbour, half of it shifted."""
    gold = [-1] + ([w + 1 for w in range(1, n)] + [0] if rightward else [w - 1 for w in range(1, n + 1)])
    b = n // 2
    return gold, list(range(b)), b


def nested_fans(depth, width):
    """Heads each with ``width`` stack dependents and ``width`` buffer
    dependents, nested ``depth`` deep around the stack/buffer boundary."""
    gold = [-1]
    heads_at = []

    def build(level, parent):
        start = len(gold)
        gold.extend([None] * width)
        head = len(gold)
        gold.append(parent)
        heads_at.append(head)
        for w in range(start, head):
            gold[w] = head
        if level + 1 < depth:
            build(level + 1, head)
        for _ in range(width):
            gold.append(head)
        return head

    build(0, 0)
    boundary = heads_at[-1] + 1
    return gold, list(range(boundary)), boundary


def memo_per_unit(gold, stack, b):
    """States memoised by one ``costs()`` of a fresh oracle, and the units
    (stack words plus critical words) of the configurations it reduced."""
    oracle = ArcStandardDynamicOracle(gold)
    state = configuration(len(gold) - 1, stack, b)
    assert oracle.projective
    oracle.costs(state)
    assert oracle._memos, "projective gold did not take the recursion"
    states = sum(len(level) for _, memo in oracle._memos.values() for level in memo)
    units = sum(len(reduced) + len(oracle._critical_words(start)[0])
                for start, (reduced, _) in oracle._memos.items())
    return states, units


@pytest.mark.parametrize("family,sizes", [
    (lambda s: high_fan_out(s, s), (20, 60, 150)),
    (lambda s: high_fan_out(s, 3), (20, 60, 150)),
    (lambda s: high_fan_out(3, s), (20, 60, 150)),
    (ladder, (20, 60, 150)),
    (lambda s: chain(s, True), (40, 120, 300)),
    (lambda s: chain(s, False), (40, 120, 300)),
    (lambda s: nested_fans(s, s), (3, 6, 10)),
])
def test_memo_is_linear_on_adversarial_configurations(family, sizes):
    for size in sizes:
        gold, stack, b = family(size)
        assert is_projective(gold)
        states, units = memo_per_unit(gold, stack, b)
        assert states <= STATES_PER_UNIT * units, (size, states, units)


def test_memo_is_linear_on_random_configurations():
    rng = random.Random(21)
    for n in (30, 100, 250):
        for _ in range(12):
            gold = random_projective_tree(n, rng, single_root=rng.random() < 0.5)
            b = rng.randint(2, n + 1)
            density = rng.random()
            stack = [0] + [w for w in range(1, b) if rng.random() < density]
            if len(stack) == 1:
                stack.append(b - 1)
            states, units = memo_per_unit(gold, stack, b)
            assert states <= STATES_PER_UNIT * units, (gold, stack, b, states, units)


def assert_exact_on_every_state(gold):
    """Every reachable state: the recursion's costs equal brute force."""
    n = len(gold) - 1
    oracle = ArcStandardDynamicOracle(gold)
    truth = ExactLoss(SYSTEM, gold)
    report = OracleReport()
    for state in reachable_states(SYSTEM, n):
        if not SYSTEM.is_final(state):
            check_state_costs(SYSTEM, oracle, state, gold, report, truth)
    assert not report.problems, "\n".join(report.problems[:5])
    assert report.states > 0 and oracle._memos


@pytest.mark.exhaustive
def test_exact_on_every_state_of_a_quarter_of_the_projective_trees_of_five_words():
    projective = [gold for gold in all_trees(5) if is_projective(gold)]
    for gold in projective[::4]:
        assert_exact_on_every_state(gold)


@pytest.mark.parametrize("gold", [
    high_fan_out(2, 3)[0], high_fan_out(3, 2)[0], ladder(3)[0],
    chain(6, True)[0], chain(6, False)[0], nested_fans(2, 1)[0],
    # a component root on top after skipping an unrelated chain: skipped arcs counted once
    [-1, 5, 4, 4, 1, 6, 0],
])
def test_exact_on_every_state_of_the_adversarial_families(gold):
    assert_exact_on_every_state(gold)


@pytest.mark.exhaustive
def test_exact_on_every_state_of_random_projective_trees_of_seven_words():
    rng = random.Random(22)
    for index in range(2):
        assert_exact_on_every_state(random_projective_tree(7, rng, single_root=bool(index % 2)))


@pytest.mark.exhaustive
def test_recursion_deeper_than_pythons_recursion_limit():
    """A 1,200-word chain, each word headed by the previous one: the gold path
    shifts every word first, so the recursion is 1,200 levels deep (it runs on
    an explicit stack); with no work limit no call falls back, and the gold
    path costs 0 at every state while the other actions lose arcs."""
    n = 1200
    gold = [-1] + list(range(n))
    oracle = ArcStandardDynamicOracle(gold, work_limit=10 ** 9)
    static = SYSTEM.static_oracle(gold)
    state = StackBufferState(n)
    while not SYSTEM.is_final(state):
        costs = oracle.costs(state)
        action = static.next_action(state)
        assert costs[action] == 0 and all(cost > 0 for other, cost in costs.items() if other != action)
        SYSTEM.apply(state, action)
    assert not oracle.fallbacks and state.heads == gold
