"""Constrained parsing end to end: the output of a tiny arc-eager (root at the
end) model meets random consistent span and arc constraints, labels included;
bad constraints raise or are dropped with a warning; MISC, JSON-lines, list
inputs and the command line; unsupported systems and empty filters fail loudly."""
import json
import random

import pytest
import torch
from test_model import IGNORE_TINY_MODEL_WARNINGS, TINY_MODEL, tiny_conllu

from kgparser.cli import main
from kgparser.config import config_from_dict
from kgparser.constraints import ConstraintError, Constraints, constraint_filter
from kgparser.inference.decode import DecodingError, decode
from kgparser.inference.decoding_constraints import ConstraintWarning, DecodingConstraint, as_constraint
from kgparser.inference.parser import Parser
from kgparser.inference.tree_repair import to_valid_tree
from kgparser.io.conllu import parse_conllu
from kgparser.io.reader import read
from kgparser.training import train
from kgparser.transitions.trees import children, random_projective_tree

torch.set_num_threads(1)

pytestmark = IGNORE_TINY_MODEL_WARNINGS

LABELS = ("nsubj", "obj", "amod", "advmod")


def train_tiny(folder, system: dict) -> str:
    (folder / "train.conllu").write_text(tiny_conllu(10, seed=3), encoding="utf-8")
    config = config_from_dict({"output_dir": str(folder / "run"), "threads": 1, "system": system,
                               "data": {"train": str(folder / "train.conllu")}, "model": TINY_MODEL,
                               "training": {"epochs": 1, "batch_size": 4, "tensorboard": False,
                                            "progress": False, "unbuildable": "skip"}})
    train(config, log=lambda line: None)
    return str(folder / "run" / "best.pt")


@pytest.fixture(scope="module")
def eager_end(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("eager-end"), {"name": "arc-eager", "options": {"root": "end"}})


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory):
    return train_tiny(tmp_path_factory.mktemp("hybrid"), {"name": "arc-hybrid"})


def unmet(constraints: Constraints, sentence) -> list:
    """The constraints the parsed ``sentence`` breaks (an independent check)."""
    heads, labels, broken = sentence.heads, sentence.deprels, []
    for a in constraints.arcs:
        if heads[a.dep] != a.head or a.label is not None and labels[a.dep] != a.label:
            broken.append(a)
    for s in constraints.spans:
        inside = range(s.first, s.last + 1)
        tops = [w for w in inside if heads[w] not in inside]
        givers = {heads[d] for d in range(1, sentence.n + 1) if heads[d] in inside and d not in inside}
        if len(tops) != 1 or s.outside == "none" and givers or s.outside == "root" and givers - set(tops):
            broken.append(s)
    return broken


def random_constraints(n: int, rng: random.Random) -> Constraints:
    """Arcs (some labeled) and disjoint subtree spans of a random single-rooted projective tree."""
    heads = random_projective_tree(n, rng, single_root=True)
    arcs = [(heads[d], d, rng.choice(LABELS) if heads[d] and rng.random() < 0.5 else None)
            for d in range(1, n + 1) if rng.random() < 0.3]
    kids = children(heads)

    def extent(word):
        words = [word]
        for k in kids[word]:
            words += extent(k)
        return words

    spans, taken = [], set()
    for word in rng.sample(range(1, n + 1), n):
        words = extent(word)
        if 1 < len(words) < n and not taken & set(words) and rng.random() < 0.4:
            taken |= set(words)
            spans.append((min(words), max(words), rng.choice(("free", "root", "none"))))
    return Constraints(arcs, spans)


def test_output_meets_random_consistent_constraints(eager_end):
    parser = Parser.load(eager_end, batch_size=5)
    rng = random.Random(7)
    sentences = [[f"w{rng.randint(0, 9)}" for _ in range(rng.randint(1, 14))] for _ in range(60)]
    constraints = [random_constraints(len(s), rng) for s in sentences]
    assert sum(len(c.arcs) for c in constraints) > 100 and sum(len(c.spans) for c in constraints) > 30
    parsed = parser.parse(sentences, constraints=constraints, tags="input")
    for sentence, c in zip(parsed, constraints):
        assert not unmet(c, sentence), (sentence.forms, c, sentence.heads, sentence.deprels)
        assert sum(sentence.heads[d] == 0 for d in range(1, sentence.n + 1)) == 1
    report = parser.constraint_report
    assert report.constrained == sum(bool(c) for c in constraints) and not report.skipped and not report.violated
    free = parser.parse(sentences, tags="input")
    assert sum(bool(unmet(c, s)) for c, s in zip(constraints, free)) > 20  # the constraints do change parses


def test_forced_root_of_an_imperative(eager_end):
    parser = Parser.load(eager_end)
    tokens = [["w1", "w2", "w3", "w4", "w5"]] * 2
    parsed = parser.parse(tokens, constraints=[{"arcs": [[0, 1, "root"]]}, {"arcs": [[0, 4, "root"], [4, 2, "obj"]]}],
                          tags="input")
    assert parsed[0].heads[1] == 0 and parsed[0].deprels[1] == "root"
    assert parsed[1].heads[4] == 0 and parsed[1].heads[2] == 4 and parsed[1].deprels[2] == "obj"


