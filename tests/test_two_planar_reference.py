"""The 2-Planar dynamic oracle against a full evaluation of its loss.

``TwoPlanarDynamicOracle.costs`` computes each action's cost from the words
and cycles the action touches.  Here the loss of Fernández-González &
Gómez-Rodríguez (2018, section 3), ``|U1 ∪ U2| + nc(A ∪ I1 ∪ I2)`` relative to
the canonical planes, is evaluated in full on every successor state, and the
costs derived from it (switch: least loss after the forced next action;
after a switch: relative to the least of the remaining actions; the
regularization) must be identical, on every reachable state of small
sentences and on sampled states of larger and real ones.
"""
import itertools
import os
import random

import pytest

from kgparser.transitions import get_system
from kgparser.transitions.base import NO_HEAD, ROOT
from kgparser.transitions.checking import reachable_states, successor
from kgparser.transitions.trees import all_trees, random_tree
from kgparser.transitions.two_planar import canonical_planes, two_planar_subset

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

SYSTEM = get_system("two-planar")
PLAIN = get_system("two-planar", regularize_switch=False)
UD = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "ud", "UD_English-EWT", "en_ewt-ud-dev.conllu")


def tree_root(heads, word):
    while heads[word] != NO_HEAD:
        word = heads[word]
    return word


def count_cycles(up):
    """Cycles of a graph where every node has at most one parent ``up[node]``."""
    cycles, done = 0, set()
    for start in range(1, len(up)):
        walk = []
        w = start
        while w not in (NO_HEAD, ROOT) and w not in done and w not in walk:
            walk.append(w)
            w = up[w]
        cycles += w in walk
        done.update(walk)
    return cycles


class FullLoss:
    """The loss of a configuration, evaluated over every word."""

    def __init__(self, gold):
        self.gold = two_planar_subset(gold)
        self.planes = canonical_planes(self.gold)
        self.dropped = sum(1 for d in range(1, len(gold)) if self.gold[d] != gold[d])

    def reachable(self, state, dep):
        """The gold arc into the headless ``dep`` is individually reachable in its plane."""
        g, plane = self.gold[dep], self.planes[dep]
        lo, hi = min(g, dep), max(g, dep)
        in_buffer = state.b <= hi and (state.b <= lo or lo in state.stacks[plane])
        return in_buffer and tree_root(state.heads, g) != dep

    def graph(self, state):
        """``A ∪ I1 ∪ I2`` as heads: the built arcs and the reachable gold arcs into headless words."""
        return [h if h != NO_HEAD or self.gold[d] in (ROOT, NO_HEAD) or not self.reachable(state, d)
                else self.gold[d] for d, h in enumerate(state.heads)]

    def __call__(self, state):
        lost = self.dropped
        for d in range(1, len(self.gold)):
            g, h = self.gold[d], state.heads[d]
            if h != NO_HEAD:
                lost += g == ROOT or (g != NO_HEAD and (h != g or state.plane[d] != self.planes[d]))
            elif g not in (ROOT, NO_HEAD):
                lost += not self.reachable(state, d)
        return lost + count_cycles(self.graph(state))

    def has_work(self, state, plane):
        """Some reachable gold arc of ``plane`` between ``b0`` and a word on that plane's stack."""
        b = state.b
        return any(self.planes[d] == plane and state.heads[d] == NO_HEAD and max(d, self.gold[d]) == b
                   and min(d, self.gold[d]) in state.stacks[plane] and self.reachable(state, d)
                   for d in range(1, len(self.gold)) if self.gold[d] not in (ROOT, NO_HEAD))


def reference_costs(system, loss, state):
    """The costs of ``state`` from full loss evaluations of the successors."""
    after = {a: loss(successor(system, state, a)) for a in system.legal_actions(state) if a != "switch"}
    if state.switched:
        base = min(after.values())
        return {a: value - base for a, value in after.items()}
    base = loss(state)
    costs = {a: value - base for a, value in after.items()}
    switched = successor(system, state, "switch")
    costs["switch"] = min(loss(successor(system, switched, a)) for a in system.legal_actions(switched)) - base
    if system.regularize_switch and not (not loss.has_work(state, state.active)
                                         and loss.has_work(state, 1 - state.active)):
        costs["switch"] += 1
    return costs


def compare(system, gold, states):
    """Costs equal the reference on every non-final state; returns how many
    states were compared and in how many the graph of some successor has a
    cycle."""
    loss = FullLoss(gold)
    oracle = system.dynamic_oracle(gold)
    compared = with_cycles = 0
    for state in states:
        if system.is_final(state):
            continue
        key = state.key()
        got = oracle.costs(state)
        assert state.key() == key, "costs() changed the state"
        want = reference_costs(system, loss, state)
        assert got == want, f"gold={gold} state={key}: costs {got} != reference {want}"
        compared += 1
        with_cycles += any(count_cycles(loss.graph(successor(system, state, a))) for a in system.legal_actions(state))
    return compared, with_cycles


def compare_all(system, golds_and_states):
    totals = [0, 0]
    for gold, states in golds_and_states:
        for i, count in enumerate(compare(system, gold, states)):
            totals[i] += count
    return totals


@pytest.mark.exhaustive
@pytest.mark.parametrize("system", [SYSTEM, PLAIN], ids=["regularized", "plain"])
def test_costs_equal_full_evaluation_on_every_state_of_small_sentences(system):
    states = {n: reachable_states(system, n) for n in range(1, 4)}
    compared, with_cycles = compare_all(system, ((gold, states[n]) for n in states for gold in all_trees(n)))
    assert compared > 20000
    # the cycle correction is exercised, not only the count of lost arcs
    assert with_cycles > 30


@pytest.mark.exhaustive
def test_costs_equal_full_evaluation_on_sampled_states_of_larger_sentences():
    rng = random.Random(21)
    golds = [random_tree(n, rng, single_root=bool(i % 2)) for n in (4, 5, 6, 8, 10, 14) for i in range(4)]
    for system in (SYSTEM, PLAIN):
        _, with_cycles = compare_all(system, ((gold, reachable_states(system, len(gold) - 1, limit=300, rng=rng))
                                              for gold in golds))
        assert with_cycles > 50


def follow_with_errors(system, gold, rng, explore):
    """The states of one computation taking the oracle's cheapest action, or
    with probability ``explore`` a random legal one."""
    oracle, state = system.dynamic_oracle(gold), system.initial_state(len(gold) - 1)
    states = []
    while not system.is_final(state):
        states.append(state.copy())
        costs = oracle.costs(state)
        if rng.random() < explore:
            action = rng.choice(sorted(costs))
        else:
            action = min(sorted(costs), key=costs.get)
        system.apply(state, action)
    return states


@pytest.mark.exhaustive
@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(UD), reason="UD_English-EWT not available")
def test_costs_equal_full_evaluation_on_english_ewt():
    from kgparser.io.conllu import read_conllu

    rng = random.Random(22)
    golds = [sentence.heads for sentence in itertools.islice(read_conllu(UD), 150)]
    for system in (SYSTEM, PLAIN):
        _, with_cycles = compare_all(system, ((gold, follow_with_errors(system, gold, rng, 0.3)) for gold in golds))
        assert with_cycles > 0
