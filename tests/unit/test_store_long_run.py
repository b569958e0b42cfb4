"""An hour-long run in the store: appended one row per interval, and read back (a view,
`runs show`, the reports) with the same work as a one-minute run.

Nothing here is timed: the proof is in counts (histograms decoded, SQL statements run),
which must not grow with the number of intervals.
"""

from __future__ import annotations

import _sqlite3
import ctypes
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli.main import app
from workbench.report import MARKDOWN, render
from workbench.results import metrics
from workbench.results.events import Interval, RunFinished, RunStarted, StepFinished, StepStarted
from workbench.results.metrics import Stats, fold, new_histogram
from workbench.results.store import CACHE_KIB, Store
from workbench.results.timeline import MAX_POINTS
from workbench.spec.model import Spec, spec_to_dict

HOUR = 3600  # one-second intervals
MINUTE = 60


def one_second() -> Stats:
    get, put = new_histogram(), new_histogram()
    fold(get, [40_000 + 37 * i for i in range(3000)])
    fold(put, [55_000 + 91 * i for i in range(300)])
    return Stats(
        duration=1.0,
        hist={"get": get, "set": put},
        hits=2400,
        misses=600,
        bytes_in=300_000,
        bytes_out=30_000,
        cpu={"0": 0.2, "1": 0.21},
        server={"cpu_seconds": 0.3, "host_busy": 0.5, "used_memory": 1_000_000},
    )


def record_long_run(store: Store, intervals: int) -> str:
    """A finished one-step run of `intervals` one-second intervals, recorded as the
    session records one: the first interval through `Store.record`, the others as the
    same row again (inserted by SQL, so that building the store stays quick)."""
    run_id = f"soak-{intervals}"
    spec = spec_to_dict(Spec(name="soak"))
    plan = [{"index": 0, "label": {}, "title": "run"}]
    store.record(RunStarted(run_id, "soak", spec, plan, {"host": "h"}, 1000.0))
    store.record(
        StepStarted(run_id, 0, "run", {}, spec, 2, 16, {}, system="embedded", strategy="direct")
    )
    stats = one_second()
    store.record(Interval(run_id, 0, 0, 1.0, stats))
    store.db.execute(
        "WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < ?) "
        "INSERT INTO intervals (run_id, step, idx, elapsed, stats, point) "
        "SELECT run_id, step, k, elapsed + k, stats, point FROM intervals, n "
        "WHERE run_id = ? AND idx = 0",
        (intervals - 1, run_id),
    )
    total = Stats.from_dict(stats.to_dict())
    total.duration = float(intervals)
    store.record(StepFinished(run_id, 0, "completed", total))
    store.record(RunFinished(run_id, "completed"))
    return run_id


class Counts:
    def __init__(self) -> None:
        self.decodes = 0
        self.statements: list[str] = []


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counts]:
    seen = Counts()
    real = metrics.decode

    def counting(text: str | bytes) -> object:
        seen.decodes += 1
        return real(text)

    monkeypatch.setattr(metrics, "decode", counting)
    yield seen


def work(store: Store, counts: Counts, action: object) -> tuple[int, int]:
    """(histograms decoded, SQL statements run) while `action()` runs."""
    counts.decodes, counts.statements = 0, []
    store.db.set_trace_callback(counts.statements.append)
    try:
        action()  # type: ignore[operator]
    finally:
        store.db.set_trace_callback(None)
    return counts.decodes, len(counts.statements)


