"""The stages of the Attardi dynamic oracle (Gómez-Rodríguez, Sartorio & Satta
2014, section 5) and its shortcuts: buffer reduction against its definition,
the greedy bounds of the future loss, and exactness of the tables alone."""
import random

import pytest
from harness import assert_exact_dynamic_oracle
from test_attardi import derived_tree

import kgparser.transitions._attardi_table as table
from kgparser.transitions import get_system
from kgparser.transitions._attardi_table import Budget, BufferReduction, FutureLoss
from kgparser.transitions.checking import check_dynamic_oracle
from kgparser.transitions.trees import children, random_tree

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

SYSTEM = get_system("attardi")



def gold_trees(rng: random.Random, low: int, high: int):
    """Endless ``(n, gold, buffer reduction)`` of ``low..high`` words: half of the
    trees random (a tree the parser cannot build has more conflicts, so more
    loose bounds), half derived by the parser."""
    while True:
        n = rng.randint(low, high)
        gold = random_tree(n, rng) if rng.random() < 0.5 else derived_tree(n, rng)
        yield n, gold, BufferReduction(gold, children(gold))

def random_states(n, rng, count):
    """States along random computations (mostly off any gold computation)."""
    states = []
    while len(states) < count:
        state = SYSTEM.initial_state(n)
        while not SYSTEM.is_final(state) and len(states) < count:
            states.append(state.copy())
            SYSTEM.apply(state, rng.choice(SYSTEM.legal_actions(state)))
    return states


def reduced_by_definition(gold, stack, b):
    """β_R straight from conditions (i)-(iii) of section 5.2 (see
    :class:`BufferReduction`), checking each buffer subtree on its own."""
    n = len(gold) - 1
    kids = children(gold)

    def subtree(k):
        words, todo = [], [k]
        while todo:
            w = todo.pop()
            words.append(w)
            todo.extend(kids[w])
        return words

    def reducible(k):
        inner = [w for w in subtree(k) if w >= b and w != k]
        span = sorted(inner + [k])
        return (all(gold[d] not in inner for d in stack)
                and span[-1] - span[0] + 1 == len(span)
                and all(gold[w] >= b for w in inner))

    def hidden(x):
        return any(x in subtree(k) for k in range(b, n + 1) if k != x and reducible(k))

    return [x for x in range(b, n + 1) if not hidden(x)]


def exact_excess(future):
    """Least excess from the table with a bound no item can exceed."""
    return table._least_excess(future.gold_pos, future.doomed, future.ell, len(future.gold_pos),
                               Budget(10**9))


def test_buffer_reduction_matches_its_definition():
    rng = random.Random(10)
    for _, (n, gold, reduction) in zip(range(150), gold_trees(rng, 1, 12)):
        for state in random_states(n, rng, 6):
            expected = reduced_by_definition(gold, state.stack, state.b)
            assert reduction.reduced(state.stack, state.b) == expected, (gold, state.stack, state.b)


def test_greedy_bounds_enclose_the_least_future_loss_and_exact_uses_them():
    rng = random.Random(11)
    tight = loose = 0
    for _, (n, gold, reduction) in zip(range(60), gold_trees(rng, 4, 9)):
        for state in random_states(n, rng, 8):
            future = FutureLoss(gold, state.stack, reduction.reduced(state.stack, state.b), Budget(10**9))
            least = future.lower + exact_excess(future)
            assert future.lower <= least <= future.upper
            tight += least == future.upper
            loose += least < future.upper
            for at_least in range(future.lower, least + 1):
                for at_most in range(least, future.upper + 1):
                    assert future.exact(Budget(10**9), at_least, at_most) == least
    assert tight and loose


def test_future_loss_spends_its_budget():
    gold = [-1, 2, 0, 1]
    with pytest.raises(table.OverBudget):
        FutureLoss(gold, [0, 1, 2], [3], Budget(3))


def test_tables_alone_give_exact_costs(monkeypatch):
    """With a useless greedy bound every successor goes through the tables,
    which cut items by the outside bound whatever the length of ``γ``."""
    monkeypatch.setattr(table, "greedy_excess", lambda gold_pos, doomed, ell: len(gold_pos))
    monkeypatch.setattr(table, "CUT_FROM", 0)
    rng = random.Random(12)
    golds = {n: [derived_tree(n, rng) for _ in range(3)] for n in (3, 4, 5)}
    assert_exact_dynamic_oracle(SYSTEM, [3, 4, 5], 0, trees=lambda n, _: golds[n])


@pytest.mark.exhaustive
def test_exactness_checks_reach_every_table_path(monkeypatch):
    """The brute-force checks of the default oracle go through every way a
    loss is settled: by the bounds alone, by a table that finds it below the
    greedy bound, by a table that proves the greedy bound, and by a table
    for the configuration itself."""
    outcomes = set()
    least_excess, exact = table._least_excess, FutureLoss.exact

    def recording_least_excess(gold_pos, doomed, ell, bound, budget):
        found = least_excess(gold_pos, doomed, ell, bound, budget)
        outcomes.add("found" if found is not None else "over bound")
        return found

    def recording_exact(self, budget, at_least=0, at_most=None):
        if at_most is not None:
            outcomes.add("configuration")
        if self.lower == self.upper:
            outcomes.add("bounds")
        return exact(self, budget, at_least, at_most)

    monkeypatch.setattr(table, "_least_excess", recording_least_excess)
    monkeypatch.setattr(FutureLoss, "exact", recording_exact)
    rng = random.Random(13)
    for _ in range(8):
        report = check_dynamic_oracle(SYSTEM, derived_tree(5, rng))
        assert report.states > 0 and not report.problems, report.problems[:3]
    assert outcomes == {"found", "over bound", "configuration", "bounds"}


