"""The docs' example of feeding kgparser spaCy's tokens (docs/parsing.md, "Your
own tokenizer"; the README's until issue 50) runs as written, with a tiny model
in place of the quickstart's; skipped where spaCy is not installed (it is not a
kgparser dependency)."""
import pytest
from doc_blocks import QUICKSTART_MODEL, python_block
from test_parse_safety import save
from test_root_choice import assert_tree


def tokenizer_example() -> str:
    return python_block("parsing.md", "import spacy")


def test_the_example_is_in_the_docs():
    assert "Parser.load(" in tokenizer_example()


def test_the_tokenizer_example_runs(tmp_path):
    pytest.importorskip("spacy")
    from test_model import tiny_config, tiny_sentences

    from kgparser.model import Model

    config = tiny_config("arc-hybrid")
    config.model.tag_input, config.model.pos_dim = "none", 0  # parses untagged words
    model = save(Model.build(config, tiny_sentences(6, seed=0)), tmp_path / "best.pt")
    code = tokenizer_example().replace(QUICKSTART_MODEL, str(model))
    scope: dict = {}
    exec(compile(code, "docs/parsing.md", "exec"), scope)
    parsed = scope["parsed"]
    assert [s.forms for s in parsed] == [["The", "cat", "sleeps", "on", "the", "mat", "."],
                                                       ["It", "dreams", "of", "mice", "."]]
    for sentence in parsed:
        assert_tree(sentence.heads, sentence.deprels)
