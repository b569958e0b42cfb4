"""Helpers for the plugin tests (a module of its own: `conftest` names are not unique)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

CLI = [sys.executable, "-m", "workbench.cli.main"]


def pip(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """pip of the interpreter running the tests."""
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def show(done: subprocess.CompletedProcess[str], argv: Sequence[str] = ()) -> str:
    return f"{' '.join(argv)} -> {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
