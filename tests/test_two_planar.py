"""The 2-Planar system and its oracles, checked by exhaustive search.

Ground truths are computed independently of the module under test:
2-planarity by trying every split of the arcs into two planes, buildability by
searching every computation, and the loss "relative to the canonical plane
assignment" (Fernández-González & Gómez-Rodríguez 2018, section 3: a gold arc
built in the other plane is lost) by searching every computation from a state.
"""
import itertools
import os
import random

import pytest
from harness import assert_static_oracle_builds, assert_zero_cost_paths_reach_gold

from kgparser.errors import KgparserError
from kgparser.transitions import get_system
from kgparser.transitions.base import NO_HEAD, ROOT
from kgparser.transitions.checking import check_dynamic_oracle, reachable_states, successor
from kgparser.transitions.trees import all_trees, random_tree
from kgparser.transitions.two_planar import (
    NO_PLANE,
    canonical_planes,
    is_two_planar,
    two_planar_subset,
)

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

SYSTEM = get_system("two-planar")
PLAIN = get_system("two-planar", regularize_switch=False)
#: the root as node 0 at the bottom of both stacks, its arcs taught (issue 18)
ROOTED = get_system("two-planar", root_node=True, headless="wrong")
ROOTED_PLAIN = get_system("two-planar", regularize_switch=False, root_node=True, headless="wrong")
UD = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "ud", "UD_English-EWT", "en_ewt-ud-train.conllu")


# --- independent ground truths ------------------------------------------------

def spans(heads, root_arcs=False):
    return {d: (min(d, h), max(d, h)) for d, h in enumerate(heads)
            if d > 0 and h != NO_HEAD and (root_arcs or h != ROOT)}


def cross(a, b):
    return a[0] < b[0] < a[1] < b[1] or b[0] < a[0] < b[1] < a[1]


def two_planar_by_brute_force(heads, root_arcs=False):
    """Some split of the word-to-word arcs (and root arcs) into two planes has no crossing in either."""
    arcs = list(spans(heads, root_arcs).values())
    for split in itertools.product((0, 1), repeat=len(arcs)):
        if all(split[i] != split[j] or not cross(arcs[i], arcs[j])
               for i in range(len(arcs)) for j in range(i + 1, len(arcs))):
            return True
    return False


def buildable(system, heads):
    """Some computation ends in exactly ``heads``: search every computation
    whose arcs all belong to ``heads`` (in either plane, any switches),
    dropping a computation once ``b0`` moves past a word whose arc to an
    earlier word is missing (every arc has ``b0`` as one end).  States are
    told apart by everything but the planes of built arcs and the labels,
    which never matter for what comes next.  With the root node every arc
    must be built, root arcs included (none left to a headless word)."""
    n = len(heads) - 1
    explicit = system.root_node
    left_arcs = [[d for d in range(1, n + 1)
                  if heads[d] != NO_HEAD and (explicit or heads[d] != ROOT) and max(d, heads[d]) == b]
                 for b in range(n + 2)]
    seen, todo = set(), [system.initial_state(n)]
    while todo:
        state = todo.pop()
        if system.is_final(state):
            if all((h if h != NO_HEAD or explicit else ROOT) == heads[d] for d, h in enumerate(state.heads) if d):
                return True
            continue
        for action in system.legal_actions(state):
            if action in system.arc_actions:
                head, dep = system.arc_of(state, action)
                if heads[dep] != head:
                    continue
            if action == "shift" and any(state.heads[d] != heads[d] for d in left_arcs[state.b]):
                continue
            nxt = successor(system, state, action)
            key = (nxt.stacks, nxt.active, nxt.b, nxt.switched, tuple(nxt.heads))
            key = (tuple(key[0][0]), tuple(key[0][1])) + key[1:]
            if key not in seen:
                seen.add(key)
                todo.append(nxt)
    return False


