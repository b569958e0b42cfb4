"""Where the native engine's binary is (`native/`, built by ./dev setup), and the one line
that says how to build it when it is missing or reads another version of the step order.
No engine import: spec checks use it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from workbench.errors import SpecError

BINARY = "workbench-native"
BUILD_HINT = "the native engine is not built: run ./dev setup (it builds native/ with cargo)"
# The version of the compiled step order (`engine/native_order.py`) this workbench writes;
# `workbench-native --order-version` prints the one it reads. Bump both together.
ORDER_VERSION = 2
_checked: dict[tuple[str, int], str] = {}


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
    """The binary, or one SpecError line: not built, or built for another step order."""
    path = binary_path()
    if path is None:
        raise SpecError(BUILD_HINT, where)
    reads = order_version(path)
    if reads != str(ORDER_VERSION):
        raise SpecError(
            f"the native engine {path} reads step orders of version {reads or 'unknown'}; "
            f"this workbench writes version {ORDER_VERSION}: rebuild it with ./dev setup",
            where,
        )
    return path


def order_version(path: Path) -> str:
    """What `path --order-version` prints ("" if it cannot say), once per build of it."""
    key = (str(path), path.stat().st_mtime_ns)
    if key not in _checked:
        try:
            done = subprocess.run(
                [str(path), "--order-version"], capture_output=True, text=True, timeout=10
            )
            _checked[key] = done.stdout.strip() if done.returncode == 0 else ""
        except OSError:
            _checked[key] = ""
    return _checked[key]
