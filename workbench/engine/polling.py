"""A background poll of another machine's figures that always ends when cancelled.

Ray turns the cancellation of a remote call into an exception of its own. A poll that took
every failed read for "no figure this time" went on after its cancel, so whoever waited
for it (a step's end, `asyncio.run` cancelling what is left) waited for ever: a run hung
at the end of its step. The poll here checks, after each read, whether its task is being
cancelled, whatever the read raised.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def poll(read: Callable[[], Awaitable[T]], take: Callable[[T], None], every: float) -> None:
    """Hand what `read` returns to `take` every `every` s, until cancelled. A read that
    fails (a node that does not answer), or a reading `take` cannot use, gives nothing
    that time."""
    task = asyncio.current_task()
    while True:
        try:
            value = await read()
        except Exception:
            failed = True
        else:
            failed = False
        if task is not None and task.cancelling():
            raise asyncio.CancelledError
        if not failed:
            # A reading that cannot be used (a malformed figure) is none this time, as a
            # failed read is: the poll goes on.
            with contextlib.suppress(Exception):
                take(value)
        await asyncio.sleep(every)
