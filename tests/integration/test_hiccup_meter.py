"""The hiccup meter's processes (native and the Python stand-in) and a run that stores what
they measured (issue 35 item 1)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import collect, finished

from workbench.engine.hiccup_meter import MeterProcess, _started, meter_command
from workbench.results.store import Store

FALLBACK = [sys.executable, "-m", "workbench.engine.hiccup_fallback"]
ARGS = ["--tick-us", "1000", "--threshold-us", "1000"]
BUSY = """
import os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
except PermissionError:
    sys.exit(77)
time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 0)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    pass
time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 0)  # to be seen as it was
"""


def _commands() -> dict[str, list[str]]:
    native = meter_command(0.001, 0.001)
    out = {"python": [*FALLBACK, *ARGS]}
    if native[0] != sys.executable:
        out["native"] = native
    return out


async def _meter(kind: str) -> MeterProcess:
    if kind not in _commands():
        pytest.skip("the native engine is not built")
    meter = await _started(_commands()[kind])
    assert meter is not None, kind
    return meter


async def _until(meter: MeterProcess, wall: float) -> None:
    for _ in range(200):
        if meter.book.covered >= wall:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the meter never reported up to {wall}")


@pytest.mark.parametrize("kind", ["native", "python"])
async def test_each_meter_reports_every_cpu_and_the_processes_it_watches(kind: str) -> None:
    meter = await _meter(kind)
    try:
        await meter.watch({"worker 0": os.getpid()})
        start = time.time()
        await _until(meter, start + 0.6)
        figures = meter.book.take(start + 0.1, start + 0.6, start)
    finally:
        await meter.close()
    assert meter.proc.returncode == 0  # its input closed: it ended by itself
    assert figures is not None
    cpus = {str(c) for c in os.sched_getaffinity(0)}
    assert set(figures.cpus) == cpus
    # Every CPU woke about once per tick (a few ticks late at most, on a busy machine); the
    # Python stand-in sleeps a longer tick than asked, and says so.
    ticks = 0.5e9 / figures.tick_ns
    assert figures.tick_ns == 1_000_000 or kind == "python"
    assert all(wakes >= 0.4 * ticks for wakes, *_ in figures.cpus.values()), figures.cpus
    assert figures.hist.get_total_count() >= 0.4 * ticks * len(cpus)
    assert figures.seen["worker 0"] and set(figures.seen["worker 0"]) <= cpus
    assert "worker 0" in figures.waited
    if kind == "python":
        assert figures.meter.startswith("python, resolution ")  # it says its own
    else:
        assert figures.meter == "native"


@pytest.mark.serial  # a real-time task takes a CPU from the tests beside it
@pytest.mark.parametrize("kind", ["native", "python"])
async def test_a_cpu_taken_by_a_real_time_task_is_a_hiccup_on_that_cpu(kind: str) -> None:
    cpu = max(os.sched_getaffinity(0))
    meter = await _meter(kind)
    try:
        await meter.watch({"worker 0": os.getpid()})  # the run's own: not what held the CPU
        start = time.time()
        busy = subprocess.run([sys.executable, "-c", BUSY, str(cpu), "0.06"], check=False)
        if busy.returncode == 77:
            pytest.skip("cannot make a real-time task here (SCHED_FIFO needs CAP_SYS_NICE)")
        end = time.time()
        await _until(meter, end + 0.1)
        figures = meter.book.take(start - 0.1, end + 0.1, start)
    finally:
        await meter.close()
    assert figures is not None
    on_cpu = [e for e in figures.events if e.cpu == str(cpu)]
    assert on_cpu, figures.summary()
    # 60 ms taken: the wake-up due in it is late by all of it but at most one tick.
    assert max(e.length_ns for e in on_cpu) >= 60_000_000 - figures.tick_ns, on_cpu
    assert not any(e.own for e in on_cpu), on_cpu  # a process not the run's held it


@pytest.mark.serial  # a real-time task takes a CPU from the tests beside it
@pytest.mark.parametrize("kind", ["native", "python"])
async def test_a_cpu_the_runs_own_process_held_is_its_own_hiccup(kind: str) -> None:
    cpu = max(os.sched_getaffinity(0))
    meter = await _meter(kind)
    try:
        argv = [sys.executable, "-c", BUSY, str(cpu), "0.06", "0.3"]
        busy = subprocess.Popen(argv)  # spins after 0.3 s (the meter knows it by then), then
        # lives 0.3 s more: the meter reads what it ran when its thread wakes, after it
        await meter.watch({"worker 0": busy.pid})
        start = time.time()
        if await asyncio.to_thread(busy.wait) == 77:
            pytest.skip("cannot make a real-time task here (SCHED_FIFO needs CAP_SYS_NICE)")
        end = time.time()
        await _until(meter, end + 0.1)
        figures = meter.book.take(start - 0.1, end + 0.1, start)
    finally:
        await meter.close()
    assert figures is not None
    # The burst: the longest hiccup on its CPU once it spins (0.3 s after it started).
    after = [e for e in figures.events if e.cpu == str(cpu) and e.at >= 0.25]
    held = max(after, key=lambda e: e.length_ns, default=None)
    assert held is not None and held.length_ns >= 60_000_000 - figures.tick_ns, after
    # The run's own process held the CPU (the load's CPU sharing, `stalls.counts`).
    assert held.own == "worker 0", held


@pytest.mark.redis
async def test_every_interval_of_a_run_stores_the_machines_hiccups(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.sqlite")
    common = [
        "target.system=redis",
        "target.managed=true",
        "load.concurrency=2",
        "load.workers=1",
        "load.duration=1.5",
        "load.warmup=0.2",
        "load.interval=0.5",
    ]
    (step,) = finished(await collect(common, store))
    assert step.status == "completed"
    stored = store.load("last").steps[0]
    intervals = list(stored.intervals)
    assert len(intervals) == 3
    for interval in intervals:
        h = interval.stats.hiccups
        assert h is not None and h.hist.get_total_count() > 0 and h.intervals == 1
        assert "server" in h.seen and "worker 0" in h.seen
    assert step.stats.hiccups is not None and step.stats.hiccups.intervals == 3
    (off,) = finished(await collect([*common, "machine.hiccup_tick=0"], store))
    assert off.stats.hiccups is None
    assert all(i.stats.hiccups is None for i in store.load("last").steps[0].intervals)
