"""Issue 25 item 9: a managed redis-server's temporary directory goes with the server, and so
does its log, unless the server ended on its own (then the log says why)."""

from __future__ import annotations

import os
import signal
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
    assert list((tmp / "workbench-servers").iterdir()) == []  # the log went with the server


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


def test_a_server_that_died_keeps_its_log(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    stopped, died = start_redis(), start_redis()
    logs = {s.pid: s.log_path for s in (stopped, died)}
    assert all(p is not None and p.parent == tmp_path / "workbench-servers" for p in logs.values())
    os.kill(died.pid, signal.SIGKILL)
    died.process.wait()
    stopped.stop()
    died.stop()
    assert not logs[stopped.pid].exists()  # type: ignore[union-attr]
    assert logs[died.pid].exists()  # type: ignore[union-attr]
