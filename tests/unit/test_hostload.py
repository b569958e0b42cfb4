"""Each load machine's busy share between two samples, from the readings polled so far."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

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