class PlaneLoss:
    """Least loss of a final state reachable from a state, where a gold arc
    counts as built only in its canonical plane, a gold root word only when
    headless (with the root node: only when its root arc is built in its
    plane), and an arc outside the 2-planar subset is always lost.

    ``pruned``: search only computations whose arcs are gold arcs in their
    canonical plane, except that from a state just reached by ``switch`` the
    first action may also be a wrong arc if ``switch`` follows it.  Sound:
    deleting a wrong arc action from a computation cannot raise this loss and
    keeps it legal (fewer arcs never break single-head or acyclicity; a
    ``switch, switch`` pair left behind is deleted too), except at the start
    of a computation from a state just reached by ``switch`` when a
    ``switch`` comes next: there the wrong arc is what allows switching back.
    ``test_pruned_plane_loss_agrees_with_full_search`` checks it."""

    def __init__(self, system, gold, pruned=True):
        self.system, self.gold, self.pruned = system, list(gold), pruned
        self.root_arcs = system.root_node
        self.subset = two_planar_subset(gold, self.root_arcs)
        self.planes = canonical_planes(self.subset, self.root_arcs)
        self.memo = {}

    def final_loss(self, state):
        lost = 0
        for d in range(1, len(self.gold)):
            if self.gold[d] == ROOT and not self.root_arcs:
                lost += state.heads[d] != NO_HEAD
            elif self.subset[d] == NO_HEAD:
                lost += 1
            else:
                lost += not (self.subset[d] == state.heads[d] and state.plane[d] == self.planes[d])
        return lost

    def wrong(self, state, action):
        if action not in self.system.arc_actions:
            return False
        head, dep = self.system.arc_of(state, action)
        return self.subset[dep] != head or self.planes[dep] != state.active

    def search(self, state):
        """Least loss over the computations searched (see ``pruned``) from ``state``,
        ignoring the exception for states just reached by ``switch``."""
        key = state.key()
        if key not in self.memo:
            if self.system.is_final(state):
                self.memo[key] = self.final_loss(state)
            else:
                self.memo[key] = min(self.search(successor(self.system, state, a))
                                     for a in self.system.legal_actions(state)
                                     if not (self.pruned and self.wrong(state, a)))
        return self.memo[key]

    def __call__(self, state):
        if not (self.pruned and state.switched) or self.system.is_final(state):
            return self.search(state)
        best = []
        for action in self.system.legal_actions(state):
            nxt = successor(self.system, state, action)
            if self.wrong(state, action):
                nxt = successor(self.system, nxt, "switch")
            best.append(self.search(nxt))
        return min(best)


def check_plane_exact(system, gold, states):
    truth = PlaneLoss(system, gold)
    oracle = system.dynamic_oracle(gold)
    checked = 0
    for state in states:
        if system.is_final(state):
            continue
        base = truth(state)
        want = {a: truth(successor(system, state, a)) - base for a in system.legal_actions(state)}
        got = oracle.costs(state)
        assert got == want, f"gold={gold} state={state.key()}: costs {got} != true costs {want}"
        checked += 1
    assert checked > 0


def random_two_planar_tree(n, rng):
    """A random tree whose word-to-word arcs are 2-planar: words attach in
    random order to a random attached word, the root when no word keeps it 2-planar."""
    order = list(range(1, n + 1))
    rng.shuffle(order)
    heads = [NO_HEAD] * (n + 1)
    attached = []
    for d in order:
        candidates = attached[:]
        rng.shuffle(candidates)
        heads[d] = ROOT
        for h in candidates:
            heads[d] = h
            if is_two_planar([x if x != NO_HEAD else ROOT for x in heads]):
                break
            heads[d] = ROOT
        attached.append(d)
    return heads


def non_two_planar_trees(n, rng, count):
    out = []
    while len(out) < count:
        t = random_tree(n, rng)
        if not is_two_planar(t):
            out.append(t)
    return out


# --- 2-planarity, subsets, planes ---------------------------------------------

@pytest.mark.exhaustive
def test_two_planarity_test_agrees_with_brute_force():
    for n in range(1, 7):
        for t in all_trees(n):
            assert is_two_planar(t) == two_planar_by_brute_force(t), t


