"""The documentation site (issue 50): it builds under ``mkdocs build --strict``
(API reference included), its configuration reference holds every key of
``kgparser/config.py`` with its default and nothing else, its Python blocks
run, and every flag, config key and set-up command that it and the README
mention is one kgparser has and CI runs."""
from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from doc_blocks import DOCS, QUICKSTART_MODEL, ROOT, all_blocks, pages
from test_tokenizer_in_model import tokenizer, with_tokenizer  # noqa: F401 (fixtures)

from kgparser.config import Config, config_keys, key_problem
from kgparser.io.yaml_text import parse_yaml

README = ROOT / "README.md"
#: flags of other programs that the pages mention, with the program
OTHER_PROGRAMS_FLAGS = {
    "--nproc-per-node": "torchrun", "--nnodes": "torchrun", "--rdzv-backend": "torchrun",
    "--rdzv-endpoint": "torchrun", "--rdzv-id": "torchrun", "--logdir": "tensorboard",
    "--head": "ray start", "--address": "ray start", "--strict": "mkdocs build",
"--optimize": "spacy init config", "--no-deps": "pip install", "--target": "pip install",
}
#: .ci/run's own lines before the README's: the shell's options and the checkout's root
CI_PREAMBLE = ("set -euo pipefail", 'cd "$(dirname "$0")/.."')
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_FENCED = re.compile(r"^\s*```(\w*)\n(.*?)^\s*```\s*$", re.M | re.S)
_SET = re.compile(r"--set[ =]([a-z_][a-z0-9_.]*)=")


def texts() -> dict[str, str]:
    """The README and every page but the history's, by name."""
    found = {"README.md": README.read_text(encoding="utf-8")}
    found.update({f"docs/{page.relative_to(DOCS)}": page.read_text(encoding="utf-8") for page in pages()})
    return found


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """The Markdown tables of ``text``: header cells and rows of cells."""
    lines, found, number = text.splitlines(), [], 0
    while number < len(lines) - 1:
        if lines[number].startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[number + 1]):
            end = number + 2
            while end < len(lines) and lines[end].startswith("|"):
                end += 1
            found.append((_cells(lines[number]), [_cells(row) for row in lines[number + 2:end]]))
            number = end
        else:
            number += 1
    return found


def _cells(row: str) -> list[str]:
    """The cells of a table row; a ``|`` inside a code span is text."""
    parts = re.findall(r"(?:`[^`]*`|[^|`])+|\|", row.strip().strip("|"))
    cells, current = [], ""
    for part in parts:
        if part == "|":
            cells.append(current.strip())
            current = ""
        else:
            current += part
    return cells + [current.strip()]


def reference(header: list[str]) -> dict[str, str]:
    """The rows of the configuration reference's tables with this header, by their
    first cells (joined by a space), each with its default cell."""
    rows = {}
    for found, body in tables((DOCS / "configuration.md").read_text(encoding="utf-8")):
        if found == header:
            for cells in body:
                key = " ".join(cell.strip("`") for cell in cells[:len(header) - 2])
                assert key not in rows, f"docs/configuration.md documents {key} twice"
                rows[key] = cells[len(header) - 2]
    return rows


def default_of(cell: str, where: str):
    """The value a default cell writes: one code span, read as a YAML value."""
    assert re.fullmatch(r"`[^`]+`", cell), f"{where}: the default {cell!r} is not one code span"
    return parse_yaml(cell.strip("`"), where, ValueError)


def wrong_defaults(documented: dict[str, str], actual: dict) -> list[str]:
    return [f"{key}: {documented[key]} but {actual[key]!r}" for key in sorted(documented.keys() & actual.keys())
            if default_of(documented[key], key) != actual[key]]


# -- the site -----------------------------------------------------------------------------------------


def test_the_site_builds_strictly(tmp_path):
    for package in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(package)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-5000:]
    assert (tmp_path / "site" / "api" / "parser" / "index.html").read_text(encoding="utf-8").count(
        'class="doc doc-heading"') > 10, "the API reference has no entries"


