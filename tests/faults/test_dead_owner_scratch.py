"""Issue 39 item 9: what a workbench process leaves in the temporary folder goes when it
ends, and what a killed one left (SIGKILL, the OOM killer: no code of its own runs) goes at
the next start of any command, but never what a live process still uses.

A managed redis-server's directory was left for ever after `serve` or `run` was killed; a
`trace synth` killed mid-write left its scratch file beside the output."""

from __future__ import annotations

import os
import signal
import tempfile
import time
from pathlib import Path

import pytest
from faults_support import children, cli, kill_if_alive, start_cli, wait_for_line, wait_gone

from workbench.sdk.scratch import scratch_dir
from workbench.simulate import runner


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary folder of this test's own, for the CLI subprocesses and for this one."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))  # read once, then cached
    return folder


def _wait_for(found: object, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {timeout}s")


def test_a_killed_serves_redis_directory_is_swept_at_the_next_start(
    tmp: Path, tmp_path: Path
) -> None:
    live = scratch_dir("redis")  # this (live) process's: never swept
    serve = start_cli(["serve", "redis"], tmp_path / "runs.sqlite")
    try:
        wait_for_line(serve, "listening")
        servers = children(serve.pid)
        serve.kill()  # SIGKILL: the command removes nothing; its server dies with it
        serve.wait()
        assert all(wait_gone(pid) for pid in servers)
    finally:
        kill_if_alive(serve.pid)
    left = [p for p in tmp.glob("workbench-redis-*") if p != live]
    assert len(left) == 1, left  # what the killed command left, named for its owner
    res = cli(["runs", "list"], tmp_path / "runs.sqlite")  # any command
    assert res.returncode == 0, res.stderr
    assert sorted(tmp.glob("workbench-redis-*")) == [live]


def test_a_killed_synths_scratch_file_is_swept_by_the_next_write(tmp: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    scratch = f".{out.name}.wb*"
    synth = start_cli(
        ["trace", "synth", "-o", str(out), "--requests", "100000000"], tmp_path / "s.db"
    )
    try:
        _wait_for(lambda: list(tmp_path.glob(scratch)), "scratch file")
        os.kill(synth.pid, signal.SIGKILL)
        synth.wait()
    finally:
        kill_if_alive(synth.pid)
    assert list(tmp_path.glob(scratch)) and not out.exists()
    done = cli(["trace", "synth", "-o", str(out), "--requests", "10"], tmp_path / "s.db")
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob(scratch)) and len(out.read_text().splitlines()) >= 10


@pytest.mark.skipif(not runner.available(), reason="libcachesim is not installed")
def test_mrc_stopped_by_sigterm_removes_its_scratch_trace(tmp: Path, tmp_path: Path) -> None:
    profile = tmp_path / "big.toml"
    profile.write_text("[workload]\nkeys = 1000000\n[load]\nduration = 60\n")
    mrc = start_cli(["mrc", str(profile), "--sizes", "1MiB,10MiB", "-p", "lru"], tmp_path / "s")
    try:
        _wait_for(lambda: list(tmp.glob("workbench-mrc-*")), "workbench-mrc-* folder")
        mrc.send_signal(signal.SIGTERM)
        _, err = mrc.communicate(timeout=30)
    finally:
        kill_if_alive(mrc.pid)
    assert mrc.returncode == 130, err
    assert not list(tmp.glob("workbench-mrc-*"))


def test_every_scratch_folder_in_the_temporary_folder_names_its_owner() -> None:
    """A folder made another way could not be swept: only `scratch_dir` makes them (a
    build's work folder lives in its cache, beside the build's lock, not here)."""
    root = Path(__file__).resolve().parents[2]
    allowed = {root / "workbench/sdk/scratch.py", root / "workbench/sdk/builds.py"}
    made = [
        f"{path.relative_to(root)}"
        for folder in ("workbench", "plugins")
        for path in sorted((root / folder).rglob("*.py"))
        if path not in allowed
        and any(word in path.read_text() for word in ("mkdtemp(", "TemporaryDirectory("))
    ]
    assert made == [], made
