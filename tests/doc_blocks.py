"""The Python blocks of the documentation pages, for the tests that run them.

A block runs as written, with a tiny model in place of the quickstart's
(:data:`QUICKSTART_MODEL`). The line just above a block may say otherwise:
``<!-- not run: REASON -->`` (it needs what a test cannot have, such as a large
model) or ``<!-- run by: tests/FILE.py -->`` (a test of its own runs it, with
the model and the packages it needs)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: the model the blocks load, as a user who followed the quickstart has it
QUICKSTART_MODEL = "runs/quickstart/best.pt"
NOTE = re.compile(r"^<!--\s*(not run|run by):(.*?)-->$")
_FENCE = re.compile(r"^(\s*)```python\s*$")


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository, e.g. docs/parsing.md
    line: int  # of the opening fence
    code: str
    note: str | None = None  # "not run" or "run by"
    reason: str = ""  # what the note says: why not, or which test runs it

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[Path]:
    """Every page of the site but the history's lab notes, which keep what was run then."""
    return sorted(path for path in DOCS.rglob("*.md") if path.relative_to(DOCS).parts[0] != "history")


def python_blocks(page: Path) -> list[Block]:
    """The ```python blocks of ``page``, with the note on the line above each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = []
    for number, line in enumerate(lines):
        fence = _FENCE.match(line)
        if fence is None:
            continue
        end = next(i for i in range(number + 1, len(lines)) if lines[i].strip() == "```")
        indent = len(fence[1])
        code = "".join(text[indent:] + "\n" for text in lines[number + 1:end])
        above = next((text.strip() for text in reversed(lines[:number]) if text.strip()), "")
        note = NOTE.match(above)
        blocks.append(Block(str(page.relative_to(ROOT)), number + 1, code,
                            note[1] if note else None, note[2].strip() if note else ""))
    return blocks


def all_blocks() -> list[Block]:
    """The Python blocks of the README and of every page of :func:`pages`."""
    return [block for page in (ROOT / "README.md", *pages()) for block in python_blocks(page)]


def python_block(page: str, marker: str) -> str:
    """The code of the one Python block of ``docs/PAGE`` that holds ``marker``."""
    [code] = [block.code for block in python_blocks(DOCS / page) if marker in block.code]
    return code
