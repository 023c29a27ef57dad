"""Oracle tie-breaks: the ``tie_break`` option of Covington, 2-Planar and
Attardi and 2-Planar's ``regularize_switch`` (the notes in
``kgparser/transitions/base.py``), checked against brute force on every
state, every action, of small random trees, non-projective and
non-2-planar ones included: (a) the preferred actions are a non-empty subset
of the exact zero-cost ones, (b) following them reaches each state's least
loss, (c) ``shortest`` keeps exactly the actions after which a least-loss
computation is shortest; the exact costs stay exact (the systems' own tests).
"""
import random

import pytest
from harness import assert_tie_break, late_states
from test_arc_hybrid_swap import static_swap_loss, trainer_states
from test_two_planar import PlaneLoss, non_two_planar_trees, random_two_planar_tree

from kgparser.config import ConfigError, load_config
from kgparser.errors import KgparserError
from kgparser.transitions import get_system
from kgparser.transitions.base import penalize, resolved_heads
from kgparser.transitions.checking import ExactLoss, lengthening_ties, reachable_states, successor
from kgparser.transitions.trees import all_trees, is_projective, random_projective_tree, random_tree

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

COVINGTON = get_system("covington", tie_break="shortest")
COVINGTON_ROOT = get_system("covington", root_node=True, tie_break="shortest")
COVINGTON_ROOT_ARCS = get_system("covington", root_node=True, headless="wrong", tie_break="shortest")
BOTH_COVINGTON = pytest.mark.parametrize("system", [COVINGTON, COVINGTON_ROOT, COVINGTON_ROOT_ARCS],
                                         ids=["paper", "root-node", "root-arcs"])
TWO_PLANAR = get_system("two-planar", regularize_switch=False, tie_break="shortest")
TWO_PLANAR_REGULARIZED = get_system("two-planar", tie_break="shortest")
TWO_PLANAR_ROOT_ARCS = get_system("two-planar", tie_break="shortest", root_node=True, headless="wrong")
BOTH_TWO_PLANAR = pytest.mark.parametrize("system", [TWO_PLANAR, TWO_PLANAR_REGULARIZED, TWO_PLANAR_ROOT_ARCS],
                                          ids=["shortest", "regularized+shortest", "root-arcs"])


def plane_loss(system, gold):
    """Brute force relative to 2-Planar's canonical planes (what its oracle is exact for)."""
    return ExactLoss(system, gold, final_loss=PlaneLoss(system, gold).final_loss)


def random_trees(sizes, count, rng):
    return [random_tree(n, rng, single_root=bool(k % 2)) for n in sizes for k in range(count)]


# --- the option ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["covington", "two-planar", "attardi", "arc-eager", "arc-hybrid-swap"])
def test_option_defaults_to_none_and_round_trips_as_plain_data(name):
    assert get_system(name).options()["tie_break"] == "none"
    system = get_system(name, tie_break=("shift",))
    assert system.options()["tie_break"] == ["shift"]
    assert get_system(name, **system.options()).options() == system.options()


def test_lost_words_is_a_covington_option_free_by_default():
    assert get_system("covington").options()["lost_words"] == "free"
    system = get_system("covington", lost_words="attach", tie_break="shortest")
    assert get_system("covington", **system.options()).options() == system.options()
    with pytest.raises(KgparserError, match="lost_words"):
        get_system("covington", lost_words=True)
    assert get_system("two-planar", lost_words="attach").options()["lost_words"] == "attach"


@pytest.mark.parametrize("name, value", [
    ("covington", "longest"), ("covington", ["shift", "shift"]), ("covington", ["reduce"]),
    ("covington", []), ("covington", 1), ("two-planar", ["no-arc"]), ("attardi", "shortest"),
])
def test_bad_values_are_user_errors_naming_the_option(name, value):
    with pytest.raises(KgparserError, match="tie_break"):
        get_system(name, tie_break=value)


