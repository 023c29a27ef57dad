"""Inference: every input kind, valid trees whatever the system leaves, unknown
words and tags, long sentences, empty input, and the constraint hook."""
import pytest
import torch
from test_model import IGNORE_TINY_MODEL_WARNINGS, TINY_MODEL, tiny_conllu

from kgparser.config import config_from_dict
from kgparser.inference.decoding_constraints import DecodingConstraint
from kgparser.inference.parser import Parser
from kgparser.io.conllu import parse_conllu
from kgparser.model.checkpoint import CheckpointError
from kgparser.training import train

torch.set_num_threads(1)

pytestmark = IGNORE_TINY_MODEL_WARNINGS


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("parser")
    (folder / "train.conllu").write_text(tiny_conllu(10, seed=3), encoding="utf-8")
    config = config_from_dict({"output_dir": str(folder / "run"), "threads": 1,
                               "data": {"train": str(folder / "train.conllu")}, "model": TINY_MODEL,
                               "training": {"epochs": 1, "batch_size": 4, "tensorboard": False,
                                            "progress": False}})
    train(config, log=lambda line: None)
    return folder / "run" / "best.pt"


def assert_valid_tree(sentence):
    heads = sentence.heads
    assert [d for d in range(1, sentence.n + 1) if heads[d] == 0].__len__() == 1
    for d in range(1, sentence.n + 1):
        assert 0 <= heads[d] <= sentence.n and (sentence.deprels[d] == "root") == (heads[d] == 0)
        seen, h = set(), d
        while h != 0:
            assert h not in seen
            seen.add(h)
            h = heads[h]


def test_parses_forms_pairs_sentences_and_files(checkpoint, tmp_path):
    parser = Parser.load(checkpoint)
    forms = parser.parse([["w1", "w2", "w3"], ["zzz-unknown", "w4"]], tags="input")  # a gold-tag model
    pairs = parser.parse([[("w1", "A"), ("w2", "UNSEEN-TAG"), ("w3", "C")]])
    assert [s.n for s in forms] == [3, 2] and pairs[0].upos == ["A", "UNSEEN-TAG", "C"]
    for sentence in forms + pairs:
        assert_valid_tree(sentence)
    text = "# sent_id = x\n# text = w1 w2\n1-2\tw1w2\t_\t_\t_\t_\t_\t_\t_\t_\n" \
           "1\tw1\tl1\tA\tx1\tF=1\t_\t_\t_\tSpaceAfter=No\n2\tw2\tl2\tB\tx2\t_\t_\t_\t_\t_\n\n"
    original = list(parse_conllu(text, require_tree=False))
    parsed = parser.parse(original)
    assert original[0].heads == [-1, -1, -1]  # inputs are left unchanged
    assert_valid_tree(parsed[0])
    out = parsed[0].to_conllu()
    assert "# sent_id = x" in out and "1-2\tw1w2" in out and "F=1" in out and "SpaceAfter=No" in out
    path = tmp_path / "in.conllu"
    path.write_text(text, encoding="utf-8")
    assert parser.parse(path)[0].to_conllu() == out
    target = tmp_path / "out.conllu.gz"
    written = parser.parse_file(path, target)
    assert (written.sentences, written.words) == (1, 2)
    assert [s.to_conllu() for s in parser.parse(target)] == [out]


def test_long_sentences_empty_input_and_batching(checkpoint):
    parser = Parser.load(checkpoint, batch_size=3)
    assert parser.parse([]) == []
    long = [f"w{i % 10}" for i in range(150)]
    sentences = parser.parse([long, ["w1"], long[:7], ["w2", "w3"], long[:40]], tags="input")  # untagged
    assert [s.n for s in sentences] == [150, 1, 7, 2, 40]
    for sentence in sentences:
        assert_valid_tree(sentence)
    one_by_one = [Parser.load(checkpoint, batch_size=1).parse([s.forms], tags="input")[0].heads for s in sentences]
    assert one_by_one == [s.heads for s in sentences]


class RightBranching(DecodingConstraint):
    """Allows only shift and right, and forces one label."""

    def allowed_actions(self, state, legal_actions):
        return [a for a in legal_actions if a in ("shift", "right")]

    def forced_label(self, head, dependent):
        return "forced-label"


def test_constraint_hook_filters_actions_and_forces_labels(checkpoint):
    parser = Parser.load(checkpoint)
    tokens = [["w1", "w2", "w3", "w4"], ["w5", "w6", "w7"]]
    parsed = parser.parse(tokens, constraints=[RightBranching(), None], tags="input")
    assert parsed[0].heads == [-1, 0, 1, 2, 3]
    assert parsed[0].deprels[2:] == ["forced-label"] * 3
    only_shift_right = parser.parse(tokens, constraints=[lambda state, legal: [a for a in legal if a != "left"]] * 2,
                                    tags="input")
    for sentence in only_shift_right:
        assert all(sentence.heads[d] < d for d in range(1, sentence.n + 1))
    with pytest.raises(ValueError):
        parser.parse(tokens, constraints=[None], tags="input")


def test_bad_checkpoints_are_reported(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        Parser.load(tmp_path / "absent.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="junk.pt"):
        Parser.load(tmp_path / "junk.pt")
    torch.save({"format": "other"}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="not a kgparser checkpoint"):
        Parser.load(tmp_path / "other.pt")


@pytest.mark.parametrize("data, where, got", [
    ([["The", 5]], "sentence 1, token 2", "got 5 (int)"),
    ([["The", "dog"], [b"The"]], "sentence 2, token 1", "got b'The' (bytes)"),
    ([[("The", "DET", "_", "x")]], "sentence 1, token 1", "got ('The', 'DET', '_', 'x') (tuple)"),
    ([["The", None]], "sentence 1, token 2", "got None (NoneType)"),
    ([["The"], None], "sentence 2", "got None (NoneType)"),
    ([["The", "d\x00g"]], "sentence 1, token 2", "form 'd\\x00g' contains the control character U+0000"),
    (None, "expected a CoNLL-U path", "got NoneType"),
])
def test_tokens_that_are_not_text_are_a_value_error_naming_their_place(checkpoint, data, where, got):
    with pytest.raises(ValueError) as refused:
        Parser.load(checkpoint).parse(data)
    assert str(refused.value).startswith(where) and got in str(refused.value)


@pytest.mark.parametrize("batch_size", [0, -1, True, "64", 2.5, None])
def test_a_bad_batch_size_is_refused_at_load(checkpoint, batch_size):
    from kgparser.errors import KgparserError

    with pytest.raises(KgparserError, match=r"^batch_size: must be a whole number >= 1, got "):
        Parser.load(checkpoint, batch_size=batch_size)
