"""Issue 39 item 9: a run refused after its simulation's scratch trace folder was made (over
the machine's open-file limit) removes that folder; it was left in the temporary folder."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest
from faults_support import WORKBENCH

from workbench.simulate import runner


def _few_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))


@pytest.mark.skipif(not runner.available(), reason="libcachesim is not installed")
def test_a_run_refused_at_the_limits_check_leaves_no_scratch_trace(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "WORKBENCH_STORE": str(tmp_path / "s.db")}
    args = ["run", "-q", "-s", "redis://127.0.0.1:6379", "-c", "5000", "--test-time", "0.2",
            "--set", 'simulate.policies=["lru"]']  # fmt: skip
    done = subprocess.run(
        [*WORKBENCH, *args], env=env, capture_output=True, text=True, timeout=120,
        preexec_fn=_few_files, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "open files" in done.stderr
    assert sorted(p.name for p in tmp.iterdir() if p.name.startswith("workbench-trace-")) == []