def test_root_choice_keeps_the_constraints(eager_end):
    system = Parser.load(eager_end).system

    def repaired(constraints, heads, labels):
        prefer = as_constraint(constraint_filter(system, constraints, len(heads) - 1)).preferred_roots
        return to_valid_tree(heads, labels, prefer)

    labels = [None, "root", "obj", "root"]
    assert repaired(Constraints([(0, 3)]), [-1, 0, 0, 0], labels) == ([-1, 3, 3, 0], [None, "dep", "obj", "root"])
    assert repaired(Constraints(spans=[(1, 2, "none")]), [-1, 0, 1, 0], labels)[0] == [-1, 3, 1, 0]
    assert repaired(Constraints(spans=[(1, 2, "root")]), [-1, 0, 1, 0], labels)[0] == [-1, 0, 1, 1]


def test_filter_objects_force_labels_at_decode_level(eager_end):
    parser = Parser.load(eager_end)
    sentences = parser.parse([["w1", "w2", "w3", "w4"]], tags="input")  # a gold-tag model, no tags
    c = Constraints([(3, 1, "label-not-in-model"), (0, 3, "root")])
    heads, labels = decode(parser.model, sentences, constraints=[constraint_filter(parser.system, c, 4)]).trees[0]
    assert heads[1] == 3 and labels[1] == "label-not-in-model" and heads[3] == 0


def test_bad_constraints_error_or_skip(eager_end):
    sentences = list(parse_conllu(tiny_conllu(3, seed=11, max_len=5), "in.conllu"))
    bad = [{"arcs": [[2, 1], [0, 1]]}, {"arcs": [[0, 1, "root"]]}, {"spans": [[1, 99]]}]
    parser = Parser.load(eager_end)
    with pytest.raises(ConstraintError, match=r"in.conllu, line 1, sentence 1 \(sent_id tiny-0\).*two constrained"):
        parser.parse(sentences, constraints=bad)
    with pytest.warns(ConstraintWarning) as caught:
        parsed = parser.parse(sentences, constraints=bad, on_bad_constraints="skip")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and "tiny-0" in messages[0] and "tiny-2" in messages[1] and "1..99" in messages[1]
    assert len(parser.constraint_report.skipped) == 2 and parser.constraint_report.constrained == 1
    assert parsed[1].heads[1] == 0 and parsed[1].deprels[1] == "root"
    unsatisfiable = {"arcs": [[3, 1], [0, 2]], "spans": [[1, 2, "none"]]}
    with pytest.raises(ConstraintError, match="tiny-0"):
        parser.parse(sentences[:1], constraints=[unsatisfiable])
    with pytest.raises(ConstraintError, match=r"words \[1, 2\] are all constrained to the root"):
        parser.parse(sentences[:1], constraints=[{"arcs": [[0, 1], [0, 2]]}])
    with pytest.raises(Exception, match="on_bad_constraints"):
        parser.parse(sentences, constraints=bad, on_bad_constraints="ignore")


def test_unsatisfiable_sets_found_while_decoding(eager_end):
    """Word 2 can only hang from 1 or 3 (both below it) or cross 3 -> 1: every
    check but the exact one passes, which the decoder's own run makes."""
    parser = Parser.load(eager_end, batch_size=2)
    tokens = [["w1", "w2", "w3"], ["w4", "w5"], ["w6", "w7", "w8"]]
    unsatisfiable = {"arcs": [[3, 1], [2, 3]]}
    Constraints(unsatisfiable["arcs"]).check_structure(3)
    with pytest.raises(ConstraintError, match="sentence 3: .*no projective tree"):
        parser.parse(tokens, constraints=[None, {"arcs": [[0, 2]]}, unsatisfiable], tags="input")
    sentences = read(tokens)
    with pytest.raises(ConstraintError, match="sentence 3: .*no projective tree"):
        parser.decoding_constraints(sentences, [None, None, unsatisfiable])
    with pytest.warns(ConstraintWarning, match="sentence 3: .*no projective tree"):
        parsed = parser.parse(tokens, constraints=[{"arcs": [[0, 1]]}, None, unsatisfiable],
                              on_bad_constraints="skip", tags="input")
    report = parser.constraint_report
    assert report.skipped_sentences == [2] and report.constrained == 1 and not report.violated
    assert parsed[0].heads[1] == 0 and parsed[2].heads == parser.parse(tokens, tags="input")[2].heads
    filters = parser.decoding_constraints(sentences, [None, None, unsatisfiable], defer_satisfiability=True)
    decoded = decode(parser.model, sentences, constraints=filters)
    assert decoded.unsatisfiable == [2] and decoded.trees[2][0] == parsed[2].heads