def test_two_planar_subset_is_a_two_planar_part_of_the_tree():
    rng = random.Random(5)
    for t in non_two_planar_trees(9, rng, 200):
        sub = two_planar_subset(t)
        assert is_two_planar(sub)
        assert all(sub[d] in (t[d], NO_HEAD) for d in range(1, 10))
        assert sub != t
        # nothing more could have been kept: every dropped arc breaks 2-planarity
        for d in range(1, 10):
            if sub[d] == NO_HEAD:
                assert not is_two_planar(sub[:d] + [t[d]] + sub[d + 1:])
    for t in all_trees(5):
        assert two_planar_subset(t) == t


def test_canonical_planes_split_the_tree_into_two_non_crossing_planes():
    rng = random.Random(2)
    trees = [random_two_planar_tree(rng.randint(2, 25), rng) for _ in range(300)]
    for t in trees:
        planes = canonical_planes(t)
        sp = spans(t)
        assert all((planes[d] in (0, 1)) == (d in sp) for d in range(1, len(t)))
        for d, e in itertools.combinations(sp, 2):
            assert planes[d] != planes[e] or not cross(sp[d], sp[e]), (t, planes)


def test_static_oracle_builds_each_arc_in_its_canonical_plane():
    rng = random.Random(3)
    for _ in range(300):
        gold = random_two_planar_tree(rng.randint(1, 25), rng)
        oracle, state = SYSTEM.static_oracle(gold), SYSTEM.initial_state(len(gold) - 1)
        while not SYSTEM.is_final(state):
            SYSTEM.apply(state, oracle.next_action(state))
        assert state.plane == canonical_planes(gold)


def test_canonical_planes_prefer_the_active_plane():
    # 1->3 and 2->4 cross: the first goes to plane 0 (active), the second to
    # plane 1; the parser stays in plane 1, so the later free arc 5->6 goes there
    heads = [NO_HEAD, ROOT, ROOT, 1, 2, ROOT, 5]
    assert canonical_planes(heads) == [NO_PLANE, NO_PLANE, NO_PLANE, 0, 1, NO_PLANE, 1]


# --- the system ---------------------------------------------------------------

@pytest.mark.exhaustive
def test_builds_exactly_the_two_planar_trees():
    # with the root outside the parser, every tree of up to 5 words is 2-planar
    for n in range(1, 6):
        for t in all_trees(n):
            assert buildable(SYSTEM, t) == two_planar_by_brute_force(t) is True
    # the first non-2-planar trees (three mutually crossing arcs) need 6 words
    rng = random.Random(4)
    six = list(all_trees(6))
    non_planar = [t for t in six if not two_planar_by_brute_force(t)]
    assert len(non_planar) == 428
    for t in non_planar[::8] + rng.sample(six, 60):
        assert buildable(SYSTEM, t) == two_planar_by_brute_force(t), t


def test_never_two_switches_in_a_row_and_features():
    state = SYSTEM.initial_state(3)
    assert SYSTEM.legal_actions(state) == ["shift", "switch"]
    SYSTEM.apply(state, "switch")
    assert "switch" not in SYSTEM.legal_actions(state)
    for action in ("shift", "shift", "switch", "shift"):
        SYSTEM.apply(state, action)
    # stacks[0] active after two switches: [1, 2, 3]; inactive stacks[1]: [1, 2, 3]
    SYSTEM.apply(state, "switch")
    SYSTEM.apply(state, "reduce")
    assert SYSTEM.features(state) == [2, 1, NO_HEAD, NO_HEAD, 3, 2]


def test_static_oracle_rebuilds_every_two_planar_tree():
    assert_static_oracle_builds(SYSTEM, (t for n in range(1, 6) for t in all_trees(n)))
    rng = random.Random(0)
    assert_static_oracle_builds(SYSTEM, (random_two_planar_tree(rng.randint(6, 30), rng) for _ in range(300)))


