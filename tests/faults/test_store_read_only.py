"""Issue 25 item 12: reads open the store read-only and need no write access; a read
never creates a store; a write to a read-only store says "read-only".

On a read-only location even `runs list` failed, never saying why; `runs show last` with
no store created one. The location is made read-only for the command alone: as root (who
may write anywhere) a read-only bind mount in a mount namespace of its own, which ends
with the command; otherwise a folder and file without write permission."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from faults_support import WORKBENCH, cli

# Run "$@" with the folder "$0" read-only, in a private mount namespace (nothing to undo).
READ_ONLY_MOUNT = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'


def _as_reader(args: list[str], store: Path) -> subprocess.CompletedProcess[str]:
    """A command that may read the store's folder but not write to it."""
    folder = str(store.parent)
    prefix = ["unshare", "-m", "sh", "-c", READ_ONLY_MOUNT, folder] if os.geteuid() == 0 else []
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    return subprocess.run(
        [*prefix, *WORKBENCH, *args], capture_output=True, text=True, env=env, timeout=120,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture
def read_only_store(tmp_path: Path) -> Iterator[Path]:
    """A store holding one run, in a folder the reader cannot write to."""
    folder = tmp_path / "ro"
    folder.mkdir()
    store = folder / "runs.sqlite"
    made = cli(["run", "--set", "load.duration=0.2", "--set", "load.warmup=0",
                "--set", "load.interval=0.1", "--name", "kept"], store)  # fmt: skip
    assert made.returncode == 0, made.stderr
    if os.geteuid() != 0:
        store.chmod(0o444)
        folder.chmod(0o555)
    try:
        yield store
    finally:
        folder.chmod(0o755)
        store.chmod(0o644)


@pytest.mark.parametrize(
    ("args", "shows"),
    [(["runs", "list"], "kept"), (["runs", "show", "last"], "'kept'"),
     (["report", "last"], "kept"), (["runs", "list", "--json"], '"kept"')],
)  # fmt: skip
def test_reads_need_no_write_access(read_only_store: Path, args: list[str], shows: str) -> None:
    before = sorted(p.name for p in read_only_store.parent.iterdir())
    res = _as_reader(args, read_only_store)
    assert res.returncode == 0, res.stdout + res.stderr
    assert shows in res.stdout
    assert sorted(p.name for p in read_only_store.parent.iterdir()) == before


@pytest.mark.parametrize(
    "args", [["run", "--set", "load.duration=0.2"], ["runs", "delete", "last", "--yes"],
             ["runs", "rename", "last", "other"]],
)  # fmt: skip
def test_a_write_to_a_read_only_store_says_read_only(
    read_only_store: Path, args: list[str]
) -> None:
    res = _as_reader(args, read_only_store)
    assert res.returncode == 1, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "read-only" in lines[0], res.stderr
    assert str(read_only_store) in lines[0]


@pytest.mark.parametrize(
    "args",
    [["runs", "show", "last"], ["report", "last"], ["check", "last", "--fail-on", "errors>0"]],
)
def test_a_read_with_no_store_creates_none(tmp_path: Path, args: list[str]) -> None:
    store = tmp_path / "not" / "yet" / "runs.sqlite"
    res = cli(args, store)
    assert res.returncode != 0, res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "no runs stored yet" in lines[0], res.stderr
    assert not (tmp_path / "not").exists()


def test_listing_with_no_store_says_no_runs_and_creates_none(tmp_path: Path) -> None:
    store = tmp_path / "not" / "yet" / "runs.sqlite"
    res = cli(["runs", "list"], store)
    assert res.returncode == 0, res.stderr
    assert "no runs stored yet" in res.stdout
    assert not (tmp_path / "not").exists()
