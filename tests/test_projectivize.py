import random
from pathlib import Path

import pytest

from kgparser.cli import main
from kgparser.io.conllu import read_conllu
from kgparser.projectivize import ProjectivizeError, is_projective_tree, projectivize_sentences, projectivize_tree
from kgparser.transitions.trees import all_trees, is_projective, random_tree

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

UD = Path(__file__).resolve().parents[2] / "shared" / "ud"


def agreement(heads, gold):
    return sum(1 for d in range(1, len(gold)) if heads[d] == gold[d])


def root_dependents(heads):
    return sum(1 for h in heads[1:] if h == 0)


def test_result_is_a_projective_tree_with_the_most_original_arcs():
    rng = random.Random(0)
    for n in range(1, 7):
        projective = [t for t in all_trees(n) if is_projective(t)]
        golds = all_trees(n) if n <= 4 else (random_tree(n, rng, single_root=bool(i % 2)) for i in range(30))
        for gold in golds:
            best = max(agreement(t, gold) for t in projective)
            heads, _, changed = projectivize_tree(gold)
            assert is_projective(heads), (gold, heads)
            assert agreement(heads, gold) == best, (gold, heads)
            assert changed == n - best
            if root_dependents(gold) == 1:
                assert root_dependents(heads) == 1, (gold, heads)


def test_projectivity_test_agrees_with_the_reference_definition():
    for n in range(1, 6):
        for tree in all_trees(n):
            assert is_projective_tree(tree) == is_projective(tree)


def test_projective_input_is_returned_unchanged():
    rng = random.Random(1)
    for _ in range(50):
        n = rng.randint(1, 12)
        gold = random_tree(n, rng)
        if is_projective(gold):
            labels = [None] + [f"l{d}" for d in range(1, n + 1)]
            assert projectivize_tree(gold, labels) == (gold, labels, 0)


def test_a_moved_word_keeps_its_label():
    # 0 -> 2 -> 4, 2 -> 1, 4 -> 3 and 1 -> 5: the arc 1 -> 5 crosses 2 -> 4
    heads = [-1, 2, 0, 4, 2, 1]
    labels = [None, "nsubj", "root", "obj", "xcomp", "amod"]
    new_heads, new_labels, changed = projectivize_tree(heads, labels)
    assert is_projective(new_heads) and changed == 1
    assert new_labels == labels
    assert all(type(h) is int for h in new_heads)


def test_the_root_label_follows_the_root():
    # 0 -> 2 -> 1 -> {3, 4, 5}: the arcs from 1 cross 0 -> 2, and the only
    # way to keep three arcs is to hang 1 from the root and move 2
    heads = [-1, 2, 0, 1, 1, 1]
    labels = [None, "nsubj", "root", "a", "b", "c"]
    new_heads, new_labels, changed = projectivize_tree(heads, labels)
    assert is_projective(new_heads) and changed == 2
    assert new_heads[1] == 0 and new_heads[3:] == [1, 1, 1]
    assert new_labels == [None, "root", "dep", "a", "b", "c"]


def test_not_a_tree_is_an_error():
    with pytest.raises(ProjectivizeError, match="cycle"):
        projectivize_tree([-1, 2, 1])
    with pytest.raises(ProjectivizeError, match="labels"):
        projectivize_tree([-1, 0], [None])


NONPROJECTIVE = """# sent_id = np1
1\tA\ta\tDET\t_\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\t_\t_\t4\tnsubj\t_\t_
3\tcame\tcome\tVERB\t_\t_\t0\troot\t_\t_
4\twhich\twhich\tPRON\t_\t_\t3\tobl\t_\t_

# sent_id = p1
1\tHi\thi\tINTJ\t_\t_\t0\troot\t_\t_

"""


def test_cli_round_trip(tmp_path, capsys):
    source, first, second = tmp_path / "in.conllu", tmp_path / "out.conllu", tmp_path / "again.conllu"
    source.write_text(NONPROJECTIVE, encoding="utf-8")
    assert main(["projectivize", str(source), str(first)]) == 0
    assert "1 of 2 trees changed, 1 of 5 arcs moved" in capsys.readouterr().out
    sentences = read_conllu(first)
    assert [s.sent_id for s in sentences] == ["np1", "p1"]
    assert all(is_projective(s.heads) for s in sentences)
    assert sentences[0].deprels == [None, "det", "nsubj", "root", "obl"]
    assert main(["projectivize", str(first), str(second)]) == 0
    assert "0 of 2 trees changed" in capsys.readouterr().out
    assert second.read_text(encoding="utf-8") == first.read_text(encoding="utf-8")


def test_cli_reports_a_missing_file(tmp_path, capsys):
    assert main(["projectivize", str(tmp_path / "none.conllu"), str(tmp_path / "out.conllu")]) == 1
    assert "none.conllu" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(not (UD / "UD_Latin-Perseus").is_dir(), reason="UD treebanks not available")
def test_a_whole_treebank_becomes_projective():
    sentences = read_conllu(UD / "UD_Latin-Perseus" / "la-ud-train.conllu")
    before = [list(s.heads) for s in sentences]
    summary = projectivize_sentences(sentences)
    assert summary.trees == len(sentences) and summary.changed_trees > 0
    moved = 0
    for sentence, old in zip(sentences, before):
        assert is_projective(sentence.heads)
        assert root_dependents(sentence.heads) == root_dependents(old) == 1
        moved += sum(1 for d in range(1, len(old)) if sentence.heads[d] != old[d])
    assert moved == summary.changed_arcs
