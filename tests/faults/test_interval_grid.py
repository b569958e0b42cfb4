"""Issue 13 items 6 and 7: intervals on one grid, measured time is the run's duration."""

from __future__ import annotations

import asyncio
import signal
import threading
from pathlib import Path

import pytest
from support import collect, finished, stopped
from workbench_redis.server import start_redis

from workbench.results.events import Event, Interval
from workbench.results.store import Store


def _intervals(events: list[Event]) -> list[Interval]:
    return [e for e in events if isinstance(e, Interval)]


async def test_a_slow_open_loop_counts_its_ops_over_the_real_duration(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.sqlite")
    events = await collect(["load.rate=2", "load.duration=2", "load.interval=1"], store)
    (step,) = finished(events)
    # 16 clients, one op each every 8 s, spread 0.5 s apart: 4 intended starts in 2 s.
    assert step.stats.ops == 4
    assert step.stats.offered == 4
    assert step.stats.duration == pytest.approx(2.0, abs=1e-6)
    assert [i.elapsed for i in _intervals(events)] == pytest.approx([1.0, 2.0])


async def test_a_5s_run_stores_5s_measured_and_elapsed_only_grows(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.sqlite")
    events = await collect(["load.duration=5", "load.interval=1", "load.workers=2"], store)
    intervals = _intervals(events)
    assert [i.index for i in intervals] == [0, 1, 2, 3, 4]
    elapsed = [i.elapsed for i in intervals]
    assert elapsed == sorted(elapsed)
    assert elapsed == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0])
    assert all(i.stats.duration == pytest.approx(1.0) for i in intervals)
    stored = store.load("last")
    assert stored.steps[0].stats.duration == pytest.approx(5.0, abs=1e-6)


@pytest.mark.parametrize("attempt", range(3))
async def test_a_2s_run_gives_exactly_2_intervals(tmp_path: Path, attempt: int) -> None:
    store = Store(tmp_path / "runs.sqlite")
    events = await collect(["load.duration=2", "load.interval=1", "load.workers=2"], store)
    assert [i.stats.duration for i in _intervals(events)] == pytest.approx([1.0, 1.0])


async def test_a_short_tail_folds_into_the_last_interval(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.sqlite")
    events = await collect(["load.duration=2.3", "load.interval=1"], store)
    assert [i.stats.duration for i in _intervals(events)] == pytest.approx([1.0, 1.3])
    events = await collect(["load.duration=2.6", "load.interval=1"], store)
    assert [i.stats.duration for i in _intervals(events)] == pytest.approx([1.0, 1.0, 0.6])


async def test_waiting_for_stuck_ops_is_not_measured_time(tmp_path: Path) -> None:
    """The server stops answering near the end: the step still measured exactly 4 s."""
    server = start_redis()
    resumed = threading.Event()

    def on_event(e: Event) -> None:
        if isinstance(e, Interval) and e.index == 2 and not resumed.is_set():
            stopped(server.pid)
            asyncio.get_running_loop().call_later(3.0, _resume)

    def _resume() -> None:
        server.process.send_signal(signal.SIGCONT)
        resumed.set()

    try:
        events = await collect(
            [
                "target.system=redis",
                "strategy.name=multiplexed",  # the Python driver's abandoned ops
                f"target.options.url={server.target_options['url']}",
                "target.options.timeout=10",
                "load.duration=4",
                "load.interval=1",
                "load.concurrency=4",
                "load.workers=1",
            ],
            Store(tmp_path / "runs.sqlite"),
            on_event=on_event,
        )
    finally:
        server.process.send_signal(signal.SIGCONT)
        server.stop()
    intervals = _intervals(events)
    assert [i.elapsed for i in intervals] == pytest.approx([1.0, 2.0, 3.0, 4.0])
    (step,) = finished(events)
    assert step.stats.duration == pytest.approx(4.0, abs=1e-6)
    assert step.stats.errors.get("abandoned") == 4  # each client's op, unanswered at the end
