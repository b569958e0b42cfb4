"""Issue 39 item 2: an output path never destroys what it names. `--json-out` given the
store wrote JSON over it (every run lost: "database disk image is malformed"); a symlink
or a device given as `-o` was replaced by a regular file (outputs were renamed over the
target); `mrc -o` and `trace convert -o` created missing folders."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest
from faults_support import cli

from workbench.results.store import Store

SHORT = ["run", "--set", "load.duration=0.2", "--set", "load.warmup=0",
         "--set", "load.interval=0.1"]  # fmt: skip
SYNTH = ["trace", "synth", "--requests", "200", "--objects", "20", "--format", "csv"]


def _commands(store: Path, trace: Path) -> dict[str, list[str]]:
    """Every command that writes a file a person names, pointed at the store."""
    return {
        "run --json-out": [*SHORT, "--json-out", str(store)],
        "run --report": [*SHORT, "--report", f"csv:{store}-wal"],
        "run --trace-out": [*SHORT, "--trace-out", str(store)],
        "report -o": ["report", "last", "-o", str(store)],
        "mrc -o": ["mrc", "quick", "--sizes", "1MiB", "-o", str(store)],
        "trace convert -o": ["trace", "convert", str(trace), "--to", "csv", "-o", str(store)],
        "trace synth -o": [*SYNTH, "-o", str(store)],
    }


@pytest.mark.parametrize("command", list(_commands(Path(), Path())))
def test_an_output_that_is_the_store_is_refused_and_the_store_kept(
    tmp_path: Path, command: str
) -> None:
    store = tmp_path / "runs.sqlite"
    Store(store).close()
    trace = tmp_path / "t.csv"
    trace.write_text("time,key,size\n0,a,10\n")
    res = cli(_commands(store, trace)[command], store)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "SQLite database" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    db = sqlite3.connect(store)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_a_store_not_created_yet_is_no_output_either(tmp_path: Path) -> None:
    store = tmp_path / "new.sqlite"
    res = cli([*SHORT, "--store", str(store), "--json-out", str(store)], tmp_path / "other")
    assert res.returncode == 2, res.stdout + res.stderr
    assert not store.exists()


def test_a_symlink_output_stays_a_symlink_and_its_target_gets_the_text(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    links = {name: tmp_path / f"{name}.link" for name in ("json", "trace")}
    for name, link in links.items():
        link.symlink_to(tmp_path / "real" / name)
    res = cli(
        [*SHORT, "--json-out", str(links["json"]), "--trace-out", str(links["trace"])],
        tmp_path / "runs.sqlite",
    )
    assert res.returncode == 0, res.stdout + res.stderr
    for name, link in links.items():
        assert link.is_symlink(), f"{name}: the link was replaced"
        assert (tmp_path / "real" / name).stat().st_size > 0
    assert (tmp_path / "real" / "json").read_text().startswith("{")


def test_a_pipe_output_is_written_through_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    # Held open for reading and writing, so the command's open never blocks and the pipe
    # never sees its end; the trace (a few KiB) fits in the pipe's buffer.
    reader = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        res = cli([*SYNTH, "-o", str(fifo)], tmp_path / "runs.sqlite")
        got = os.read(reader, 1 << 16)
    finally:
        os.close(reader)
    assert res.returncode == 0, res.stdout + res.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the pipe was replaced by a file"
    assert got.startswith(b"time,key,size") and got.count(b"\n") == 201
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"], "no scratch left"


@pytest.mark.parametrize(
    "args",
    [
        ["mrc", "quick", "--sizes", "1MiB", "-o", "{out}.svg"],
        ["trace", "convert", "{src}", "-o", "{out}.csv"],
        [*SYNTH, "-o", "{out}.csv"],
        [*SHORT, "--trace-out", "{out}.oracleGeneral"],
    ],
    ids=["mrc", "convert", "synth", "run-trace-out"],
)
def test_no_missing_folder_is_created(tmp_path: Path, args: list[str]) -> None:
    src = tmp_path / "t.csv"
    src.write_text("time,key,size\n0,a,10\n")
    out = tmp_path / "no" / "such" / "out"
    res = cli([a.format(out=out, src=src) for a in args], tmp_path / "runs.sqlite")
    assert res.returncode == 2, res.stdout + res.stderr
    assert "none is created" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "no").exists()
