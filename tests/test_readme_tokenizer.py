"""The README's raw-text example (spaCy tokenizes, kgparser parses) runs as
written, with a tiny model in place of the quickstart's; skipped where spaCy is
not installed (it is not a kgparser dependency)."""
import re
from pathlib import Path

import pytest
from test_parse_safety import save
from test_root_choice import assert_tree

README = Path(__file__).resolve().parent.parent / "README.md"


def tokenizer_example() -> str:
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return next(block for block in blocks if "import spacy" in block)


def test_the_example_is_in_the_readme():
    assert "Parser.load(" in tokenizer_example()


def test_readme_tokenizer_example_runs(tmp_path):
    pytest.importorskip("spacy")
    from test_model import tiny_config, tiny_sentences

    from kgparser.model import Model

    config = tiny_config("arc-hybrid")
    config.model.tag_input, config.model.pos_dim = "none", 0  # parses untagged words
    model = save(Model.build(config, tiny_sentences(6, seed=0)), tmp_path / "best.pt")
    code = tokenizer_example().replace("runs/quickstart/best.pt", str(model))
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)
    parsed = scope["parsed"]
    assert [s.forms for s in parsed] == [["The", "cat", "sleeps", "on", "the", "mat", "."],
                                                       ["It", "dreams", "of", "mice", "."]]
    for sentence in parsed:
        assert_tree(sentence.heads, sentence.deprels)
