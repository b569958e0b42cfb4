"""The headless CLI as a person uses it: real subprocesses, real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.results.store import Store

WORKBENCH = [sys.executable, "-m", "workbench.cli.main"]


def run(args: list[str], store: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    return subprocess.run(
        [*WORKBENCH, *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite3"


def test_default_run_prints_live_lines_and_the_document_ticks(store: Path) -> None:
    res = run(["run", "--set", "load.duration=2", "--set", "load.warmup=0.2"], store)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    live = [ln for ln in lines if ln.startswith("[") and "ops/s" in ln]
    assert len(live) >= 2
    assert all(w in live[0] for w in ("MiB/s", "p50", "p99", "hits", "misses", "errors"))
    for tick in (
        "50%",
        "75%",
        "87.5%",
        "93.75%",
        "96.875%",
        "98.438%",
        "99.219%",
        "99.9%",
        "99.99%",
        "max",
    ):
        assert any(ln.strip().startswith(tick) for ln in lines), tick
    assert "completed" in lines[-1]


def test_the_summary_has_a_per_op_table_and_a_verdict_wrapped_at_words(store: Path) -> None:
    """memtier's Gets / Sets / Totals, under the ladder (or alone: --hide-histogram)."""
    out = store.parent / "run.json"
    res = run(["run", "--test-time", "1", "--set", "load.warmup=0", "--hide-histogram",
               "--json-out-file", str(out)], store)  # fmt: skip
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "Response times percentiles:" not in res.stdout
    head = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["ops/s", "hits/s"])
    assert lines[head].split() == ["ops/s", "hits/s", "misses/s", "avg", "p50", "p99", "p99.9",
                                   "MiB/s"]  # fmt: skip
    gets, sets, totals = (lines[head + i].split() for i in (1, 2, 3))
    assert (gets[0], sets[0], totals[0]) == ("Gets", "Sets", "Totals")
    assert sets[2:4] == ["-", "-"]  # a set is neither a hit nor a miss
    as_int = lambda s: int(s.replace(",", ""))  # noqa: E731
    assert abs(as_int(gets[1]) + as_int(sets[1]) - as_int(totals[1])) <= 2
    verdict = [ln for ln in lines if ln.startswith("verdict: ")]
    start = lines.index(verdict[0])
    wrapped = [verdict[0], *(ln for ln in lines[start + 1 :] if ln.startswith("  "))]
    assert len(wrapped) > 1 and all(len(ln) <= 100 for ln in wrapped)
    assert out.is_file()


def test_runs_list_and_show_read_back_a_run(store: Path) -> None:
    assert (
        run(
            ["run", "-q", "--set", "load.ops=1000", "--set", "load.warmup=0", "--name", "mine"],
            store,
        ).returncode
        == 0
    )
    listing = run(["runs", "list"], store)
    header, row = listing.stdout.splitlines()[:2]
    assert header.split()[:9] == [
        "id",
        "name",
        "when",
        "status",
        "system",
        "strategy",
        "clients",
        "steps",
        "best",
    ]
    assert "mine" in row and " embedded " in row and " direct " in row
    shown = run(["runs", "show", "mine"], store)
    assert shown.returncode == 0 and "1,000 ops" in shown.stdout
    # `--store` before the command is the same store (WORKBENCH_STORE points elsewhere).
    before = run(["--store", str(store), "runs", "show", "mine"], store.with_name("other"))
    assert before.returncode == 0 and "1,000 ops" in before.stdout, before.stderr


def test_a_bad_profile_is_one_line_naming_file_and_field(store: Path, tmp_path: Path) -> None:
    profile = tmp_path / "x.toml"
    profile.write_text('[workload]\nkey_distribution = "zipfian"\n')
    res = run(["run", str(profile)], store)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"error: {profile}: workload.key_distribution: expected one of uniform, zipf, gaussian, "
        "sequential, hotcold (e.g. zipf(0.99) or hotcold(0.8,0.2)); got 'zipfian'"
    ]
    assert "Traceback" not in res.stderr
    assert not store.exists() or not Store(store).list_runs()


def test_unknown_run_is_one_line(store: Path) -> None:
    res = run(["runs", "show", "nope"], store)
    # No store yet: a read creates none, and says there are no runs (issue 25 item 12).
    assert res.returncode == 1 and res.stderr.count("\n") == 1
    assert "no runs stored yet" in res.stderr
    run(["run", "--set", "load.duration=0.1", "--set", "load.warmup=0"], store)
    res = run(["runs", "show", "nope"], store)
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "no run 'nope'" in res.stderr


def test_ctrl_c_stops_cleanly_and_keeps_the_measured_part(store: Path) -> None:
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    proc = subprocess.Popen(
        [
            *WORKBENCH,
            "run",
            "--set",
            "load.duration=120",
            "--set",
            "load.warmup=0",
            "--set",
            "load.interval=0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    seen = 0
    for line in proc.stdout:  # bounded: the run lasts at most 120 s
        if "ops/s" in line and line.startswith("["):
            seen += 1
            if seen == 3:
                proc.send_signal(signal.SIGINT)
                break
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "stopping" in rest and "interrupted" in rest
    stored = Store(store).load("last")
    assert stored.status == "interrupted"
    assert stored.steps[0].stats.ops > 0 and len(stored.steps[0].intervals) >= 3


def test_plugins_lists_the_embedded_cache(store: Path) -> None:
    res = run(["plugins"], store)
    assert res.returncode == 0
    assert "embedded: In-process LRU cache" in res.stdout
    assert "strategy direct (default)" in res.stdout


def test_no_worker_outlives_the_cli(store: Path) -> None:
    run(["run", "-q", "--set", "load.ops=500", "--set", "load.warmup=0"], store)
    time.sleep(0.2)
    out = subprocess.run(
        ["pgrep", "-f", f"workbench.engine.worker.*{os.getpid()}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.stdout == ""
