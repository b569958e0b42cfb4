"""The core names no system but the default: what it knows of one (its URLs, cache size,
server cores, figures, refusals, server recipe) it asks the plugin (`workbench.sdk.facts`),
so a stranger's system gets the same (issue 34). Counted here as the string literals in
workbench/ that are a built-in system's name."""

from __future__ import annotations

import ast
import tomllib
from collections import Counter
from pathlib import Path

from workbench.spec.model import DEFAULT_SYSTEM

ROOT = Path(__file__).resolve().parents[2]
MOST_DEFAULTS = 3


def builtin_systems() -> set[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(meta["entry-points"]["workbench.plugins"])


def system_names_in(path: Path, names: set[str]) -> list[str]:
    return [
        node.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and node.value in names
    ]


def test_the_core_names_no_system_but_the_default() -> None:
    names = builtin_systems()
    assert DEFAULT_SYSTEM in names and len(names) >= 5
    found = {
        str(p.relative_to(ROOT)): hits
        for p in sorted((ROOT / "workbench").rglob("*.py"))
        if (hits := system_names_in(p, names))
    }
    counts = Counter(name for hits in found.values() for name in hits)
    assert set(counts) <= {DEFAULT_SYSTEM}, f"systems named in workbench/: {found}"
    assert counts[DEFAULT_SYSTEM] <= MOST_DEFAULTS, found
