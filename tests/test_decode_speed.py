"""Covington decoding scores runs of No-Arc ahead (kgparser.inference.decode): the
features it predicts are those the states reached have, the trees are those
of scoring one state at a time (with and without decoding constraints), and
a long No-Arc run takes far fewer MLP calls than transitions."""
import random

import pytest
import torch
from test_model import tiny_config, tiny_sentences
from test_parse_safety import tiny_model

from kgparser.inference.decode import decode
from kgparser.inference.decoding_constraints import DecodingConstraint
from kgparser.transitions import get_system

torch.set_num_threads(1)


@pytest.mark.parametrize("root_node", [False, True])
def test_chain_features_are_the_features_of_the_states_no_arc_reaches(root_node):
    system = get_system("covington", root_node=root_node)
    rng = random.Random(7)
    for _ in range(300):
        state = system.initial_state(rng.randint(1, 12))
        while not system.is_final(state):
            legal = system.legal_actions(state)
            count = rng.randint(1, 15)
            predicted = system.chain_features(state, count) if "no-arc" in legal else None
            if predicted is not None:
                walked, copy = [], state.copy()
                while len(walked) < count and "no-arc" in system.legal_actions(copy):
                    system.apply(copy, "no-arc")
                    if len(system.legal_actions(copy)) > 1:  # states with a choice only
                        walked.append(system.features(copy))
                assert predicted == walked
            system.apply(state, rng.choice(legal), "x")


class EveryThirdNoLeft(DecodingConstraint):
    """Forbids Left where i is a multiple of 3 and forces a label on arcs into odd words."""

    def allowed_actions(self, state, legal_actions):
        return [a for a in legal_actions if not (a == "left" and state.i % 3 == 0)]

    def forced_label(self, head, dependent):
        return "obj" if dependent % 2 else None


def trees(model, sentences, batch_size, constraints, chained: bool):
    if not chained:
        model.system.chain_action = None  # the instance attribute hides the class's
    try:
        return decode(model, sentences, batch_size, constraints).trees
    finally:
        model.system.__dict__.pop("chain_action", None)


def favour(model, action: str, amount: float) -> None:
    """Shift the action head's bias so that ``action`` wins more often."""
    with torch.no_grad():
        model.network.action_out.bias[model.inventory.action_id[action]] += amount


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("root_node", [False, True])
def test_runs_scored_ahead_give_the_trees_of_one_state_at_a_time(seed, root_node):
    torch.manual_seed(seed)
    from kgparser.model import Model

    config = tiny_config("covington")
    config.system.options["root_node"] = root_node
    model = Model.build(config, tiny_sentences(8, seed=seed))
    favour(model, "no-arc", [0.0, 0.3, 0.6, 1.0][seed])  # runs of every length
    rng = random.Random(seed)
    sentences = tiny_sentences(12, seed=100 + seed, max_len=30)
    filters = [rng.choice([None, EveryThirdNoLeft(), lambda state, legal: [a for a in legal if a != "right"]])
               for _ in sentences]
    for batch_size in (1, 5):
        for constraints in (None, filters):
            expected = trees(model, sentences, batch_size, constraints, chained=False)
            assert trees(model, sentences, batch_size, constraints, chained=True) == expected


def test_a_long_no_arc_run_takes_few_mlp_calls(monkeypatch):
    model = tiny_model("covington")
    favour(model, "no-arc", 100.0)  # No-Arc wherever it is legal: n(n-1)/2 of them
    calls = []
    hidden = model.network.hidden
    monkeypatch.setattr(model.network, "hidden", lambda *args: calls.append(1) or hidden(*args))
    n = 120
    sentence = tiny_sentences(1, seed=3, max_len=2)[0]
    sentence = type(sentence)([f"{d}\tw{d % 9}\t_\tA\t_\t_\t_\t_\t_\t_" for d in range(1, n + 1)],
                              require_tree=False)
    decode(model, [sentence])
    assert len(calls) < n * (n - 1) // 2 / 10