def test_static_oracle_builds_the_two_planar_subset_of_other_trees():
    rng = random.Random(6)
    for gold in non_two_planar_trees(10, rng, 50):
        oracle, state = SYSTEM.static_oracle(gold), SYSTEM.initial_state(10)
        while not SYSTEM.is_final(state):
            action = oracle.next_action(state)
            assert action in SYSTEM.legal_actions(state)
            SYSTEM.apply(state, action)
        sub = two_planar_subset(gold)
        assert [h if h != NO_HEAD else ROOT for h in state.heads[1:]] == [
            h if h != NO_HEAD else ROOT for h in sub[1:]]


# --- the dynamic oracle ---------------------------------------------------------

@pytest.mark.exhaustive
@pytest.mark.parametrize("system", [PLAIN, ROOTED_PLAIN], ids=["paper", "root-node"])
def test_pruned_plane_loss_agrees_with_full_search(system):
    rng = random.Random(8)
    states = reachable_states(system, 3)
    for gold in rng.sample(list(all_trees(3)), 6):
        pruned, full = PlaneLoss(system, gold), PlaneLoss(system, gold, pruned=False)
        assert all(pruned(s) == full(s) for s in states)


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_relative_to_the_canonical_planes_small():
    states = reachable_states(PLAIN, 3)
    for n in range(1, 4):
        for gold in all_trees(n):
            check_plane_exact(PLAIN, gold, states if n == 3 else reachable_states(PLAIN, n))


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_relative_to_the_canonical_planes_larger():
    rng = random.Random(9)
    golds = [random_tree(n, rng, single_root=bool(i % 2)) for n in (4, 5) for i in range(3)]
    golds += [random_two_planar_tree(6, rng)]
    for gold in golds:
        check_plane_exact(PLAIN, gold, reachable_states(PLAIN, len(gold) - 1, limit=150, rng=rng))


@pytest.mark.exhaustive
@pytest.mark.slow
def test_dynamic_oracle_is_exact_relative_to_the_canonical_planes_seven_words():
    rng = random.Random(19)
    golds = [random_tree(6, rng, single_root=bool(i % 2)) for i in range(2)]
    golds += [random_two_planar_tree(7, rng)]
    for gold in golds:
        check_plane_exact(PLAIN, gold, reachable_states(PLAIN, len(gold) - 1, limit=150, rng=rng))


@pytest.mark.exhaustive
def test_dynamic_oracle_is_exact_relative_to_the_subset_of_non_two_planar_trees():
    rng = random.Random(10)
    for gold in non_two_planar_trees(6, rng, 2):
        check_plane_exact(PLAIN, gold, reachable_states(PLAIN, len(gold) - 1, limit=100, rng=rng))


@pytest.mark.exhaustive
@pytest.mark.parametrize("system", [SYSTEM, PLAIN], ids=["regularized", "plain"])
def test_zero_cost_action_in_every_state(system):
    for n in range(1, 4):
        for gold in all_trees(n):
            report = check_dynamic_oracle(system, gold, exact=False)
            assert not report.problems, "\n".join(report.problems[:5])
    rng = random.Random(11)
    for gold in [random_tree(n, rng) for n in (4, 5, 6, 8, 10) for _ in range(4)] + non_two_planar_trees(7, rng, 4):
        report = check_dynamic_oracle(system, gold, exact=False, limit=1500, rng=rng)
        assert not report.problems, "\n".join(report.problems[:5])


@pytest.mark.exhaustive
@pytest.mark.parametrize("system", [SYSTEM, PLAIN], ids=["regularized", "plain"])
def test_zero_cost_paths_reach_exactly_the_gold_tree(system):
    for n in range(1, 5):
        for gold in all_trees(n):
            assert_zero_cost_paths_reach_gold(system, gold)
    rng = random.Random(12)
    for gold in rng.sample(list(all_trees(5)), 40) + [random_two_planar_tree(6, rng) for _ in range(10)]:
        assert_zero_cost_paths_reach_gold(system, gold)


