"""docs/architecture.md stays true: every module, attribute and path it names exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
DOTTED = re.compile(r"`((?:workbench|workbench_[a-z]+)(?:\.[A-Za-z_]+)*)`")
PATH = re.compile(r"`((?:workbench|plugins|tests|docs|profiles|native)/[\w./-]*)`")


def exists(dotted: str) -> bool:
    """A module, or an attribute of the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            node = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(node, name):
                return False
            node = getattr(node, name)
        return True
    return False


def test_every_module_named_in_the_architecture_page_exists() -> None:
    names = set(DOTTED.findall(DOC.read_text()))
    assert len(names) > 20  # the page names the modules a newcomer looks for
    missing = sorted(n for n in names if not exists(n))
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_path_named_in_the_architecture_page_exists() -> None:
    paths = set(PATH.findall(DOC.read_text()))
    paths = {p.replace("NAME.py", "__init__.py") for p in paths}  # the format template
    assert len(paths) > 10
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