def test_unsupported_systems_are_refused(hybrid):
    parser = Parser.load(hybrid)
    tokens = [["w1", "w2", "w3"]]
    with pytest.raises(ConstraintError, match="span constraints need arc-eager with root='end'"):
        parser.parse(tokens, constraints=[{"spans": [[1, 2]]}], on_bad_constraints="skip", tags="input")
    parsed = parser.parse(tokens, constraints=[{"arcs": [[3, 1, "obj"], [0, 3]]}], tags="input")
    assert parsed[0].heads[1] == 3 and parsed[0].deprels[1] == "obj" and parsed[0].heads[3] == 0


class NothingAllowed(DecodingConstraint):
    def allowed_actions(self, state, legal_actions):
        return []


def test_an_empty_filter_is_an_error_not_a_fallback(eager_end):
    parser = Parser.load(eager_end)
    with pytest.raises(DecodingError, match="sentence 2.*allows none of the legal actions"):
        parser.parse([["w1"], ["w2", "w3"]], constraints=[None, NothingAllowed()], tags="input")


MISC_TEXT = """# sent_id = a
1\tw1\t_\tA\t_\t_\t_\t_\t_\tSpan=B|SpanOutside=none
2\tw2\t_\tB\t_\t_\t_\t_\t_\tSpan=E|Head=1|HeadLabel=amod
3\tw3\t_\tC\t_\t_\t_\t_\t_\tHead=0|HeadLabel=root
4\tw4\t_\tA\t_\t_\t_\t_\t_\tSpan=B
5\tw5\t_\tB\t_\t_\t_\t_\t_\tSpan=I
6\tw6\t_\tC\t_\t_\t_\t_\t_\tSpan=E|Head=3|HeadLabel=obj

# sent_id = b
1\tw7\t_\tA\t_\t_\t_\t_\t_\t_
2\tw8\t_\tB\t_\t_\t_\t_\t_\tHead=1|HeadLabel=nsubj

"""


def check_misc_sentences(parsed):
    a, b = parsed
    assert a.heads[2] == 1 and a.deprels[2] == "amod" and a.heads[3] == 0 and a.heads[6] == 3
    assert a.heads[1] == 3 and {a.heads[4], a.heads[5]} <= {4, 5, 6}  # spans are subtrees here
    assert b.heads[2] == 1 and b.deprels[2] == "nsubj"


def test_misc_and_jsonl_inputs(eager_end, tmp_path):
    parser = Parser.load(eager_end)
    source = tmp_path / "in.conllu"
    source.write_text(MISC_TEXT, encoding="utf-8")
    check_misc_sentences(parser.parse(source, constraints="misc"))
    side = tmp_path / "c.jsonl"
    side.write_text(json.dumps({"sent_id": "a", "arcs": [[1, 2, "amod"], [0, 3, "root"], [3, 6, "obj"]],
                                "spans": [[1, 2, "none"], [4, 6]]}) + "\n\n"
                    + json.dumps({"index": 1, "arcs": [[1, 2, "nsubj"]]}) + "\n", encoding="utf-8")
    check_misc_sentences(parser.parse(source, constraints=side))
    side.write_text(json.dumps({"sent_id": "zz", "arcs": [[1, 2]]}) + "\n", encoding="utf-8")
    with pytest.raises(ConstraintError, match=r"c.jsonl, line 1 \('zz'\): names no sentence"):
        parser.parse(source, constraints=str(side))
    source.write_text(MISC_TEXT.replace("Span=E|Head=1", "Head=1"), encoding="utf-8")
    with pytest.raises(ConstraintError, match=r"sent_id a\): MISC, word 2: span opened at word 1 is not closed"):
        parser.parse(source, constraints="misc")


def test_cli_round_trip(eager_end, hybrid, tmp_path, capsys):
    source = tmp_path / "in.conllu"
    source.write_text(MISC_TEXT, encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert main(["parse", "--model", eager_end, str(source), "-o", str(out), "--constraints", "misc"]) == 0
    assert "constraints: 2 sentences constrained, 0 dropped" in capsys.readouterr().err
    check_misc_sentences(list(parse_conllu(out.read_text(encoding="utf-8"))))
    assert "Span=B|SpanOutside=none" in out.read_text(encoding="utf-8")
    side = tmp_path / "c.jsonl"
    side.write_text(json.dumps({"index": 0, "arcs": [[1, 2], [2, 1]]}) + "\n"
                    + json.dumps({"sent_id": "b", "arcs": [[0, 2, "root"]]}) + "\n", encoding="utf-8")
    assert main(["parse", "--model", eager_end, str(source), "--constraints", str(side)]) == 1
    assert "c.jsonl, line 1 (0)" in capsys.readouterr().err
    with pytest.warns(ConstraintWarning):
        assert main(["parse", "--model", eager_end, str(source), "-o", str(out), "--constraints", str(side),
                     "--on-bad-constraints", "skip"]) == 0
    assert "1 sentences constrained, 1 dropped" in capsys.readouterr().err
    assert list(parse_conllu(out.read_text(encoding="utf-8")))[1].heads[2] == 0
    assert main(["parse", "--model", hybrid, str(source), "--constraints", "misc"]) == 1
    assert "span constraints need arc-eager" in capsys.readouterr().err
