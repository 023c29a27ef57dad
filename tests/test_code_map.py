"""The code map of docs/design.md lists every package and module of
kgparser, one line each, and nothing that is not there (issue 47; moved from
the README by issue 50)."""
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

ROOT = Path(__file__).resolve().parents[1]


def code_map() -> list[str]:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = design.split("## The code map", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(kgparser/[^`]*)` \|", section, re.M)


def on_disk() -> set[str]:
    package = ROOT / "kgparser"
    modules = {str(path.relative_to(ROOT)) for path in package.rglob("*.py") if path.name != "__init__.py"}
    packages = {f"{path.parent.relative_to(ROOT)}/" for path in package.rglob("__init__.py")}
    return modules | packages - {"kgparser/"} | {"kgparser/__init__.py"}


def test_every_package_and_module_is_in_the_code_map_once():
    listed = code_map()
    assert len(listed) == len(set(listed)), "listed twice: " + ", ".join({p for p in listed if listed.count(p) > 1})
    missing = sorted(on_disk() - set(listed))
    assert not missing, "not in the code map of docs/design.md: " + ", ".join(missing)
    gone = sorted(set(listed) - on_disk())
    assert not gone, "in the code map of docs/design.md but not in kgparser/: " + ", ".join(gone)
