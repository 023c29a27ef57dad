"""The root choice of kgparser.inference.tree_repair (``decoding.root_choice``): every choice
gives a valid tree (``multi`` a forest on the root), ``scored`` follows the
scores it is given, the systems' arc probes are the configurations in which the
parser considers the arc, and the decoder and the CLI use the option."""
import random

import pytest
import torch
from test_model import tiny_config, tiny_sentences

from kgparser.errors import KgparserError
from kgparser.inference.decode import decode
from kgparser.inference.tree_repair import ROOT_CHOICES, loose_words, to_valid_tree
from kgparser.transitions import get_system, system_names
from kgparser.transitions.base import NO_HEAD

torch.set_num_threads(1)


def assert_tree(heads, labels, roots=1):
    """One word on the root per ``roots`` (None: any number), labeled root, no cycle."""
    n = len(heads) - 1
    top = [d for d in range(1, n + 1) if heads[d] == 0]
    assert len(top) == roots if roots else top
    assert all(labels[d] == "root" for d in top)
    for d in range(1, n + 1):
        seen, h = set(), d
        while h != 0:
            assert h not in seen and 1 <= h <= n
            seen.add(h)
            h = heads[h]
        assert d in top or labels[d] not in (None, "root")


def random_final_state(rng, n):
    """Heads with some words headless (-1), some on the root, maybe a cycle, and
    labels (some missing or ``root``)."""
    heads = [-1] + [rng.choice([-1, 0] + [h for h in range(1, n + 1) if h != d]) for d in range(1, n + 1)]
    labels = [None] + [rng.choice([None, "root", "nsubj", "obj"]) for _ in range(n)]
    return heads, labels


def random_scores(rng, heads, with_root):
    n = len(heads) - 1
    scores = {}
    for d in loose_words(heads):
        options = [(rng.uniform(-5, 5), h, rng.choice(["nsubj", "root", None])) for h in range(1, n + 1) if h != d]
        if with_root:
            options.append((rng.uniform(-5, 5), 0, "root"))
        scores[d] = sorted(options, reverse=True)
    return scores


@pytest.mark.parametrize("heads, labels", [
    ([-1, -1, -1, -1], [None, None, None, None]),
    ([-1, 0, 0, 0], [None, "x", "root", "y"]),
    ([-1, 2, 3, 1], [None, "a", "b", "c"]),       # a cycle, no root
    ([-1, 2, 1, 0, -1], [None, "a", "root", "root", None]),
])
def test_repaired_trees_are_valid(heads, labels):
    assert_tree(*to_valid_tree(heads, labels))


@pytest.mark.parametrize("choice", ROOT_CHOICES)
@pytest.mark.parametrize("with_root", [False, True])
def test_every_choice_gives_a_valid_tree(choice, with_root):
    rng = random.Random(5)
    for _ in range(400):
        heads, labels = random_final_state(rng, rng.randint(1, 9))
        scores = random_scores(rng, heads, with_root)
        fixed, fixed_labels = to_valid_tree(heads, labels, None, choice, scores)
        assert_tree(fixed, fixed_labels, roots=None if choice == "multi" else 1)


def test_multi_keeps_every_loose_word_on_the_root():
    heads, labels = [-1, -1, 1, 0, -1], [None, None, "obj", "nsubj", None]
    assert to_valid_tree(heads, labels, choice="multi") == ([-1, 0, 1, 0, 0], [None, "root", "obj", "root", "root"])


def test_first_and_last_choose_by_position():
    heads, labels = [-1, -1, 1, -1, -1], [None, None, "obj", None, None]
    assert to_valid_tree(heads, labels, choice="first")[0] == [-1, 0, 1, 1, 1]
    assert to_valid_tree(heads, labels, choice="last")[0] == [-1, 4, 1, 4, 0]
    labels[3] = "root"  # a word the model put on the root with the label root comes first
    assert to_valid_tree([-1, -1, 1, 0, -1], labels, choice="last")[0] == [-1, 3, 1, 0, 3]


def test_scored_attaches_by_the_scores_and_roots_the_least_attachable_word():
    # words 1, 3, 4 loose; 2 hangs from 1.  Word 4 wants no head (best -3): the root.
    heads, labels = [-1, -1, 1, -1, -1], [None, None, "obj", None, None]
    scores = {1: [(2.0, 3, "nsubj"), (1.0, 4, "obj")],
              3: [(4.0, 2, "obl"), (0.5, 4, "advcl")],
              4: [(-3.0, 1, "conj")]}
    fixed, fixed_labels = to_valid_tree(heads, labels, None, "scored", scores)
    # 3 (most confident) goes under 2; then 1 cannot take 3 (3 is in 1's tree now) and takes 4
    assert fixed == [-1, 4, 1, 2, 0]
    assert fixed_labels == [None, "obj", "obj", "obl", "root"]


