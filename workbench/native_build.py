"""Where the native engine's binary is (`native/`, built by ./dev setup), and the one line
that says how to build it when it is missing. No engine import: spec checks use it."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from workbench.errors import SpecError

BINARY = "workbench-native"
BUILD_HINT = "the native engine is not built: run ./dev setup (it builds native/ with cargo)"


def binary_path() -> Path | None:
    """The native worker binary: $WORKBENCH_NATIVE, next to this Python, or on PATH."""
    given = os.environ.get("WORKBENCH_NATIVE")
    if given:
        return Path(given) if Path(given).is_file() else None
    beside = Path(sys.executable).parent / BINARY
    if beside.is_file():
        return beside
    found = shutil.which(BINARY)
    return Path(found) if found else None


def require_binary(where: str = "strategy.name") -> Path:
    path = binary_path()
    if path is None:
        raise SpecError(BUILD_HINT, where)
    return path
