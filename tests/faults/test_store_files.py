"""Issue 39 item 10: runs opening a new store together, a profile that is a named pipe, and
another program's SQLite file given as the store."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from faults_support import cli, kill_if_alive

from workbench.results.store import SCHEMA

# Each process says it is ready, then opens the store: a first open makes the tables and
# adds the later columns, which processes opening it at once each raced to add.
OPEN_STORE = (
    "import sys; from workbench.results.store import Store; "
    "print('ready', flush=True); Store(sys.argv[1]).close()"
)


def _old_store(path: Path) -> sqlite3.Connection:
    """A store as the first release made it (no later columns), in WAL mode as stores are."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(SCHEMA)
    return db


def test_processes_upgrading_a_store_together_all_open_it(tmp_path: Path) -> None:
    """Deterministic form of three runs starting together on a new store: the store is
    held locked while the processes open it, so each finds the columns missing at once."""
    store = tmp_path / "runs.sqlite"
    holder = _old_store(store)
    holder.execute("BEGIN IMMEDIATE")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN_STORE, str(store)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline() == "ready\n"
        time.sleep(0.5)  # each is now at the lock (SQLite's busy wait is 5 s)
        holder.execute("COMMIT")
        errors = [p.communicate(timeout=60)[1] for p in procs]
    finally:
        for p in procs:
            kill_if_alive(p.pid)
    assert [p.returncode for p in procs] == [0] * 3, errors
    assert cli(["runs", "list"], store).returncode == 0


def test_a_named_pipe_nobody_writes_is_refused_not_waited_on(tmp_path: Path) -> None:
    pipe = tmp_path / "profile.toml"
    os.mkfifo(pipe)
    done = cli(["run", str(pipe)], tmp_path / "s.sqlite", timeout=60)
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.strip()
        == f"error: {pipe}: a pipe with nothing written to it; expected a TOML profile"
    )


def test_another_programs_sqlite_file_is_not_made_a_store(tmp_path: Path) -> None:
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE people (name TEXT)")
    before = foreign.read_bytes()
    done = cli(["run", "-q", "--test-time", "0.1"], foreign)
    assert done.returncode == 1, done.stderr
    assert "not a results store" in done.stderr and "people" in done.stderr
    assert foreign.read_bytes() == before
    assert not (tmp_path / "app.db-wal").exists()
