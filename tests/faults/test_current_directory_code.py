"""Issue 39 item 3: no child process runs code from the current directory. `python -m`
puts the current directory first on sys.path, so a `zstandard.py` lying there ran inside
both worker processes of `workbench run`, and a `uvloop.py` inside `workbench serve
kv-store`. Every child is started so that the current directory is not importable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from faults_support import wait_for_line

WORKBENCH = str(Path(sys.executable).parent / "workbench")
# A module that says where it ran, then stands in for the real one no further.
PLANTED = (
    "import os\n"
    "open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "
    "f'ran-{__name__}-{os.getpid()}'), 'w').close()\n"
    "raise ImportError('a planted module')\n"
)


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Path:
    for name in ("zstandard", "uvloop", "hdrh", "redis", "pymemcache"):
        (tmp_path / f"{name}.py").write_text(PLANTED)
    return tmp_path


def _ran(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("ran-"))


def test_workers_of_a_run_import_nothing_from_the_current_directory(hostile_dir: Path) -> None:
    res = subprocess.run(
        [WORKBENCH, "run", "--test-time", "0.3", "-w", "2", "--set", "load.warmup=0",
         "--set", "load.interval=0.1", "--store", str(hostile_dir / "runs.sqlite")],
        cwd=hostile_dir, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert _ran(hostile_dir) == [], res.stdout + res.stderr
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_served_reference_server_imports_nothing_from_the_current_directory(
    hostile_dir: Path,
) -> None:
    proc = subprocess.Popen(
        [WORKBENCH, "serve", "kv-store", "--set", "loop=uvloop"],
        cwd=hostile_dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        wait_for_line(proc, "listening", timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=30)
    assert _ran(hostile_dir) == []
