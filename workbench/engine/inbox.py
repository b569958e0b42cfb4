"""The coordinator's inbox: every worker's frames in one queue, in the order they came.

`pump` reads one worker's frames into it; `inbox_frames` takes them out for a step, sends
"stop" to the workers when the run is stopped (then kills those not done within
`STOP_GRACE` s), and, given a tick, wakes on a quiet inbox to let the coordinator look for
silent workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from workbench.engine import frames
from workbench.engine.launchers import Handle
from workbench.engine.step_tally import StepTally

STOP_GRACE = 15.0  # after "stop", workers that have not finished by then are killed
TICK = -1  # the worker index `inbox_frames` yields when it only woke up to look at the clock

Inbox = asyncio.Queue[tuple[int, dict[str, Any] | None]]


async def pump(handle: Handle, inbox: Inbox) -> None:
    """One worker's frames into the inbox, until its output ends (then None, once)."""
    while True:
        frame = await handle.receive()
        if frame is None:  # end of its output: let it finish dying so its exit code is known
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(handle.wait(), timeout=2)
        await inbox.put((handle.index, frame))
        if frame is None:
            return


async def inbox_frames(
    inbox: Inbox,
    stop: asyncio.Event,
    tally: StepTally,
    handles: list[Handle],
    tick: float | None = None,
) -> AsyncIterator[tuple[int, dict[str, Any] | None]]:
    """Frames from the inbox; on stop, "stop" to the workers, then a bounded wait.

    Blocks on the inbox (never spins); the task's own cancellation goes through. With
    `tick`, a quiet inbox yields (TICK, None) every `tick` seconds (for `_silent`).
    """
    stop_wait = asyncio.ensure_future(stop.wait())
    get: asyncio.Future[tuple[int, dict[str, Any] | None]] | None = None
    deadline = None
    try:
        while not tally.finished:
            get = get or asyncio.ensure_future(inbox.get())
            waits: set[asyncio.Future[Any]] = {get} if tally.stop_sent else {get, stop_wait}
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if tick is not None:
                timeout = tick if timeout is None else min(timeout, tick)
            done, _ = await asyncio.wait(
                waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if stop_wait in done and not tally.stop_sent:
                tally.stop_sent = True
                deadline = time.monotonic() + STOP_GRACE
                for h in handles:
                    await h.send({"type": frames.STOP})
            if get in done:
                item, get = get.result(), None
                yield item
            elif deadline is not None and time.monotonic() >= deadline:
                for h in handles:
                    if h.index in tally.live and h.index not in tally.done:
                        h.kill()  # its end of output arrives as a death notice
                deadline = None
            elif tick is not None and not done:
                yield TICK, None  # a quiet inbox: time to look for silent workers
    finally:
        stop_wait.cancel()
        if get is not None:
            if get.done() and not get.cancelled():
                inbox.put_nowait(get.result())  # not ours: keep it for the next step
            get.cancel()
