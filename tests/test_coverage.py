import json
import random
from pathlib import Path

import pytest

from kgparser.cli import main
from kgparser.evaluation.coverage import format_markdown, treebank_statistics
from kgparser.transitions import get_system
from kgparser.transitions.checking import ExactLoss
from kgparser.transitions.trees import is_projective, random_tree

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

DATA = Path(__file__).parent / "data"
CROSSING = [-1, 2, 0, 1]  # 2 -> 1 -> 3 crosses root -> 2


def test_projective_systems_cover_projective_trees_fully():
    stats = treebank_statistics("t", [[-1, 0, 1, 1], CROSSING], ["arc-hybrid"])
    cov = stats.systems["arc-hybrid"]
    assert (stats.sentences, stats.words, stats.nonprojective_sentences) == (2, 6, 1)
    assert stats.nonprojective_arcs == 1
    assert cov.buildable_sentences == 1 and cov.sentence_share == 0.5
    assert cov.recoverable_arcs == 3 + 2  # the best projective tree keeps 2 of 3 arcs


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", ["arc-standard", "covington"])
def test_recoverable_arcs_are_the_best_possible_for_exact_oracles(name):
    system = get_system(name)
    rng = random.Random(5)
    trees = [random_tree(rng.randint(2, 6), rng) for _ in range(25)]
    stats = treebank_statistics("t", trees, [name])
    best = sum(len(t) - 1 - ExactLoss(system, t)(system.initial_state(len(t) - 1)) for t in trees)
    assert stats.systems[name].recoverable_arcs == best


@pytest.mark.exhaustive
def test_arc_hybrid_recovers_no_more_than_possible():
    system = get_system("arc-hybrid")
    rng = random.Random(9)
    trees = [t for t in (random_tree(6, rng) for _ in range(40)) if not is_projective(t)]
    stats = treebank_statistics("t", trees, ["arc-hybrid"])
    best = sum(6 - ExactLoss(system, t)(system.initial_state(6)) for t in trees)
    assert 0 < stats.systems["arc-hybrid"].recoverable_arcs <= best


def test_stats_command_formats(capsys):
    assert main(["stats", str(DATA / "sample.conllu"), "--systems", "arc-hybrid", "covington",
                 "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)[0]
    assert report["treebank"] == "sample.conllu"
    assert report["systems"]["covington"]["sentence_share"] == 1.0
    assert main(["stats", str(DATA / "sample.conllu"), "--format", "markdown"]) == 0
    table = capsys.readouterr().out
    assert table.startswith("| treebank |") and "two-planar sents / arcs" in table


def test_stats_command_rejects_unknown_system(capsys):
    assert main(["stats", str(DATA / "sample.conllu"), "--systems", "covingtn"]) == 1
    assert "did you mean 'covington'" in capsys.readouterr().err


def test_markdown_has_one_row_per_treebank():
    rows = format_markdown([treebank_statistics(n, [[-1, 0]], ["arc-hybrid"]) for n in ("a", "b")])
    assert len(rows.splitlines()) == 4