def test_an_hour_of_intervals_is_viewed_with_the_work_of_a_minute(
    tmp_path: Path, counts: Counts
) -> None:
    store = Store(tmp_path / "runs.sqlite3")
    minute, hour = record_long_run(store, MINUTE), record_long_run(store, HOUR)
    assert len(store.load(hour).steps[0].intervals) == HOUR
    views = {}

    def view(ref: str) -> None:
        views[ref] = store.load(ref).view()

    assert work(store, counts, lambda: view(minute)) == work(store, counts, lambda: view(hour))
    decodes, _ = work(store, counts, lambda: view(hour))
    assert decodes <= 6  # the step's totals and its last interval, per op kind
    step = views[hour].steps[0]
    assert step.timeline.intervals == HOUR  # every interval is on the chart...
    assert len(step.points) <= MAX_POINTS  # ...downsampled
    assert step.points[-1].elapsed == HOUR
    assert step.summary is not None and step.summary.ops == step.totals.ops
    assert step.usage.worker_span == pytest.approx(HOUR)  # the verdict saw every interval


@pytest.mark.parametrize("fmt", MARKDOWN)
def test_reports_of_an_hour_long_run_do_the_work_of_a_minute(
    tmp_path: Path, counts: Counts, fmt: str
) -> None:
    store = Store(tmp_path / "runs.sqlite3")
    minute, hour = record_long_run(store, MINUTE), record_long_run(store, HOUR)
    texts = {}

    def report(ref: str) -> None:
        texts[ref] = render(store.load(ref), fmt)

    assert work(store, counts, lambda: report(minute)) == work(store, counts, lambda: report(hour))
    assert texts[hour].strip()


def test_runs_show_of_an_hour_long_run_does_the_work_of_a_minute(
    tmp_path: Path, counts: Counts, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.sqlite3"
    store = Store(path)
    record_long_run(store, MINUTE)
    record_long_run(store, HOUR)
    store.close()
    runner = CliRunner()
    seen = []
    for ref in (f"soak-{MINUTE}", f"soak-{HOUR}"):
        counts.decodes = 0
        result = runner.invoke(app, ["runs", "show", ref, "--store", str(path)])
        assert result.exit_code == 0, result.output
        seen.append(counts.decodes)
    assert seen[0] == seen[1] <= 6


def test_a_long_run_is_appended_to_never_rewritten(tmp_path: Path, counts: Counts) -> None:
    store = Store(tmp_path / "runs.sqlite3")
    run_id = record_long_run(store, HOUR)
    store.db.execute("UPDATE steps SET status='running', stats=NULL WHERE run_id=?", (run_id,))
    store.db.execute("UPDATE runs SET status='running' WHERE id=?", (run_id,))
    more = Interval(run_id, 0, HOUR, HOUR + 1.0, one_second())
    _, statements = work(store, counts, lambda: store.record(more))
    assert statements == 1  # one row added
    assert [s.split()[0:4] for s in counts.statements] == [["INSERT", "OR", "REPLACE", "INTO"]]
    # Ending the run writes the step's and the run's rows, never an interval's.
    work(store, counts, lambda: store.record(RunFinished(run_id, "interrupted")))
    writes = [s for s in counts.statements if not s.lstrip().upper().startswith("SELECT")]
    assert writes and not any("intervals" in s for s in writes)
    assert store.load(run_id).steps[0].stats.ops == (HOUR + 1) * one_second().ops


def _sqlite_memory() -> int:
    """Bytes SQLite holds in this process (its own counter, in the library Python uses)."""
    lib = ctypes.CDLL(_sqlite3.__file__)  # its symbols, or those of the libsqlite3 it links
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return int(lib.sqlite3_memory_used())


def test_the_page_cache_is_full_within_the_first_intervals(tmp_path: Path) -> None:
    """The writing connection's page cache is at its bound after a few dozen intervals, not
    filling for the first minutes of a long run (512 KiB took ~500 intervals: +430 KiB)."""
    store = Store(tmp_path / "runs.sqlite3")
    assert store.db.execute("PRAGMA cache_size").fetchone()[0] == -CACHE_KIB
    record_long_run(store, 40)
    early = _sqlite_memory()
    assert early > 0
    record_long_run(store, 1000)
    grown = _sqlite_memory() - early
    store.close()
    assert grown < 32 * 1024, f"SQLite's memory grew {grown // 1024} KiB after the first intervals"
