"""Fixtures for the plugin tests: the `workbench` command in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from plugin_helpers import CLI

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def workbench_cli(tmp_path: Path) -> Run:
    """Run `workbench ARGS` in a new process (so that new entry points are seen)."""

    def run(
        *args: str, timeout: float = 240, env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CLI, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd or tmp_path,
            env={**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite3"), **(env or {})},
            check=False,
        )

    return run