@pytest.mark.exhaustive
def test_tables_cut_by_the_outside_bound_are_exact_at_every_bound(monkeypatch):
    """Cutting items whose excess plus the words they leave without their
    gold head passes the bound changes no result at any bound, and cuts work."""
    monkeypatch.setattr(table, "CUT_FROM", 0)
    rng = random.Random(14)
    futures = []
    for _, (n, gold, reduction) in zip(range(40), gold_trees(rng, 5, 10)):
        for state in random_states(n, rng, 6):
            futures.append(FutureLoss(gold, state.stack, reduction.reduced(state.stack, state.b), Budget(10**9)))

    def run(future, bound):
        budget = Budget(10**9)
        found = table._least_excess(future.gold_pos, future.doomed, future.ell, bound, budget)
        return found, 10**9 - budget.left

    cut = [[run(future, bound) for bound in range(len(future.gold_pos))] for future in futures]
    monkeypatch.setattr(table, "_within_bound", lambda pairs, *rest: pairs)
    uncut = [[run(future, bound) for bound in range(len(future.gold_pos))] for future in futures]
    assert [[found for found, _ in runs] for runs in cut] == [[found for found, _ in runs] for runs in uncut]
    cut_work = sum(work for runs in cut for _, work in runs)
    uncut_work = sum(work for runs in uncut for _, work in runs)
    assert cut_work < uncut_work


def test_future_loss_asked_again_fills_no_table():
    """What a table found answers later questions on the same successor
    (``right`` and ``right2`` share theirs) with the same loss and no work."""
    rng = random.Random(16)
    asked = 0
    for _ in range(40):
        n = rng.randint(6, 10)
        gold = derived_tree(n, rng)
        reduction = BufferReduction(gold, children(gold))
        for state in random_states(n, rng, 6):
            future = FutureLoss(gold, state.stack, reduction.reduced(state.stack, state.b), Budget(10**9))
            if future.lower == future.upper:
                continue
            least = future.lower + exact_excess(future)
            assert future.exact(Budget(10**9), future.lower) == least
            again = Budget(10**9)
            for at_least in range(future.lower, least + 1):
                assert future.exact(again, at_least) == least
            assert again.left == 10**9
            asked += 1
    assert asked


def deep_states(n, rng, count):
    """States along computations that mostly shift: deep stacks, the
    oracle's slow states."""
    states = []
    while len(states) < count:
        state = SYSTEM.initial_state(n)
        while not SYSTEM.is_final(state) and len(states) < count:
            states.append(state.copy())
            legal = SYSTEM.legal_actions(state)
            SYSTEM.apply(state, "shift" if "shift" in legal and rng.random() < 0.7 else rng.choice(legal))
    return states


def test_blocked_triples_bound_the_least_excess_from_below():
    rng = random.Random(17)
    found = 0
    for _, (n, gold, reduction) in zip(range(150), gold_trees(rng, 6, 11)):
        for state in deep_states(n, rng, 6):
            future = FutureLoss(gold, state.stack, reduction.reduced(state.stack, state.b), Budget(10**9))
            tops = table.blocked_triples(future.gold_pos, future.ell)
            assert len(tops) <= exact_excess(future), (gold, state.stack, state.b)
            found += len(tops)
    assert found


@pytest.mark.exhaustive
def test_tables_cut_by_blocked_triples_below_the_span_are_exact(monkeypatch):
    """The outside bound of a stack cell counts the blocked triples below
    it: cut tables give the uncut results at every bound, and the triples
    cut work."""
    monkeypatch.setattr(table, "CUT_FROM", 0)
    rng = random.Random(18)
    futures = []
    for n, gold, reduction in gold_trees(rng, 8, 11):
        if len(futures) >= 60:
            break
        for state in deep_states(n, rng, 6):
            future = FutureLoss(gold, state.stack, reduction.reduced(state.stack, state.b), Budget(10**9))
            if any(top < future.ell - 2 for top in table.blocked_triples(future.gold_pos, future.ell)):
                futures.append(future)

    def runs(future):
        found = []
        budget = Budget(10**9)
        for bound in range(len(future.gold_pos)):
            found.append(table._least_excess(future.gold_pos, future.doomed, future.ell, bound, budget))
        return found, 10**9 - budget.left

    with_triples = [runs(future) for future in futures]
    monkeypatch.setattr(table, "blocked_triples", lambda gold_pos, ell: [])
    without = [runs(future) for future in futures]
    assert [found for found, _ in with_triples] == [found for found, _ in without]
    assert sum(work for _, work in with_triples) < sum(work for _, work in without)


def test_exact_gives_the_same_loss_when_it_expects_it_higher():
    """``exact_expecting_more`` only moves the first table up: the loss is
    the same whether it is at ``at_least`` or above."""
    rng = random.Random(19)
    at_the_floor = above = 0
    for _, (n, gold, reduction) in zip(range(60), gold_trees(rng, 5, 10)):
        for state in deep_states(n, rng, 6):
            stack, reduced = state.stack, reduction.reduced(state.stack, state.b)
            least = FutureLoss(gold, stack, reduced, Budget(10**9)).exact(Budget(10**9))
            for at_least in range(least + 1):
                fresh = FutureLoss(gold, stack, reduced, Budget(10**9))
                assert fresh.exact_expecting_more(Budget(10**9), at_least) == least
                if fresh.lower < fresh.upper:
                    at_the_floor += at_least == least
                    above += at_least < least
    assert at_the_floor and above
