"""A worker process: reads step orders on stdin, writes framed interval reports on stdout.

Run as ``python -m workbench.engine.worker``. Stdout is kept private for frames (stray
prints go to stderr). The worker ends when stdin closes, and dies with its parent
(PR_SET_PDEATHSIG, with a parent-pid watch as a fallback), so it never outlives its
coordinator. The frames are described in docs/frames.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from workbench import __version__
from workbench.engine import frames
from workbench.engine.allocator import map_large_blocks
from workbench.engine.driver import Send, StepRun
from workbench.engine.frames import StepOrder
from workbench.engine.wire import read_frame, write_frame
from workbench.sdk.adapter import error_kind

ENGINE = {"name": "python", "version": __version__}
PARENT_ENV = "WORKBENCH_PARENT_PID"
_PR_SET_PDEATHSIG = 1


class Go:
    """The coordinator's "go": when the load starts, on this process's perf_counter clock."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.start: float | None = None
        # A "stop" can come before the step's run exists (right after its order): it is
        # kept here so the run stops as soon as it is made.
        self.stopped = False

    def set(self, realtime_start: float | None) -> None:
        if realtime_start is not None:  # converted once: the two clocks differ by a constant
            self.start = time.perf_counter() + (realtime_start - time.time())
        self.event.set()

    async def wait(self) -> float | None:
        await self.event.wait()
        return self.start


async def _run_step(order: dict[str, Any], send: Send, go: Go, holder: list[StepRun]) -> None:
    run: StepRun | None = None
    status = "failed"
    try:
        run = StepRun(StepOrder.read(order), send)
        holder.append(run)
        if go.stopped:  # stopped before the step began: no connecting, no prefill
            run.stop()
        else:
            await run.prepare()
        status = await run.run(go.wait())
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}"
        send(frames.error(error_kind(exc), message, traceback.format_exc(limit=6)))
    finally:
        if run is not None:
            await run.close()
        send(frames.step_done(status))


Orders = Callable[[], Awaitable[dict[str, Any] | None]]


async def serve(send: Send, next_order: Orders) -> None:
    """Run steps as orders arrive until the orders end (None). Every launcher runs this loop."""
    send(frames.ready(os.getpid(), ENGINE))
    step: asyncio.Task[None] | None = None
    go = Go()
    holder: list[StepRun] = []
    while True:
        order = await next_order()
        kind = order["type"] if order else "eof"
        if order is not None and kind == frames.STEP:
            go = Go()
            holder = []
            step = asyncio.create_task(_run_step(order, send, go, holder))
        elif order is not None and kind == frames.GO:
            go.set(order.get("start"))
        elif kind in (frames.STOP, "eof"):
            for run in holder:
                run.stop()
            go.stopped = True
            go.set(None)
            if kind == "eof":
                break
    if step is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(step, timeout=30)


async def serve_stdin(send: Send) -> None:
    """A local worker process: orders on stdin, and it never outlives its parent."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    watchdog = asyncio.create_task(_exit_with_parent(_parent_pid()))
    await serve(send, lambda: read_frame(reader))
    watchdog.cancel()


def _parent_pid() -> int:
    """The coordinator's pid, as it said when it started us (else whoever is our parent)."""
    given = os.environ.get(PARENT_ENV, "")
    return int(given) if given.isdigit() else os.getppid()


def die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL us when the parent goes (Linux); then check it is not gone."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(3)


async def _exit_with_parent(parent: int) -> None:
    """The fallback where PR_SET_PDEATHSIG is not available: watch the parent's pid."""
    while True:
        await asyncio.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def main() -> None:
    die_with_parent(_parent_pid())
    map_large_blocks()  # histograms freed back to the kernel: a long run stays flat
    out = os.dup(1)
    os.dup2(2, 1)  # anything printed by a library lands on stderr, not in the frames
    sys.stdout = sys.stderr
    try:
        import uvloop

        runner: Callable[[Coroutine[Any, Any, None]], None] = uvloop.run
    except ImportError:
        runner = asyncio.run
    with contextlib.suppress(KeyboardInterrupt):
        runner(serve_stdin(lambda message: write_frame(out, message)))
    # Frames are written unbuffered; do not wait at exit for a client thread stuck in a
    # blocking call (the interpreter would join the executor's threads).
    os._exit(0)


if __name__ == "__main__":
    main()