def test_yaml_sets_the_option(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("data: {train: t.conllu}\nsystem: {name: covington, options: {tie_break: shortest}}\n",
                    encoding="utf-8")
    assert load_config(path).system.options == {"tie_break": "shortest"}
    assert load_config(path, ["system.options.tie_break=[shift]"]).system.options == {"tie_break": ["shift"]}
    with pytest.raises(ConfigError, match="tie_break"):
        load_config(path, ["system.options.tie_break=[shift, bogus]"])


def test_penalty_never_leaves_no_action_at_the_least_cost():
    assert penalize({"a": 0, "b": 0, "c": 2}, {"a", "c"}) == {"a": 1, "b": 0, "c": 3}
    assert penalize({"a": 0, "b": 1}, {"a"}) == {"a": 0, "b": 1}
    assert penalize({"a": 1, "b": 1}, {"b"}) == {"a": 1, "b": 2}


# --- which systems need it: the harness on every state ---------------------------------

@pytest.mark.parametrize("name, options, projective, n, lengthening", [
    ("arc-standard", {}, False, 5, False),
    ("arc-hybrid", {}, True, 5, False),
    ("arc-hybrid", {"root": "end"}, True, 5, False),
    ("arc-eager", {"root": "end"}, True, 5, False),
    ("attardi", {}, False, 5, False),
    ("arc-eager", {}, True, 5, True),  # reduce, or left onto a lost word, where words may stay on the stack
    ("arc-hybrid-swap", {}, False, 5, True),  # a shift that costs swaps later
    ("covington", {}, False, 5, True),
    ("two-planar", {"regularize_switch": False}, False, 4, True),
])
@pytest.mark.exhaustive
def test_systems_where_zero_cost_actions_differ_in_length(name, options, projective, n, lengthening):
    """Zero-cost actions tie in every system; only in some does a least-loss
    computation get longer after some of them (where ``shortest`` matters;
    Attardi's computations all have ``2n`` transitions, so it refuses it)."""
    system = get_system(name, **options)
    rng = random.Random(0)
    ties = longer = 0
    for k in range(4):
        gold = (random_projective_tree if projective else random_tree)(n, rng, single_root=bool(k % 2))
        if name == "arc-hybrid-swap":
            truth, states = static_swap_loss(system, gold), trainer_states(system, gold)
        else:
            truth, states = ExactLoss(system, gold), reachable_states(system, n, limit=500, rng=rng)
        found = lengthening_ties(truth, states)
        ties, longer = ties + found[0], longer + found[1]
    assert ties > 0
    assert (longer > 0) == lengthening


# --- Covington ----------------------------------------------------------------------------

@pytest.mark.exhaustive
@BOTH_COVINGTON
def test_covington_shortest_on_every_state_up_to_four_words(system):
    rng = random.Random(2)
    golds = [t for n in (1, 2, 3) for t in all_trees(n)] + random_trees([4], 4, rng)
    assert_tie_break(system, golds, shortest=True)


@pytest.mark.exhaustive
def test_covington_shortest_on_sampled_states_of_five_and_six_words():
    rng = random.Random(3)
    assert_tie_break(COVINGTON, random_trees([5, 6], 4, rng), shortest=True,
                     states=lambda gold: late_states(COVINGTON, len(gold) - 1, rng, 150,
                                                     lambda s: s.j >= len(gold) - 2))


def test_covington_shortest_may_pass_a_free_shift_to_break_a_cycle_later():
    """Gold 2 <- 3 <- 4 <- 1 (1 a root word); built 2 -> 1; focus (2, 3).
    A ∪ I has the cycle of the tree roots 2, 3, 4 (arcs 3 -> 2, 4 -> 3,
    1 -> 4), so one arc is lost anyway: ``shift`` (losing 3 -> 2) is free,
    and so are ``no-arc`` and ``left``.  Building 3 -> 2 and losing 1 -> 4
    saves walking ``i`` down to word 1 when 4 is the focus, so ``left``
    alone is shortest (4 transitions to the end, against 5 with ``shift``
    and 6 with ``no-arc``)."""
    gold = [-1, 0, 3, 4, 1]
    state = COVINGTON.initial_state(4)
    for action in ("shift", "left", "shift"):
        COVINGTON.apply(state, action)
    assert (state.i, state.j, state.heads) == (2, 3, [-1, 2, -1, -1, -1])
    oracle = COVINGTON.dynamic_oracle(gold)
    assert oracle.exact_costs(state) == {"shift": 0, "no-arc": 0, "left": 0, "right": 1}
    assert oracle.preferred(state) == ["left"]
    truth = ExactLoss(COVINGTON, gold)
    lengths = {a: truth.best(successor(COVINGTON, state, a)) for a in ("shift", "no-arc", "left")}
    assert lengths == {"shift": (2, 4), "no-arc": (2, 5), "left": (2, 3)}


COVINGTON_ROOTS = ({"root_node": False}, {"root_node": True}, {"root_node": True, "headless": "wrong"})
COVINGTON_LOST_WORDS = [get_system("covington", tie_break=tie_break, lost_words=rule, **root)
                        for rule in ("spare", "attach") for tie_break in ("none", "shortest")
                        for root in COVINGTON_ROOTS]


@pytest.mark.exhaustive
@pytest.mark.parametrize("system", COVINGTON_LOST_WORDS, ids=lambda s: "-".join(map(str, s.options().values())))
def test_covington_lost_words_on_every_state_up_to_four_words(system):
    """(d): the free arcs onto lost words are preferred never (``spare``) or
    alone (``attach``) while other actions keep the least cost, with and
    after ``shortest``; (a)-(c) still hold."""
    rng = random.Random(9)
    golds = [t for n in (1, 2, 3) for t in all_trees(n)] + random_trees([4], 4, rng)
    assert_tie_break(system, golds, shortest=system.tie_break == "shortest")


def test_covington_lost_words_decides_between_no_arc_and_a_free_wrong_arc():
    """Gold 1 -> 2, 1 -> 3 (1 the root word).  ``shift``, ``no-arc`` passes 1
    without building 1 -> 2, so 2's gold head is out of reach; after
    ``shift`` the focus is (2, 3), where ``left`` (3 -> 2, a wrong arc) and
    ``no-arc`` are both free."""
    gold = [-1, 0, 1, 1]
    state = COVINGTON.initial_state(3)
    for action in ("shift", "no-arc", "shift"):
        COVINGTON.apply(state, action)
    assert (state.i, state.j) == (2, 3)
    preferred = {}
    for rule in ("free", "spare", "attach"):
        oracle = get_system("covington", lost_words=rule).dynamic_oracle(gold)
        assert oracle.exact_costs(state) == {"shift": 1, "no-arc": 0, "left": 0, "right": 1}
        preferred[rule] = oracle.preferred(state)
    assert preferred == {"free": ["no-arc", "left"], "spare": ["no-arc"], "attach": ["left"]}


def test_covington_shift_first_order():
    """``[shift]``: ``shift`` alone wherever it costs 0, every zero-cost action elsewhere."""
    system = get_system("covington", tie_break=["shift"])
    rng = random.Random(4)
    golds = random_trees([3, 4, 5], 3, rng)
    assert_tie_break(system, golds, limit=600)
    for gold in golds:
        oracle = system.dynamic_oracle(gold)
        for state in reachable_states(system, len(gold) - 1, limit=300, rng=rng):
            if not system.is_final(state):
                exact = oracle.exact_costs(state)
                zero = [a for a, c in exact.items() if c == 0]
                assert oracle.preferred(state) == (["shift"] if "shift" in zero else zero)


# --- arc-eager --------------------------------------------------------------------------

ARC_EAGER = get_system("arc-eager", tie_break="shortest")


def projective_trees(sizes, count, rng):
    return [random_projective_tree(n, rng, single_root=bool(k % 2)) for n in sizes for k in range(count)]


def test_arc_eager_shortest_on_every_state_of_projective_trees_up_to_five_words():
    """Root first (words may stay on the stack): ``remaining_length`` is the
    brute-force shortest least-loss computation, and the preferred actions
    are exactly the shortest zero-cost ones, on every reachable state."""
    rng = random.Random(10)
    golds = [t for n in (1, 2, 3) for t in all_trees(n) if is_projective(t)] + projective_trees([4, 5], 4, rng)
    assert_tie_break(ARC_EAGER, golds, shortest=True)


@pytest.mark.exhaustive
def test_arc_eager_shortest_on_late_states_of_seven_words():
    rng = random.Random(11)
    assert_tie_break(ARC_EAGER, projective_trees([7], 4, rng), shortest=True, seed=11,
                     states=lambda gold: late_states(ARC_EAGER, 7, rng, 150, lambda s: s.b >= 5))


def test_arc_eager_shortest_keeps_a_word_that_nothing_needs_gone():
    """Gold 0 -> 1 -> 2, 0 -> 3.  After ``right`` (1 -> 2), ``reduce`` (pop 2)
    and ``shift`` (3 next, 3 staying headless) are both free, but 2 may stay
    on the stack: ``shift`` alone is shortest."""
    gold = [-1, 0, 1, 0]
    state = ARC_EAGER.initial_state(3)
    for action in ("shift", "right"):
        ARC_EAGER.apply(state, action)
    oracle = ARC_EAGER.dynamic_oracle(gold)
    assert oracle.exact_costs(state) == {"shift": 0, "reduce": 0, "right": 1}
    assert oracle.preferred(state) == ["shift"]
    assert get_system("arc-eager").dynamic_oracle(gold).costs(state) == oracle.exact_costs(state)


def test_arc_eager_orders_and_root_end():
    """A list works with either root position; ``shortest`` is refused with the
    root at the end (every computation has 2n transitions)."""
    rng = random.Random(12)
    for root in ("first", "end"):
        system = get_system("arc-eager", root=root, tie_break=["shift", "right"])
        assert_tie_break(system, projective_trees([3, 4], 3, rng), limit=400)
    with pytest.raises(KgparserError, match="same length"):
        get_system("arc-eager", root="end", tie_break="shortest")


def test_arc_hybrid_swap_orders_on_the_states_training_reaches():
    """Arc-hybrid + Swap takes lists (its static-dynamic oracle has no remaining
    length): (a) and (b) against the loss it prices, where swaps follow the
    static oracle, on every state a trainer reaches."""
    rng = random.Random(13)
    for order in (["shift"], ["left", "right"]):
        system = get_system("arc-hybrid-swap", tie_break=order)
        golds = [random_tree(n, rng, single_root=bool(n % 2)) for n in (3, 4, 5)]
        assert_tie_break(system, golds, truth=static_swap_loss,
                         states=lambda gold, system=system: trainer_states(system, gold))
    with pytest.raises(KgparserError, match="remaining-length"):
        get_system("arc-hybrid-swap", tie_break="shortest")


# --- 2-Planar -----------------------------------------------------------------------------

def small_tree_states(system):
    """States checked per gold tree of up to three words: all of them, or with
    the root node (node 0 makes a 3-word sentence as big as a 4-word one) up
    to 200 sampled ones, which covers every state of the smaller trees."""
    return 200 if system.root_node else None


@pytest.mark.exhaustive
@BOTH_TWO_PLANAR
def test_two_planar_shortest_on_every_state_up_to_three_words(system):
    golds = [t for n in (1, 2, 3) for t in all_trees(n)]
    assert_tie_break(system, golds, truth=plane_loss, shortest=True, limit=small_tree_states(system))


@pytest.mark.exhaustive
@BOTH_TWO_PLANAR
def test_two_planar_shortest_on_late_states_of_four_words(system):
    rng = random.Random(5)
    assert_tie_break(system, random_trees([4], 3, rng), truth=plane_loss, shortest=True, seed=5,
                     states=lambda gold: late_states(system, 4, rng, 200, lambda s: s.b >= 3))


@pytest.mark.exhaustive
@BOTH_TWO_PLANAR
def test_two_planar_shortest_on_trees_that_are_not_two_planar(system):
    """The last steps of six-word trees that are not 2-planar (the oracle
    works on a 2-planar subset)."""
    rng = random.Random(6)
    assert_tie_break(system, non_two_planar_trees(6, rng, 2), truth=plane_loss, shortest=True, seed=6,
                     states=lambda gold: late_states(system, 6, rng, 60, lambda s: s.b >= 6))


@pytest.mark.parametrize("rule", ["spare", "attach"])
@pytest.mark.exhaustive
@pytest.mark.parametrize("tie_break, root", [("none", {}), ("shortest", {}),
                                             ("shortest", {"root_node": True, "headless": "wrong"})],
                         ids=["none", "shortest", "shortest-root-arcs"])
def test_two_planar_lost_words_on_every_state_up_to_three_words(rule, tie_break, root):
    """(a)-(d) with ``lost_words`` after the Switch regularization (and ``shortest``)."""
    system = get_system("two-planar", tie_break=tie_break, lost_words=rule, **root)
    rng = random.Random(14)
    golds = [t for n in (1, 2, 3) for t in all_trees(n)]
    assert_tie_break(system, golds, truth=plane_loss, shortest=tie_break == "shortest",
                     limit=small_tree_states(system), seed=14)
    assert_tie_break(system, random_trees([4], 2, rng), truth=plane_loss, shortest=tie_break == "shortest", seed=14,
                     states=lambda gold: late_states(system, 4, rng, 150, lambda s: s.b >= 3))


@pytest.mark.exhaustive
def test_regularize_switch_alone_is_a_tie_break_too():
    """The paper's Switch regularization (the default) narrows the zero-cost
    actions the same way: (a) and (b) hold on every state."""
    system = get_system("two-planar")
    rng = random.Random(7)
    assert_tie_break(system, [t for n in (1, 2, 3) for t in all_trees(n)], truth=plane_loss)
    assert_tie_break(system, random_trees([4], 3, rng), truth=plane_loss, seed=7,
                     states=lambda gold: late_states(system, 4, rng, 200, lambda s: s.b >= 3))


def test_shortest_disfavours_switches_and_reduces_that_only_lengthen():
    """Following preferred actions, ``shortest`` switches and reduces no more
    often than the Switch regularization does, and both end in the gold tree."""
    rng = random.Random(8)
    for gold in [random_two_planar_tree(n, rng) for n in (8, 12, 16) for _ in range(4)]:
        counts = []
        for system in (get_system("two-planar"), TWO_PLANAR):
            oracle, state = system.dynamic_oracle(gold), system.initial_state(len(gold) - 1)
            taken = []
            while not system.is_final(state):
                taken.append(rng.choice(oracle.preferred(state)))
                system.apply(state, taken[-1])
            assert resolved_heads(state.heads) == gold
            counts.append(taken.count("switch") + taken.count("reduce"))
        assert counts[1] <= counts[0]


# --- Attardi -----------------------------------------------------------------------------

def attardi_golds(system, seed: int):
    """A third of the trees of up to four words and six of five words that
    Attardi can build."""
    rng = random.Random(seed)
    golds = [t for n in (1, 2, 3, 4) for t in all_trees(n) if system.can_build(t)][::3]
    return golds + [t for t in random_trees([5], 6, rng) if system.can_build(t)]


@pytest.mark.exhaustive
@pytest.mark.parametrize("order", [["shift"], ["left", "right"], ["left", "right", "shift"],
                                   ["right2", "left2", "right", "left", "shift"]])
def test_attardi_orders_on_every_state(order):
    system = get_system("attardi", tie_break=order)
    assert_tie_break(system, attardi_golds(system, 9), limit=500)


@pytest.mark.exhaustive
@pytest.mark.parametrize("rule", ["spare", "attach"])
@pytest.mark.parametrize("tie_break", ["none", ["shift"]])
def test_attardi_lost_words_on_every_state(rule, tie_break):
    """(a), (b) and (d): the free arcs onto lost words are preferred never
    (``spare``) or alone (``attach``) while other actions keep the least
    cost, with and after a tie-break order."""
    system = get_system("attardi", tie_break=tie_break, lost_words=rule)
    assert system.options()["lost_words"] == rule
    assert_tie_break(system, attardi_golds(system, 10), limit=500)


def test_attardi_lost_words_decides_between_shift_and_a_free_wrong_arc():
    """Gold 0 -> 1, 1 -> 2, 1 -> 3.  ``shift``, ``shift``, ``left`` builds
    2 -> 1 (wrong) and pops 1, so the gold heads of 2 and 3 are lost: from
    stack ``0 2`` both ``shift`` and ``right`` (0 -> 2, wrong but free) cost
    0.  ``attach`` takes ``right`` as correct, ``spare`` ``shift``; the
    exact costs stay the paper's."""
    gold = [-1, 0, 1, 1]
    system = get_system("attardi")
    state = system.initial_state(3)
    for action in ("shift", "shift", "left"):
        system.apply(state, action)
    assert (state.stack, state.b) == ([0, 2], 3)
    exact = {"shift": 0, "right": 0}
    assert system.dynamic_oracle(gold).exact_costs(state) == exact
    for rule, expected in (("free", ["shift", "right"]), ("attach", ["right"]), ("spare", ["shift"])):
        oracle = get_system("attardi", lost_words=rule).dynamic_oracle(gold)
        assert oracle.exact_costs(state) == exact
        assert sorted(oracle.preferred(state)) == sorted(expected)