def test_scored_prefers_a_head_whose_arc_crosses_no_arc():
    # 1 -> 3 is built; 2 and 4 are loose, 4 is the root (it wants no head).  Word 2's
    # best head 4 would cross 1 -> 3 (and fragment 2 would stay outside it): 2 takes
    # the next best, 1, inside the arc that spans it.
    heads, labels = [-1, -1, -1, 1, -1], [None, None, None, "obj", None]
    scores = {1: [(1.0, 4, "nsubj")], 2: [(3.0, 4, "obl"), (2.0, 1, "amod"), (1.0, 3, "nmod")],
              4: [(-5.0, 1, "conj")]}
    assert to_valid_tree(heads, labels, None, "scored", scores)[0] == [-1, 4, 1, 1, 0]


def test_scored_takes_the_best_crossing_head_when_every_head_crosses():
    # 2 -> 4 and 1 -> 3 cross already (the system's arcs stay); loose 5 is the root.
    # Each head of loose word 6 (2, 3, 1) crosses the root arc 0 -> 5: the best one wins.
    heads, labels = [-1, -1, -1, 1, 2, -1, -1], [None] * 7
    scores = {1: [(4.0, 5, "nsubj")], 2: [(4.0, 5, "obl")], 5: [(-9.0, 1, "x")],
              6: [(3.0, 2, "obl"), (2.0, 3, "nmod"), (1.0, 1, "amod")]}
    fixed = to_valid_tree(heads, labels, None, "scored", scores)[0]
    assert fixed[5] == 0 and fixed[6] == 2


def test_scored_root_arc_counts_as_an_arc():
    # root 2 spans word 1: word 1 may not take 3 (1 -> 3 would cross 0 -> 2) while 2 is allowed
    heads, labels = [-1, -1, -1, -1], [None] * 4
    scores = {1: [(5.0, 3, "nsubj"), (1.0, 2, "nsubj")], 2: [(-9.0, 1, "x")], 3: [(4.0, 2, "obj")]}
    assert to_valid_tree(heads, labels, None, "scored", scores)[0] == [-1, 2, 0, 2]


def test_scored_with_root_arcs_roots_the_word_that_prefers_the_root_most():
    heads, labels = [-1, -1, -1], [None, None, None]
    scores = {1: [(3.0, 2, "nsubj"), (1.0, 0, "root")], 2: [(2.5, 0, "root"), (0.5, 1, "obj")]}
    assert to_valid_tree(heads, labels, None, "scored", scores) == ([-1, 2, 0], [None, "nsubj", "root"])


def test_scored_without_scores_is_first():
    heads, labels = [-1, -1, 1, -1], [None, None, "obj", None]
    assert to_valid_tree(heads, labels, None, "scored", None) == to_valid_tree(heads, labels, None, "first")


@pytest.mark.parametrize("root_node", [False, True])
def test_covington_probe_is_the_state_that_considers_the_arc(root_node):
    system = get_system("covington", root_node=root_node)
    rng = random.Random(3)
    for _ in range(100):
        n = rng.randint(2, 9)
        final = system.initial_state(n)
        for head in range(0, n + 1):
            for dep in range(1, n + 1):
                probe = system.arc_probe(final, head, dep)
                if head == dep or (head == 0 and not root_node):
                    assert probe is None or head == dep
                    continue
                positions, action = probe
                state = system.initial_state(n)
                state.i, state.j = min(head, dep), max(head, dep)
                assert system.features(state) == positions
                assert action in system.legal_actions(state)
                assert system.arc_of(state, action) == (head, dep)


def final_states(system, rng, count=100):
    """``count`` final states reached by random legal actions, of 2 to 9 words."""
    for _ in range(count):
        state = system.initial_state(rng.randint(2, 9))
        while not system.is_final(state):
            system.apply(state, rng.choice(system.legal_actions(state)), "x")
        yield state


def probes(system, state, with_root: bool):
    """``(head, dep, positions, action)`` of every arc between two words of the
    state's sentence (and from the root, ``with_root``)."""
    n = len(state.heads) - 1
    for head in range(0 if with_root else 1, n + 1):
        for dep in range(1, n + 1):
            if head != dep:
                yield (head, dep, *system.arc_probe(state, head, dep))


def test_two_planar_probe_puts_the_pair_on_the_active_stack_and_the_buffer():
    system = get_system("two-planar")
    for state in final_states(system, random.Random(4)):
        for head, dep, positions, action in probes(system, state, with_root=False):
            probe = system.initial_state(state.n)
            probe.stacks[0].extend(w for w in positions[2:0:-1] + [positions[0]] if w != NO_HEAD)
            probe.b = positions[3]
            assert system.arc_of(probe, action) == (head, dep)
            assert positions[0] == min(head, dep) and positions[3] == max(head, dep)
        assert system.arc_probe(state, 0, 1) is None


def test_two_planar_root_node_probes_root_arcs_from_node_0():
    system = get_system("two-planar", root_node=True, headless="wrong")
    for state in final_states(system, random.Random(5)):
        for dep in range(1, state.n + 1):
            positions, action = system.arc_probe(state, 0, dep)
            assert (action, positions[0], positions[3]) == ("right", 0, dep)
            probe = system.initial_state(state.n)
            probe.b = dep
            assert action in system.legal_actions(probe) and system.arc_of(probe, action) == (0, dep)


