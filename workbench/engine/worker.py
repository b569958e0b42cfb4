"""A worker process: reads step orders on stdin, writes framed interval reports on stdout.

Run as ``python -m workbench.engine.worker``. Stdout is kept private for frames (stray
prints go to stderr). The worker ends when stdin closes, so it never outlives its
coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from workbench.adapter import error_kind
from workbench.engine.driver import Send, StepContext, StepRun
from workbench.engine.wire import read_frame, write_frame
from workbench.plugins import load_plugin
from workbench.spec.model import spec_from_dict
from workbench.spec.plan import resolve_strategy


def _context(order: dict[str, Any]) -> StepContext:
    spec = spec_from_dict(order["spec"])
    system = load_plugin(spec.target.system)
    strategy = resolve_strategy(system, spec)
    return StepContext(
        spec=spec,
        strategy=strategy,
        system_options=order["system_options"],
        strategy_options=order["strategy_options"],
        worker=order["worker"],
        workers=order["workers"],
        shared=system.shared_state,
    )


async def _run_step(
    order: dict[str, Any], send: Send, go: asyncio.Event, holder: list[StepRun]
) -> None:
    run: StepRun | None = None
    status = "failed"
    try:
        run = StepRun(_context(order), send)
        holder.append(run)
        await run.prepare()
        status = await run.run(go.wait())
    except Exception as exc:
        send(
            {
                "type": "error",
                "kind": error_kind(exc),
                "message": f"{type(exc).__name__}: {exc}",
                "trace": traceback.format_exc(limit=6),
            }
        )
    finally:
        if run is not None:
            await run.close()
        send({"type": "step_done", "status": status})


Orders = Callable[[], Awaitable[dict[str, Any] | None]]


async def serve(send: Send, next_order: Orders) -> None:
    """Run steps as orders arrive until the orders end (None). Every launcher runs this loop."""
    send({"type": "ready", "pid": os.getpid()})
    step: asyncio.Task[None] | None = None
    go = asyncio.Event()
    holder: list[StepRun] = []
    while True:
        order = await next_order()
        kind = order["type"] if order else "eof"
        if kind == "step":
            go = asyncio.Event()
            holder = []
            step = asyncio.create_task(_run_step(order, send, go, holder))  # type: ignore[arg-type]
        elif kind == "go":
            go.set()
        elif kind in ("stop", "eof"):
            for run in holder:
                run.stop()
            go.set()
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
    watchdog = asyncio.create_task(_exit_with_parent(os.getppid()))
    await serve(send, lambda: read_frame(reader))
    watchdog.cancel()


async def _exit_with_parent(parent: int) -> None:
    """A worker never outlives its coordinator, even one killed without closing our input."""
    while True:
        await asyncio.sleep(1.0)
        if os.getppid() != parent:
            os._exit(3)


def main() -> None:
    out = os.dup(1)
    os.dup2(2, 1)  # anything printed by a library lands on stderr, not in the frames
    sys.stdout = sys.stderr
    try:
        import uvloop

        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    with contextlib.suppress(KeyboardInterrupt):
        runner(serve_stdin(lambda message: write_frame(out, message)))
    # Frames are written unbuffered; do not wait at exit for a client thread stuck in a
    # blocking call (the interpreter would join the executor's threads).
    os._exit(0)


if __name__ == "__main__":
    main()