def test_switch_regularization_only_penalizes_switches_that_are_not_needed():
    rng = random.Random(13)
    for gold in [random_tree(n, rng) for n in (3, 5, 7) for _ in range(4)]:
        regular, plain = SYSTEM.dynamic_oracle(gold), PLAIN.dynamic_oracle(gold)
        for state in reachable_states(SYSTEM, len(gold) - 1, limit=500, rng=rng):
            if SYSTEM.is_final(state):
                continue
            a, b = regular.costs(state), plain.costs(state)
            assert {k: v for k, v in a.items() if k != "switch"} == {k: v for k, v in b.items() if k != "switch"}
            if "switch" in a:
                assert a["switch"] - b["switch"] in (0, 1)


def test_regularized_zero_cost_switches_are_the_static_oracles():
    """On the static oracle's path every action it takes is zero-cost, and
    with the regularization ``switch`` is zero-cost exactly where it switches."""
    rng = random.Random(14)
    for _ in range(200):
        gold = random_two_planar_tree(rng.randint(2, 20), rng)
        static, dynamic = SYSTEM.static_oracle(gold), SYSTEM.dynamic_oracle(gold)
        state = SYSTEM.initial_state(len(gold) - 1)
        while not SYSTEM.is_final(state):
            action, costs = static.next_action(state), dynamic.costs(state)
            assert costs[action] == 0
            assert (costs.get("switch") == 0) == (action == "switch"), (gold, state.key(), costs)
            SYSTEM.apply(state, action)


# --- the root node (root arcs taught) -------------------------------------------------

def rooted_two_planar_tree(n, rng):
    """A random tree whose arcs, root arcs included, are 2-planar."""
    while True:
        tree = random_two_planar_tree(n, rng)
        if is_two_planar(tree, root_arcs=True):
            return tree


def test_root_node_options_and_bad_combinations():
    assert ROOTED.options()["root_node"] is True and ROOTED.options()["headless"] == "wrong"
    assert SYSTEM.options()["root_node"] is False and SYSTEM.options()["headless"] == "root"
    with pytest.raises(KgparserError, match="headless: wrong"):
        get_system("two-planar", root_node=True)
    with pytest.raises(KgparserError, match="root_node: true"):
        get_system("two-planar", headless="wrong")
    state = ROOTED.initial_state(2)
    assert state.stacks == ([0], [0])
    # node 0 takes no head; a root arc is ``right`` from it
    assert ROOTED.legal_actions(state) == ["shift", "right", "reduce", "switch"]
    assert ROOTED.arc_of(state, "right") == (0, 1)
    assert ROOTED.features(state) == [0, NO_HEAD, NO_HEAD, 1, 0, NO_HEAD]


def test_two_planarity_with_root_arcs_agrees_with_brute_force():
    found = set()
    for n in range(1, 6):
        for t in all_trees(n):
            found.add(is_two_planar(t, root_arcs=True))
            assert is_two_planar(t, root_arcs=True) == two_planar_by_brute_force(t, root_arcs=True), t
    assert found == {True, False}  # the first trees that are not: 5 words
    rng = random.Random(21)
    for t in (random_tree(9, rng) for _ in range(200)):
        sub = two_planar_subset(t, root_arcs=True)
        assert is_two_planar(sub, root_arcs=True)
        # the root arcs are kept first: a single root word keeps its arc
        assert all(sub[d] == ROOT for d in range(1, 10) if t[d] == ROOT and t.count(ROOT) == 1)


def test_root_node_builds_exactly_the_trees_two_planar_with_their_root_arcs():
    """With the root node, building every arc explicitly (no word left
    headless) is possible exactly for the trees whose arcs, root arcs
    included, are 2-planar."""
    for n in range(1, 5):
        for t in all_trees(n):
            assert buildable(ROOTED, t) == two_planar_by_brute_force(t, root_arcs=True) is True, t
    # three mutually crossing arcs, one of them a root arc, need 5 words
    rng = random.Random(20)
    five = list(all_trees(5))
    non_planar = [t for t in five if not two_planar_by_brute_force(t, root_arcs=True)]
    assert non_planar
    for t in non_planar[::4] + rng.sample(five, 60):
        assert buildable(ROOTED, t) == two_planar_by_brute_force(t, root_arcs=True), t


