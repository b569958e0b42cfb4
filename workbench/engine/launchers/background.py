"""Calls into a cluster that may never return, kept off the event loop and off the exit.

A Ray call waits on the cluster: a node that died leaves it waiting. In a daemon thread it
can neither hold the event loop nor, unfinished, the process's exit; `bounded` waits for
it only so long.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable


def in_background(call: Callable[[], object], name: str) -> threading.Thread:
    """`call` in a daemon thread (its errors dropped): a Ray call that waits on the cluster
    can neither hold the event loop nor, unfinished, the process's exit."""

    def run() -> None:
        with contextlib.suppress(Exception):
            call()

    thread = threading.Thread(target=run, name=f"ray-{name}", daemon=True)
    thread.start()
    return thread


async def bounded(call: Callable[[], object], name: str, timeout: float) -> bool:
    """`call` in the background, waited for at most `timeout` s; False if it took longer."""
    thread = in_background(call, name)
    deadline = time.monotonic() + timeout
    while thread.is_alive() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not thread.is_alive()
