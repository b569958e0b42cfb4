"""What a running command waits on, printed when it gets SIGUSR1 (`kill -USR1 <pid>`).

For a run that seems stuck: on stderr, every asyncio task and every suspended async
generator (a run's steps and events are generators) with the chain of awaits it is in,
innermost last, then every thread's stack. The run goes on unchanged.
"""

from __future__ import annotations

import asyncio
import faulthandler
import gc
import linecache
import sys
import types
from typing import Any, TextIO

SIGNAL_NAME = "SIGUSR1"
DEPTH = 40  # awaits followed per chain at most


def awaits(obj: Any) -> list[types.FrameType]:
    """The frames of a coroutine or async generator and of what it awaits, outermost first."""
    frames: list[types.FrameType] = []
    for _ in range(DEPTH):
        if obj is None:
            break
        frame = next(
            (f for a in ("cr_frame", "ag_frame", "gi_frame") if (f := getattr(obj, a, None))),
            None,
        )
        if frame is not None:
            frames.append(frame)
        obj = next(
            (o for a in ("cr_await", "ag_await", "gi_yieldfrom") if (o := getattr(obj, a, None))),
            None,
        )
    return frames


def _print_chain(title: str, frames: list[types.FrameType], out: TextIO) -> None:
    print(title, file=out)
    for frame in frames:
        where = frame.f_code.co_filename
        line = linecache.getline(where, frame.f_lineno).strip()
        print(f"  {where}:{frame.f_lineno} in {frame.f_code.co_name}: {line}", file=out)


def show_waits() -> None:
    out = sys.__stderr__
    if out is None:
        return
    tasks = sorted(asyncio.all_tasks(), key=lambda t: t.get_name())
    print(f"== what this run waits on ({SIGNAL_NAME}): {len(tasks)} task(s) ==", file=out)
    for task in tasks:
        _print_chain(f"task {task.get_name()}", awaits(task.get_coro()), out)
    # An `async for` awaits its generator through an object that does not name it, so the
    # suspended generators are found apart and shown with what they await.
    for gen in gc.get_objects():
        if isinstance(gen, types.AsyncGeneratorType) and gen.ag_frame is not None:
            _print_chain(f"async generator {gen.ag_code.co_qualname}", awaits(gen), out)
    print("== threads ==", file=out, flush=True)
    faulthandler.dump_traceback(file=out, all_threads=True)
    out.flush()