def test_every_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def listed(entries) -> list[str]:
        pages = []
        for entry in entries:
            for value in (entry.values() if isinstance(entry, dict) else [entry]):
                pages += listed(value) if isinstance(value, list) else [value]
        return pages

    in_nav = listed(config["nav"])
    assert len(in_nav) == len(set(in_nav))
    assert sorted(in_nav) == sorted({str(page.relative_to(DOCS)) for page in pages()} | {"history/index.md"})


# -- the configuration reference ------------------------------------------------------------------------


def test_the_configuration_reference_holds_every_key_with_its_default():
    documented = reference(["key", "default", "meaning"])
    schema, config = config_keys(), Config()
    defaults = {}
    for key, kind in schema.items():
        if not dataclasses.is_dataclass(kind):
            value = config
            for part in key.split("."):
                value = getattr(value, part)
            defaults[key] = value
    assert sorted(defaults.keys() - documented.keys()) == [], "keys of kgparser/config.py not documented"
    assert sorted(documented.keys() - defaults.keys()) == [], "documented keys kgparser/config.py does not have"
    assert wrong_defaults(documented, defaults) == []


def test_the_configuration_reference_holds_every_systems_options_with_their_defaults():
    from kgparser.transitions import system_class, system_names

    documented = reference(["system", "option", "default", "meaning"])
    defaults = {f"{name} {option}": parameter.default for name in system_names()
                for option, parameter in inspect.signature(system_class(name).__init__).parameters.items()
                if option != "self"}
    assert sorted(defaults.keys() - documented.keys()) == [], "system options not documented"
    assert sorted(documented.keys() - defaults.keys()) == [], "documented options no system has"
    assert wrong_defaults(documented, defaults) == []


def test_the_configuration_reference_holds_every_key_of_a_grid_file():
    from kgparser.experiments import grid

    documented = reference(["grid key", "default", "meaning"])
    sections = {"engine": grid.EngineSettings(), "report": grid.ReportSettings()}
    defaults = {f"{section}.{field.name}": getattr(settings, field.name)
                for section, settings in sections.items() for field in dataclasses.fields(settings)}
    assert sorted(documented.keys()) == sorted(set(grid._TOP_KEYS) | defaults.keys())
    assert wrong_defaults(documented, defaults) == []


# -- the Python blocks ----------------------------------------------------------------------------------


RUNNABLE = [block for block in all_blocks() if block.note != "run by"]


@pytest.mark.filterwarnings("ignore::kgparser.inference.tags.TagWarning")
@pytest.mark.parametrize("block", RUNNABLE, ids=str)
def test_a_python_block_of_the_docs_runs(block, request, tmp_path, monkeypatch):
    """In an empty folder holding ``input.conllu``, with a tiny model that tokenizes, tags and parses
    (``with_tokenizer``) in place of the quickstart's."""
    if block.note == "not run":
        pytest.skip(f"{block}: not run: {block.reason}")
    from rawtext_models import tagged_sentences

    for name in sorted(_imported(block.code) - {"kgparser"}):
        pytest.importorskip(name)
    code = block.code
    if QUICKSTART_MODEL in code:
        code = code.replace(QUICKSTART_MODEL, str(request.getfixturevalue("with_tokenizer")))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "input.conllu").write_text("".join(s.to_conllu() for s in tagged_sentences()), encoding="utf-8")
    exec(compile(code, str(block), "exec"), {})


