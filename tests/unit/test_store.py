"""The store keeps every event and gives a run back as the same events."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.results.events import (
    Interval,
    Notice,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)
from workbench.results.metrics import Stats, fold, merged, new_histogram
from workbench.results.store import Store
from workbench.sdk.errors import StoreError


def interval_stats(n: int) -> Stats:
    h = new_histogram()
    fold(h, [1000 + i for i in range(n)])
    return Stats(duration=1.0, hist={"get": h}, hits=n, misses=0, bytes_in=100 * n)


def record_run(store: Store, run_id: str, name: str, finish: bool = True) -> list[object]:
    events: list[object] = [
        RunStarted(
            run_id,
            name,
            {"target": {"system": "embedded"}, "strategy": {"name": ""}, "workload": {}},
            [{"index": 0, "label": {}, "title": "run"}],
            {"host": "h"},
            1000.0,
        ),
        StepStarted(run_id, 0, "run", {}, {"x": 1}, 2, 16, {"pid": 1}),
        Interval(run_id, 0, 0, 1.0, interval_stats(100)),
        Notice(run_id, 0, "warning", "something"),
        Interval(run_id, 0, 1, 2.0, interval_stats(200)),
    ]
    if finish:
        events += [
            StepFinished(
                run_id,
                0,
                "completed",
                merged([e.stats for e in events if isinstance(e, Interval)], concurrent=False),
            ),
            RunFinished(run_id, "completed"),
        ]
    for e in events:
        store.record(e)  # type: ignore[arg-type]
    return events


def test_a_run_reads_back_as_the_same_events(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    events = record_run(store, "r1", "first")
    back = list(store.load("r1").events())
    assert [type(e).__name__ for e in back] == [
        "RunStarted",
        "StepStarted",
        "Interval",
        "Interval",
        "Notice",
        "StepFinished",
        "RunFinished",
    ]
    assert back[0] == events[0] and back[1] == events[1]
    assert back[2].stats.to_dict() == events[2].stats.to_dict()  # type: ignore[attr-defined]
    assert back[5].stats.to_dict() == events[5].stats.to_dict()  # type: ignore[attr-defined]


def test_listing_rename_delete_and_references(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    record_run(store, "20260101-000000-aaaa", "one")
    record_run(store, "20260102-000000-bbbb", "two")
    rows = store.list_runs()
    assert {r.name for r in rows} == {"one", "two"}
    assert rows[0].steps == 1 and rows[0].ops_per_s == pytest.approx(150.0)
    assert store.resolve("two") == "20260102-000000-bbbb"
    assert store.resolve("20260101") == "20260101-000000-aaaa"
    store.rename("two", "renamed")
    assert store.load("renamed").name == "renamed"
    store.delete("renamed")
    with pytest.raises(StoreError, match="no run 'renamed'"):
        store.load("renamed")
    assert store.db.execute("SELECT COUNT(*) FROM intervals").fetchone()[0] == 2


def test_a_run_that_died_keeps_its_intervals(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    record_run(Store(path), "r2", "crashed", finish=False)
    run = Store(path).load("r2")  # a new connection, as after a crash
    assert run.status == "running"
    assert run.steps[0].stats.hist["get"].get_total_count() == 300


def test_store_location_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_STORE", str(tmp_path / "env.sqlite3"))
    assert Store().path == tmp_path / "env.sqlite3"


def test_unopenable_store_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot open the results store"):
        Store(tmp_path / "file" / "s.sqlite3")


def test_an_abandoned_step_is_closed_from_its_intervals(tmp_path: Path) -> None:
    """A second Ctrl-C ends the run with no StepFinished: the listing and the stored step
    still give what its complete intervals measured, not zero."""
    store = Store(tmp_path / "runs.sqlite3")
    record_run(store, "r1", "abandoned", finish=False)
    store.record(RunFinished("r1", "interrupted", "abandoned"))
    (row,) = store.list_runs()
    assert row.status == "interrupted"
    assert row.ops_per_s == pytest.approx(150.0)  # 300 ops over the 2 s of its intervals
    (step,) = store.load("r1").steps
    assert step.status == "interrupted" and step.stats.ops == 300


def test_a_listed_row_takes_every_figure_from_one_step(tmp_path: Path) -> None:
    """Issue 24 item 6: ops/s, p50, p99, hit rate and errors all come from the fastest
    step, never mixed across steps; a run that measured nothing shows none of them."""
    store = Store(tmp_path / "runs.sqlite3")
    spec = {"target": {"system": "embedded"}, "strategy": {"name": ""}, "workload": {}}
    steps = [{"index": i, "label": {}, "title": t} for i, t in enumerate(("slow", "fast"))]
    run = "20260101-000000-aaaa"
    store.record(RunStarted(run, "two steps", spec, steps, {"host": "h"}, 1000.0))
    # The slow step has the lower latencies, a perfect hit rate and no errors; the fast one
    # the higher latencies, misses and errors: a mixed row would show the slow step's.
    shapes = [("slow", 1, 100, 1000, 100, 0, 0), ("fast", 8, 400, 50_000, 50, 50, 7)]
    for index, (title, clients, ops, latency, hits, misses, errors) in enumerate(shapes):
        store.record(StepStarted(run, index, title, {}, {}, 1, clients, {}, strategy="direct"))
        h = new_histogram()
        fold(h, [latency] * ops)
        stats = Stats(
            duration=1.0, hist={"get": h}, hits=hits, misses=misses,
            errors={"timeout": errors} if errors else {},
        )  # fmt: skip
        store.record(Interval(run, index, 0, 1.0, stats))
        store.record(StepFinished(run, index, "completed", stats))
    store.record(RunFinished(run, "completed"))
    store.record(RunStarted("20260102-000000-bbbb", "failed", spec, steps[:1], {}, 2000.0))
    store.record(StepStarted("20260102-000000-bbbb", 0, "slow", {}, {}, 1, 4, {}))
    store.record(StepFinished("20260102-000000-bbbb", 0, "failed", Stats(duration=0.0)))
    store.record(RunFinished("20260102-000000-bbbb", "failed"))
    failed, both = store.list_runs()
    fast = store.load(run).steps[1].stats
    assert (both.step, both.step_strategy, both.clients) == ("fast", "direct", 8)
    assert both.ops_per_s == pytest.approx(400.0)
    assert both.p50_us == pytest.approx(fast.hist["get"].get_value_at_percentile(50) / 1000)
    assert both.p99_us == pytest.approx(fast.hist["get"].get_value_at_percentile(99) / 1000)
    assert both.p50_us > 40 and both.hit_rate == pytest.approx(0.5) and both.errors == 7
    assert failed.status == "failed" and failed.step == ""
    assert (failed.ops_per_s, failed.p50_us, failed.p99_us, failed.hit_rate) == (None,) * 4
