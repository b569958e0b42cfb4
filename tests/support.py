"""Helpers shared by the test modules: run an experiment through the real session."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from workbench.results.events import Event, StepFinished
from workbench.results.store import Store
from workbench.run import session
from workbench.spec.steps import load_spec


async def collect(
    overrides: list[str],
    store: Store,
    stop: asyncio.Event | None = None,
    on_event: Callable[[Event], None] | None = None,
    profile: Path | None = None,
) -> list[Event]:
    """Every event of one run (no warm-up, quarter-second intervals unless overridden)."""
    spec = load_spec(profile, ["load.warmup=0", "load.interval=0.25", *overrides])
    events = []
    async for e in session.run(spec, store, stop=stop):
        events.append(e)
        if on_event:
            on_event(e)
    return events


def finished(events: list[Event]) -> list[StepFinished]:
    return [e for e in events if isinstance(e, StepFinished)]


def completed_clean(step: StepFinished) -> None:
    """The step completed and no operation failed."""
    assert step.status == "completed", step.reason
    assert step.stats.errors == {}, step.stats.first_errors


def stopped(pid: int) -> None:
    """SIGSTOP a server and wait until the kernel shows it stopped (a signal is not instant)."""
    os.kill(pid, signal.SIGSTOP)
    for _ in range(500):  # bounded: 5 s
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop")