def test_root_node_static_oracle_builds_every_arc_in_its_canonical_plane():
    rng = random.Random(22)
    golds = [t for n in range(1, 5) for t in all_trees(n) if is_two_planar(t, root_arcs=True)]
    golds += [rooted_two_planar_tree(rng.randint(5, 25), rng) for _ in range(200)]
    for gold in golds:
        oracle, state = ROOTED.static_oracle(gold), ROOTED.initial_state(len(gold) - 1)
        while not ROOTED.is_final(state):
            action = oracle.next_action(state)
            assert action in ROOTED.legal_actions(state)
            ROOTED.apply(state, action)
        assert state.heads[1:] == gold[1:]
        assert state.plane[1:] == canonical_planes(gold, root_arcs=True)[1:]


@pytest.mark.exhaustive
def test_root_node_dynamic_oracle_is_exact_relative_to_the_canonical_planes():
    for n in range(1, 4):
        states = reachable_states(ROOTED_PLAIN, n)
        for gold in all_trees(n):
            check_plane_exact(ROOTED_PLAIN, gold, states)
    rng = random.Random(23)
    golds = [random_tree(n, rng, single_root=bool(i % 2)) for n in (4, 5) for i in range(3)]
    golds += [rooted_two_planar_tree(6, rng)]
    for gold in golds:
        check_plane_exact(ROOTED_PLAIN, gold, reachable_states(ROOTED_PLAIN, len(gold) - 1, limit=150, rng=rng))


def zero_cost_finals(system, gold):
    """The heads (as built, headless words kept) of every computation of
    zero-cost actions from the start."""
    oracle, seen, finals = system.dynamic_oracle(gold), set(), set()
    todo = [system.initial_state(len(gold) - 1)]
    while todo:
        state = todo.pop()
        if state.key() in seen:
            continue
        seen.add(state.key())
        if system.is_final(state):
            finals.add(tuple(state.heads[1:]))
            continue
        todo.extend(successor(system, state, a) for a, c in oracle.costs(state).items() if c == 0)
    return finals


@pytest.mark.exhaustive
@pytest.mark.parametrize("system", [ROOTED, ROOTED_PLAIN], ids=["regularized", "plain"])
def test_root_node_zero_cost_paths_build_every_arc_of_the_gold_tree(system):
    """Zero-cost computations end in the gold tree with its root arcs built
    (the default loss leaves the root word headless for free)."""
    rng = random.Random(25)
    golds = [t for n in range(1, 5) for t in all_trees(n) if is_two_planar(t, root_arcs=True)]
    golds += [rooted_two_planar_tree(6, rng) for _ in range(10)]
    for gold in golds:
        assert zero_cost_finals(system, gold) == {tuple(gold[1:])}, gold
    for gold in [random_tree(n, rng) for n in (4, 6, 8) for _ in range(3)] + non_two_planar_trees(7, rng, 2):
        report = check_dynamic_oracle(system, gold, exact=False, limit=1000, rng=rng)
        assert not report.problems, "\n".join(report.problems[:5])


# --- real sentences ---------------------------------------------------------------

@pytest.mark.exhaustive
@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(UD), reason="UD_English-EWT not available")
def test_static_oracle_and_zero_cost_following_on_english_ewt():
    from kgparser.io.conllu import read_conllu

    rng = random.Random(15)
    golds = [s.heads for s in itertools.islice(read_conllu(UD), 600)]
    planar = [g for g in golds if is_two_planar(g)]
    assert len(planar) > 0.95 * len(golds)
    assert_static_oracle_builds(SYSTEM, planar)
    for gold in planar[:150]:
        # follow a random zero-cost action: it must end in the gold tree
        oracle, state = SYSTEM.dynamic_oracle(gold), SYSTEM.initial_state(len(gold) - 1)
        while not SYSTEM.is_final(state):
            SYSTEM.apply(state, rng.choice([a for a, c in oracle.costs(state).items() if c == 0]))
        assert [h if h != NO_HEAD else ROOT for h in state.heads[1:]] == list(gold[1:])
