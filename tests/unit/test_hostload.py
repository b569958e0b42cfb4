"""Each load machine's busy share between two samples, from the readings polled so far."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from workbench.engine.hiccup_meter import SliceBook, StepHiccups, poll_nodes
from workbench.engine.hostload import HostMonitor, Times


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):  # bounded: 10 s
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the monitor did not poll")


async def test_busy_shares_count_from_the_measured_phase_and_between_samples() -> None:
    readings: list[Times] = [
        {"10.77.0.2": (100, 1000, 4), "10.77.0.3": (0, 1000, 2)},
        {"10.77.0.2": (400, 1400, 4), "10.77.0.3": (380, 1400, 2)},
        {"10.77.0.2": (500, 1800, 4)},  # 10.77.0.3 did not answer this time
    ]

    async def read() -> Times:
        return readings[0]

    monitor = HostMonitor(read, {"10.77.0.2": ["0"], "10.77.0.3": ["1", "2"]}, 0.05)
    monitor.start()
    try:
        await until(lambda: bool(monitor.latest))
        monitor.begin()
        readings.pop(0)
        await until(lambda: monitor.latest["10.77.0.2"][1] == 1400)
        assert monitor.sample() == {
            "10.77.0.2": {"busy": 0.75, "cpus": 4, "workers": ["0"]},
            "10.77.0.3": {"busy": 0.95, "cpus": 2, "workers": ["1", "2"]},
        }
        readings.pop(0)
        await until(lambda: monitor.latest["10.77.0.2"][1] == 1800)
        # A host with no new reading has no figure for this interval.
        assert monitor.sample() == {"10.77.0.2": {"busy": 0.25, "cpus": 4, "workers": ["0"]}}
    finally:
        await monitor.close()
    assert monitor.task is None


async def test_close_ends_the_poll_when_the_read_turns_its_cancellation_into_an_error() -> None:
    """As a Ray remote call does: the cancelled read raises an error of its own."""
    reading = asyncio.Event()

    async def read() -> Times:
        reading.set()
        try:
            await asyncio.Event().wait()  # a node that does not answer
        except asyncio.CancelledError:
            raise RuntimeError("task cancelled") from None
        return {}

    monitor = HostMonitor(read, {}, 0.05)
    monitor.start()
    task = monitor.task
    await reading.wait()
    closing = asyncio.ensure_future(monitor.close())
    done, _ = await asyncio.wait({closing}, timeout=10)  # the old poll: never
    assert closing in done and task is not None and task.done()


async def test_close_does_not_wait_for_a_read_that_ignores_its_cancellation() -> None:
    reading = asyncio.Event()
    release = asyncio.Event()

    async def read() -> Times:
        reading.set()
        while not release.is_set():  # bounded: released below
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue
        return {}

    monitor = HostMonitor(read, {}, 0.05)
    monitor.start()
    task = monitor.task
    await reading.wait()
    closing = asyncio.ensure_future(monitor.close())
    done, _ = await asyncio.wait({closing}, timeout=10)  # its bounded wait, not the read's
    assert closing in done and task is not None and not task.done()
    release.set()
    task.cancel()
    await asyncio.wait({task}, timeout=5)


async def test_the_node_poll_ends_when_its_read_turns_its_cancellation_into_an_error() -> None:
    """The other load machines' meters are polled through Ray too: cancelled mid-read, the
    poll ends (before, it went on polling, and `asyncio.run` waited for it at the end)."""
    reading = asyncio.Event()

    async def read() -> dict[str, object]:
        if reading.is_set():
            return {}  # later reads answer at once: the old poll went on past its cancel
        reading.set()
        try:
            await asyncio.Event().wait()  # a node that does not answer
        except asyncio.CancelledError:
            raise RuntimeError("task cancelled") from None
        return {}

    side = StepHiccups(SliceBook({}), remote_server=False)
    task = asyncio.create_task(poll_nodes(read, side, lambda: None))
    await reading.wait()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)  # bounded: the old poll never ends
    assert done and task.cancelled()
