"""Real worker processes against the embedded cache: the counts add up."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest
from support import collect, finished

from workbench.cli.format import step_summary
from workbench.engine import worker_loss
from workbench.report import render
from workbench.results.events import Event, Interval, Notice, RunFinished, StepStarted
from workbench.results.live import RunView
from workbench.results.metrics import merged
from workbench.results.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.sqlite3")


@pytest.mark.parametrize("strategy", ["direct", "threads"])
async def test_an_op_budget_is_issued_exactly_and_every_get_is_a_hit_or_a_miss(
    store: Store, strategy: str
) -> None:
    events = await collect(
        [
            f"strategy.name={strategy}",
            "load.ops=20000",
            "load.concurrency=8",
            "load.workers=2",
            "workload.mix={get=3, set=1, delete=1}",
            "workload.keys=500",
        ],
        store,
    )
    (step,) = finished(events)
    s = step.stats
    assert step.status == "completed"
    assert s.ops + s.error_count == 20_000
    gets = s.hist["get"].get_total_count()
    assert s.hits + s.misses == gets
    assert 0 < s.hits < gets
    assert set(s.hist) == {"get", "set", "delete"}
    assert events[-1] == RunFinished(events[0].run_id, "completed")  # type: ignore[attr-defined]


async def test_step_totals_are_the_merged_intervals_and_are_stored(store: Store) -> None:
    events = await collect(["load.duration=1", "load.workers=2"], store)
    intervals = [e for e in events if isinstance(e, Interval)]
    (step,) = finished(events)
    assert len(intervals) >= 4
    total = merged([i.stats for i in intervals], concurrent=False)
    assert total.ops == step.stats.ops > 0
    assert total.hits == step.stats.hits
    stored = store.load(events[0].run_id)  # type: ignore[attr-defined]
    assert stored.status == "completed"
    assert len(stored.steps[0].intervals) == len(intervals)
    assert stored.steps[0].stats.ops == step.stats.ops
    assert stored.environment["cpus"] == os.cpu_count()


async def test_a_sweep_runs_and_stores_one_step_per_value(store: Store) -> None:
    events = await collect(
        ["load.ops=2000", "load.concurrency=[1,4]", 'strategy.name=["direct","threads"]'], store
    )
    started = [e for e in events if isinstance(e, StepStarted)]
    assert [(e.clients, e.spec["strategy"]["name"]) for e in started] == [
        (1, "direct"),
        (1, "threads"),
        (4, "direct"),
        (4, "threads"),
    ]
    assert all(s.stats.ops == 2000 for s in finished(events))
    assert len(store.load("last").steps) == 4


async def test_a_stop_request_keeps_what_was_measured(store: Store) -> None:
    stop = asyncio.Event()

    def on_event(e: Event) -> None:
        if isinstance(e, Interval) and e.index >= 1:
            stop.set()

    events = await collect(["load.duration=60", "load.concurrency=4"], store, stop, on_event)
    assert isinstance(events[-1], RunFinished) and events[-1].status == "interrupted"
    (step,) = finished(events)
    assert step.status == "interrupted" and step.stats.ops > 0
    stored = store.load(events[0].run_id)  # type: ignore[attr-defined]
    assert stored.status == "interrupted"
    assert stored.steps[0].stats.ops == step.stats.ops
    assert len(stored.steps[0].intervals) >= 2


async def test_a_worker_that_dies_is_reported_lost_and_the_step_degraded(store: Store) -> None:
    killed: list[int] = []

    def on_event(e: Event) -> None:
        if isinstance(e, Interval) and not killed:
            pid = _worker_pids()[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    events = await collect(["load.duration=2", "load.workers=2"], store, on_event=on_event)
    notices = [e for e in events if isinstance(e, Notice)]
    (lost,) = [n for n in notices if f"pid {killed[0]}" in n.message]
    assert lost.message.startswith("worker lost: ") and "killed by SIGKILL" in lost.message
    assert "into the measured phase, after measuring" in lost.message
    (step,) = finished(events)
    assert step.status == "degraded" and step.stats.ops > 0
    stored = store.load("last")
    assert stored.notices and stored.status == "degraded"
    assert stored.steps[0].status == "degraded"
    # Every face takes the status: the live view, the summary, the reports.
    view = RunView()
    for e in stored.events():
        view = view.apply(e)
    assert view.status == "degraded" and view.steps[0].status == "degraded"
    assert step_summary(view.steps[0])[0].endswith("(degraded) ==")
    assert "workers were lost" in render(stored, "table")
    assert '"status": "degraded"' in render(stored, "json")


async def test_a_worker_that_hangs_is_ended_past_the_planned_end_and_counted_lost(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A worker stopped (SIGSTOP) after the first interval never says it is done: the step
    # kills it OVERRUN_GRACE s after its planned end instead of waiting for ever.
    monkeypatch.setattr(worker_loss, "OVERRUN_GRACE", 1.0)
    stopped: list[int] = []

    def on_event(e: Event) -> None:
        if isinstance(e, Interval) and not stopped:
            pid = _worker_pids()[0]
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)

    events = await collect(
        ["load.duration=1", "load.interval=0.25", "load.workers=2"], store, on_event=on_event
    )
    (lost,) = [n for n in events if isinstance(n, Notice) and f"pid {stopped[0]}" in n.message]
    assert lost.message.startswith("worker lost: ") and "killed by SIGKILL" in lost.message
    (step,) = finished(events)
    assert step.status == "degraded" and step.stats.ops > 0
    # Every interval of the planned duration was emitted, with the worker that stayed.
    assert [e.index for e in events if isinstance(e, Interval)] == [0, 1, 2, 3]
    assert stopped[0] not in _worker_pids()  # killed and reaped, not left behind


def _worker_pids() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if b"workbench.engine.worker" in cmd and ppid == os.getpid():
            pids.append(int(entry))
    return sorted(pids)


async def test_pubsub_delivers_every_message(store: Store) -> None:
    events = await collect(
        [
            "load.ops=3000",
            "load.concurrency=4",
            "workload.mix={publish=1}",
            "workload.pubsub={channels=3, subscribers_per_channel=2, message_size=5000}",
            "workload.value_size=100",  # the message size, not the value size, is published
        ],
        store,
    )
    (step,) = finished(events)
    s = step.stats
    assert s.published == 3000
    assert s.bytes_out == 3000 * 5000
    assert s.bytes_in == 6000 * 5000
    assert s.expected_deliveries == 6000
    assert s.delivered == 6000
    assert s.hist["deliver"].get_total_count() == 6000
    # Deliveries still on their way when the load stopped land in the last interval.
    assert sum(e.stats.delivered for e in events if isinstance(e, Interval)) == 6000


async def test_prefill_makes_every_first_get_a_hit(store: Store) -> None:
    events = await collect(
        ["load.ops=5000", "workload.mix={get=1}", "workload.keys=300", "workload.prefill=true"],
        store,
    )
    (step,) = finished(events)
    assert step.stats.hits == 5000 and step.stats.misses == 0


async def test_cache_aside_under_a_size_limit_misses_and_counts_hot_keys(store: Store) -> None:
    events = await collect(
        [
            "load.ops=20000",
            "workload.mix={cache_aside=1}",
            "workload.keys=2000",
            "workload.key_distribution=hotcold(0.8,0.2)",
            "target.options.max_entries=400",
            "load.workers=1",
        ],
        store,
    )
    (step,) = finished(events)
    s = step.stats
    assert s.hits + s.misses == 20_000
    assert s.hist["set"].get_total_count() == s.misses
    assert s.hot_gets == pytest.approx(16_000, rel=0.03)
    assert s.hot_hits / s.hot_gets > (s.hits - s.hot_hits) / (20_000 - s.hot_gets)


async def test_the_same_seed_gives_the_same_operations(store: Store) -> None:
    args = [
        "load.ops=3000",
        "load.concurrency=1",
        "load.workers=1",
        "workload.mix={get=1, set=1}",
        "workload.keys=100",
    ]
    a = finished(await collect(args, store))[0].stats
    b = finished(await collect(args, store))[0].stats
    c = finished(await collect([*args, "seed=2"], store))[0].stats
    assert (a.hits, a.misses, a.bytes_out) == (b.hits, b.misses, b.bytes_out)
    assert (a.hits, a.misses, a.bytes_out) != (c.hits, c.misses, c.bytes_out)


async def test_open_loop_issues_at_the_target_rate_at_most(store: Store) -> None:
    events = await collect(["load.duration=1", "load.rate=2000", "load.concurrency=4"], store)
    (step,) = finished(events)
    # Intended starts are 0.5 ms apart per client overall: never more than the schedule allows.
    assert 0 < step.stats.ops <= 2000 * (step.stats.duration + 0.1) + 4
