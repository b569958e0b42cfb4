"""The worker's precise wake-ups (engine/timer.py): never early, earliest first, all released."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest
import uvloop

from workbench.engine.timer import Wakeups

T = TypeVar("T")


def _run(scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """On uvloop, as a worker runs: its millisecond timers are what the timerfd replaces."""
    return uvloop.run(scenario())


def test_clients_wake_at_their_instants_earliest_first_and_never_early() -> None:
    async def scenario() -> list[tuple[int, int, int]]:
        wakeups = Wakeups.create(asyncio.get_running_loop())
        assert wakeups is not None
        # Every client asks well before the earliest instant: one asked past its instant
        # returns at once, in the order of asking (a 5 ms margin was not enough for a
        # loaded machine's stall between the first ask and the last).
        base = time.perf_counter_ns() + 200_000_000
        woke: list[tuple[int, int, int]] = []

        async def client(i: int, due: int) -> None:
            await wakeups.until(due)
            woke.append((i, due, time.perf_counter_ns()))

        # Asked in an order unlike their instants; two share one instant.
        dues = [base + d for d in (900_000, 100_000, 500_000, 500_000, 300_000, 0)]
        await asyncio.gather(*(client(i, d) for i, d in enumerate(dues)))
        wakeups.close()
        return woke

    woke = _run(scenario)
    assert all(now >= due for _, due, now in woke)  # an early send is a wrong schedule
    assert [due for _, due, _ in woke] == sorted(due for _, due, _ in woke)
    assert [i for i, _, _ in woke] == [5, 1, 4, 2, 3, 0]  # ties keep the order of asking


def test_a_past_instant_returns_at_once_and_release_all_wakes_every_waiter() -> None:
    async def scenario() -> tuple[bool, list[int]]:
        wakeups = Wakeups.create(asyncio.get_running_loop())
        assert wakeups is not None
        await wakeups.until(time.perf_counter_ns() - 1)  # no wait at all: nothing armed
        idle = wakeups.armed == 0
        far = time.perf_counter_ns() + 3600 * 10**9
        released: list[int] = []

        async def client(i: int) -> None:
            await wakeups.until(far)
            released.append(i)

        tasks = [asyncio.ensure_future(client(i)) for i in range(3)]
        await asyncio.sleep(0)
        wakeups.release_all()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)
        wakeups.close()
        return idle, released

    idle, released = _run(scenario)
    assert idle
    assert released == [0, 1, 2]


def test_a_cancelled_waiter_does_not_stop_the_others() -> None:
    async def scenario() -> list[str]:
        wakeups = Wakeups.create(asyncio.get_running_loop())
        assert wakeups is not None
        soon = time.perf_counter_ns() + 2_000_000
        out: list[str] = []

        async def client(name: str, due: int) -> None:
            await wakeups.until(due)
            out.append(name)

        gone = asyncio.ensure_future(client("gone", soon))
        kept = asyncio.ensure_future(client("kept", soon + 1_000_000))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.wait_for(kept, timeout=30)
        with pytest.raises(asyncio.CancelledError):
            await gone
        wakeups.close()
        return out

    assert _run(scenario) == ["kept"]