def _imported(code: str) -> set[str]:
    """The top-level packages ``code`` imports."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_a_block_not_run_says_why_and_one_run_elsewhere_says_where():
    notes = [block for block in all_blocks() if block.note]
    assert all(block.reason for block in notes), [str(block) for block in notes if not block.reason]
    for block in notes:
        if block.note == "run by":
            test = ROOT / block.reason
            assert test.parent.name == "tests" and test.is_file(), f"{block}: no test {block.reason}"
            assert Path(block.page).name in test.read_text(encoding="utf-8"), \
                f"{block}: {block.reason} does not read {block.page}"
    stray = [f"{name}:{number}" for name, text in texts().items() if name != "README.md"
             for number, line in enumerate(text.splitlines(), 1)
             if re.match(r"<!--\s*(not run|run by)", line.strip()) and not re.fullmatch(
                 r"\s*```python\s*", next((after for after in text.splitlines()[number:] if after.strip()), ""))]
    assert stray == [], "a note above no Python block"
    not_run = [block for block in notes if block.note == "not run"]
    assert len(not_run) < len(all_blocks()) - len(notes), "most blocks must run: " + ", ".join(map(str, not_run))


# -- flags, keys and set-up commands ----------------------------------------------------------------------


def kgparser_flags() -> set[str]:
    """The option strings of every ``kgparser`` command, sub-commands included."""
    from kgparser.cli import build_parser

    def options(parser: argparse.ArgumentParser) -> set[str]:
        found = set()
        for action in parser._actions:
            found |= set(action.option_strings)
            if isinstance(action, argparse._SubParsersAction):
                for command in action.choices.values():
                    found |= options(command)
        return found

    commands = next(action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction))
    return options(build_parser()).union(*(options(build_parser(name)) for name in commands.choices))


def script_flags() -> set[str]:
    """The options of the repository's own scripts (``experiments/*.py``, ``embeddings/*.py``),
    read from their ``add_argument`` calls."""
    found = set()
    for script in [*ROOT.glob("experiments/*.py"), *ROOT.glob("embeddings/*.py")]:
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                found |= {arg.value for arg in node.args if isinstance(arg, ast.Constant)
                          and isinstance(arg.value, str) and arg.value.startswith("--")}
    return found


def test_every_flag_the_docs_mention_exists():
    """A flag of kgparser, of one of the repository's scripts, or of another program named in the list."""
    flags = kgparser_flags()
    assert {"--set", "--dry-run", "--samples", "--ray-address"} <= flags  # train, experiment run / report, parse
    flags |= script_flags()
    others = set(OTHER_PROGRAMS_FLAGS)
    mentioned = {(name, flag) for name, text in texts().items() for flag in _FLAG.findall(text)}
    assert sorted(f"{name}: {flag}" for name, flag in mentioned if flag not in flags | others) == []
    assert not others & flags, "a flag of another program is kgparser's too: drop it from the list"
    assert others <= {flag for name, flag in mentioned}, "a flag no page mentions any more: drop it from the list"


def test_every_config_key_the_docs_write_exists():
    """Dotted keys in YAML blocks, in ``--set KEY=VALUE`` and in code spans (file names such as
    ``model.safetensors`` aside)."""
    sections = "|".join(key for key, kind in config_keys().items() if "." not in key and dataclasses.is_dataclass(kind))
    dotted = re.compile(rf"(?<![\w./-])(?:{sections})(?:\.[A-Za-z_]\w*)+")
    written = set()
    for name, text in texts().items():
        written |= {(name, key) for key in _SET.findall(text)}
        written |= {(name, key) for language, code in _FENCED.findall(text) if language == "yaml"
                    for key in dotted.findall(code)}
        prose = _FENCED.sub("", text)
        written |= {(name, key) for span in re.findall(r"`([^`\n]+)`", prose) for key in dotted.findall(span)
                    if not re.fullmatch(r"[\w.]+\.(safetensors|json|yaml|py)", key)}
    assert len({key for name, key in written}) > 50
    assert sorted(f"{name}: {key_problem(key)}" for name, key in written if key_problem(key)) == []


def install_block(text: str, name: str) -> list[str]:
    """The lines of the first ```bash block after the first heading about installing."""
    heading = re.search(r"^#+ .*\binstall", text, re.M | re.I)
    assert heading, f"{name}: no heading about installing"
    block = re.search(r"^```bash\n(.*?)^```", text[heading.start():], re.M | re.S)
    assert block, f"{name}: no bash block after {heading[0]!r}"
    return [line for line in block[1].splitlines() if line.strip()]


def test_the_set_up_commands_are_what_ci_runs():
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.startswith("#") and line not in CI_PREAMBLE]
    assert len(ci) >= 2
    assert install_block(README.read_text(encoding="utf-8"), "README.md") == ci
    assert install_block((DOCS / "install.md").read_text(encoding="utf-8"), "docs/install.md") == ci
