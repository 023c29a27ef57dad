"""The house's import graph (issue 47): no module of kgparser reaches, through
any chain of imports, back to itself, counting the imports inside functions
(which would otherwise hide a circle until run time) and leaving out only
those under ``if TYPE_CHECKING:``.  Torch-free, read with :mod:`ast`."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # torch-free: the fast tier (tests/test_fast_tier.py)

PACKAGE = Path(__file__).resolve().parents[1] / "kgparser"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imported(path: Path, known: dict[str, Path]) -> set[str]:
    """The kgparser modules that ``path`` imports anywhere but under ``if TYPE_CHECKING:``
    (a package's ``__init__`` that runs first when one of its modules is imported
    is not counted: it may import its own modules)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)  # a name imported from it is a submodule of its own, or from it
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return {_known(module, known) for module in found if module.split(".")[0] == "kgparser"} - {None, name}


def _walk(tree: ast.AST):
    """Every node but those under an ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(module: str, known: dict) -> str | None:
    """The module itself, or the package holding the name imported from it."""
    while module and module not in known:
        module = module.rpartition(".")[0]
    return module or None


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the graph as the modules along it, or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for child in sorted(graph.get(node, ())):
            if state.get(child) == 1:
                return path[path.index(child):] + [child]
            if child not in state:
                cycle = visit(child)
                if cycle:
                    return cycle
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_import_graph_has_no_cycle():
    known = modules()
    graph = {name: imported(path, known) for name, path in known.items()}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_cycles():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
