"""The fast tier (``pytest -m fast``): the test modules marked ``fast`` import
without torch, so the tier runs the transition systems, oracles, readers,
config and scorers alone, in about a minute."""
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast

TESTS = Path(__file__).resolve().parent


def fast_modules() -> list[str]:
    return sorted(path.stem for path in TESTS.glob("test_*.py")
                  if "pytestmark = pytest.mark.fast" in path.read_text(encoding="utf-8"))


@pytest.mark.exhaustive
def test_the_fast_tier_imports_no_torch():
    modules = fast_modules()
    assert len(modules) > 20
    code = ("import sys; sys.modules['torch'] = None; sys.path.insert(0, sys.argv[1]); "
            "import importlib; [importlib.import_module(m) for m in sys.argv[2:]]")
    done = subprocess.run([sys.executable, "-c", code, str(TESTS), *modules], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
