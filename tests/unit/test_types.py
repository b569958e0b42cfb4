"""mypy, strict, over the SDK and the core packages that pass it (issue 34 item 6): which
packages and how strict is `[tool.mypy]` in pyproject.toml, read by mypy itself."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed (it is in the dev extras: ./dev setup installs it)",
)
def test_the_sdk_and_the_core_pass_mypy_strict(tmp_path_factory: pytest.TempPathFactory) -> None:
    # A cache of its own per session: a first run takes ~30 s of CPU, later ones seconds.
    cache = ROOT / ".mypy_cache"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "--no-error-summary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
