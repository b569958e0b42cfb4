"""Issue 25 item 9: a managed redis-server's temporary directory goes with the server."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from faults_support import cli
from workbench_redis.server import start_redis


def _scratch_dirs(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("workbench-redis-*"))


def test_a_managed_run_leaves_no_redis_directory(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))  # the CLI subprocess makes its temp dirs here
    res = cli(
        ["run", "--set", "target.system=redis", "--set", "target.managed=true",
         "--set", "load.duration=0.5", "--set", "load.warmup=0", "--set", "load.interval=0.25",
         "--set", "load.concurrency=2", "--set", "load.workers=1"],
        tmp_path / "runs.sqlite",
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert "completed" in res.stdout
    assert _scratch_dirs(tmp) == []


def test_stopping_a_redis_server_removes_its_directory(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # read once, then cached
    server = start_redis()
    try:
        (made,) = _scratch_dirs(tmp_path)
        assert made.is_dir()
        assert os.path.realpath(f"/proc/{server.pid}/cwd") == str(made.resolve())
    finally:
        server.stop()
    assert _scratch_dirs(tmp_path) == []
