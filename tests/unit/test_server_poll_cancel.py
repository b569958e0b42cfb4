"""The server's statistics poll ends when cancelled, even when its read swallowed the cancel.

Python 3.11's `asyncio.wait_for` returns the result of a call that answered in the same
loop turn as the cancel, and the cancel is gone: the poll went on, and `asyncio.run` (and
pytest-asyncio's loop teardown) then waited for it for ever. In CI a test's teardown hung
294 s so, and a local run of the same test file stayed hung for two hours in
`_cancel_all_tasks` on `ServerMonitor._poll`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from workbench.engine.serverstats import ServerMonitor


class _Stats:
    """A connection whose statistics answer when the test says so."""

    def __init__(self) -> None:
        self.reading = asyncio.Event()
        self.answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.reads = 0

    async def server_stats(self) -> dict[str, Any]:
        self.reads += 1
        if self.reads > 1:
            return {"curr_items": 1}  # later reads answer at once
        self.reading.set()
        return await self.answer

    async def close(self) -> None:
        return None


async def test_the_poll_ends_when_its_read_answered_as_it_was_cancelled() -> None:
    conn = _Stats()

    async def connect() -> Any:
        return conn

    monitor = ServerMonitor(None, 0.1)
    task = asyncio.create_task(monitor._poll(connect()))
    await conn.reading.wait()
    conn.answer.set_result({"curr_items": 0})  # the reply, in the same turn as the cancel
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)  # bounded: the old poll never ends
    assert done, f"the poll went on after its cancel ({conn.reads} reads)"
    assert monitor.conn is None  # its connection was closed on the way out


async def test_a_reading_that_cannot_be_used_is_skipped_and_the_poll_goes_on() -> None:
    """As before the shared poll: a malformed figure is no figure this time."""
    from workbench.engine.polling import poll

    readings = iter([{"bad": "x"}, {"good": 1}])
    taken: list[int] = []

    async def read() -> dict[str, Any]:
        return next(readings, {"good": 2})

    def take(reading: dict[str, Any]) -> None:
        taken.append(int(reading["good"]))  # KeyError on the first

    task = asyncio.create_task(poll(read, take, 0.01))
    for _ in range(500):  # bounded: 5 s
        if taken:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.wait({task}, timeout=5)
    assert taken and taken[0] == 1 and task.cancelled()