def test_arc_eager_probe_is_a_state_where_the_arc_is_legal():
    system = get_system("arc-eager")
    for state in final_states(system, random.Random(8)):
        for head, dep, positions, action in probes(system, state, with_root=True):
            probe = system.initial_state(state.n)
            probe.stack[:] = [w for w in positions[2::-1] if w != NO_HEAD]
            probe.b = positions[3]
            assert system.features(probe) == positions
            assert action in system.legal_actions(probe)
            assert system.arc_of(probe, action) == (head, dep)
    assert get_system("arc-eager", root="end").arc_probe(state, 1, 2) is None


@pytest.mark.parametrize("name", system_names())
def test_every_probe_names_an_arc_action_and_a_full_feature_row(name):
    """The contract of ``arc_probe`` for every system (None where it has no probes)."""
    system = get_system(name)
    for state in final_states(system, random.Random(6), count=5):
        n = len(state.heads) - 1
        for head in range(n + 1):
            for dep in range(1, n + 1):
                probe = system.arc_probe(state, head, dep) if head != dep else None
                if probe is not None:
                    positions, action = probe
                    assert action in system.arc_actions
                    assert len(positions) == len(system.feature_names)
                    assert all(-1 <= p <= n for p in positions) and head in positions and dep in positions


def tiny_covington_model(root_node=False):
    from kgparser.model import Model

    torch.manual_seed(0)
    config = tiny_config("covington")
    config.system.options["root_node"] = root_node
    model = Model.build(config, tiny_sentences(8, seed=1))
    with torch.no_grad():  # Shift wins often: many words end headless
        model.network.action_out.bias[model.inventory.action_id["shift"]] += 2.0
    return model


@pytest.mark.parametrize("root_node", [False, True])
def test_decoder_repairs_by_each_choice(root_node):
    model = tiny_covington_model(root_node)
    sentences = tiny_sentences(10, seed=9, max_len=12)
    trees = {choice: decode(model, sentences, 4, root_choice=choice).trees for choice in ROOT_CHOICES}
    for choice, parsed in trees.items():
        for heads, labels in parsed:
            assert_tree(heads, labels, roots=None if choice == "multi" else 1)
    assert any(sum(h == 0 for h in heads[1:]) > 1 for heads, _ in trees["multi"])  # loose words were there
    assert trees["scored"] != trees["first"]
    model.config.decoding.root_choice = "last"
    assert decode(model, sentences, 4).trees == trees["last"]  # the model's own choice is the default


def test_arc_scores_probe_every_other_word_of_each_loose_word_best_first():
    from kgparser.inference.decode import _BatchDecoder

    model = tiny_covington_model()
    sentences = tiny_sentences(6, seed=11, max_len=10)
    decoder = _BatchDecoder(model, sentences, None)
    with torch.no_grad():
        model.network.eval()
        states = decoder.run()
        probed = decoder.arc_scores()
    for state, scores in zip(states, probed):
        loose = loose_words(state.heads)
        if len(loose) < 2:
            assert scores is None
            continue
        assert sorted(scores) == loose
        for d, options in scores.items():
            assert sorted(h for _, h, _ in options) == [h for h in range(1, len(state.heads)) if h != d]
            assert [s for s, _, _ in options] == sorted((s for s, _, _ in options), reverse=True)


def test_parser_refuses_an_unknown_root_choice(tmp_path):
    from kgparser.inference.parser import Parser

    parser = Parser(tiny_covington_model())
    with pytest.raises(KgparserError, match="root_choice"):
        parser.parse([["a", "b"]], root_choice="middle")
    assert [s.heads.count(0) for s in parser.parse([[("a", "A"), ("b", "A"), ("c", "A")]], root_choice="first")] == [1]


def test_cli_parse_takes_a_root_choice(tmp_path):
    from test_parse_safety import save

    from kgparser.cli import main

    model = save(tiny_covington_model(), tmp_path / "model.pt")
    source = tmp_path / "in.conllu"
    source.write_text("".join(s.to_conllu() for s in tiny_sentences(6, seed=9, max_len=12)), encoding="utf-8")
    roots = {}
    for choice in ("multi", "first"):
        output = tmp_path / f"{choice}.conllu"
        assert main(["parse", "-m", str(model), str(source), "-o", str(output), "--root-choice", choice]) == 0
        roots[choice] = [line.split("\t")[6] for line in output.read_text().splitlines() if "\t" in line].count("0")
    assert roots["first"] == 6 < roots["multi"]


def test_systems_with_probes_say_so():
    assert {name for name in system_names() if get_system(name).has_arc_probes} == {"covington", "two-planar",
                                                                                       "arc-eager"}
    assert not get_system("arc-eager", root="end").has_arc_probes
