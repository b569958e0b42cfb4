"""Where the native engine's binary is (`native/`, built by ./dev setup or `pip install .`),
and the one line that says how to get it when it is missing or reads another version of the
step order. No engine import: spec checks use it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from workbench.sdk.errors import SpecError

BINARY = "workbench-native"
ENV = "WORKBENCH_NATIVE"
# Where `pip install .` puts the binary it built (setup.py): inside the package.
PACKAGED = Path(__file__).resolve().parents[1] / "bin" / BINARY
# The version of the compiled step order (`engine/native_order.py`) this workbench writes;
# `workbench-native --order-version` prints the one it reads. Bump both together.
ORDER_VERSION = 7
_checked: dict[tuple[str, int], str] = {}


def building_log() -> str:
    """While ./dev builds the engine behind a newly opened workbench: its log ("" if not)."""
    marker = Path(sys.executable).parent / f"{BINARY}.building"
    try:
        return marker.read_text().strip()
    except OSError:
        return ""


def build_hint() -> str:
    """How to get the engine, for a checkout (./dev) and for a pip user alike; while ./dev
    builds it, where to watch that build."""
    log = building_log()
    if log:
        return (
            f"the native engine is still being built by ./dev (progress: {log}); until it "
            "is installed, runs use Python clients (if that build stopped: ./dev setup)"
        )
    return (
        "the native engine is not installed: in a checkout run ./dev setup; with pip, put "
        "cargo on PATH and run `pip install --force-reinstall --no-deps .` in the source "
        f"folder, or build it (cargo build --release in native/) and set {ENV}=PATH/{BINARY}"
    )


def missing_reason() -> str:
    """Why `binary_path` found nothing, in one line: a bad $WORKBENCH_NATIVE names its path."""
    given = os.environ.get(ENV)
    if given and not Path(given).is_file():
        return (
            f"{ENV} names {given}, which is not a file: point it at a built {BINARY}, or "
            "unset it and run ./dev setup (with pip: `pip install .` with cargo on PATH)"
        )
    return build_hint()


def binary_path() -> Path | None:
    """The native worker binary: $WORKBENCH_NATIVE, next to this Python, inside the package
    (pip), or on PATH."""
    given = os.environ.get(ENV)
    if given:
        return Path(given) if Path(given).is_file() else None
    beside = Path(sys.executable).parent / BINARY
    if beside.is_file():
        return beside
    if PACKAGED.is_file():
        return PACKAGED
    found = shutil.which(BINARY)
    return Path(found) if found else None


def version_mismatch(path: Path) -> str:
    """One line when `path` reads another version of the step order; "" when it fits."""
    reads = order_version(path)
    if reads == str(ORDER_VERSION):
        return ""
    return (
        f"the native engine {path} reads step orders of version {reads or 'unknown'}; "
        f"this workbench writes version {ORDER_VERSION}: rebuild it with ./dev setup "
        "(or pip install . again)"
    )


def require_binary(where: str = "strategy.name") -> Path:
    """The binary, or one SpecError line: not installed, or built for another step order."""
    path = binary_path()
    if path is None:
        raise SpecError(missing_reason(), where)
    mismatch = version_mismatch(path)
    if mismatch:
        raise SpecError(mismatch, where)
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
