"""How busy each load machine was, read on that machine: for workers on other hosts.

The coordinator reads its own machine's busy share itself (serverstats: ``host_busy``).
Workers on other machines (Ray nodes) are asked for theirs: a background task asks the
launcher for every node's CPU jiffies (one worker per node reads its /proc/stat) and
keeps the latest; each merged interval then takes, at once, the busy share of every
node since the previous interval. Added to the interval's ``server`` dict as

    "hosts": {"10.77.0.3": {"busy": 0.97, "cpus": 4, "workers": ["1", "3"]}, ...}

(`workers`: the workers on that machine, as ``stats.cpu`` names them). Like the
coordinator's own figures, they count from the start of the measured phase.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from workbench.engine.polling import poll

Times = dict[str, tuple[int, int, int]]  # host -> (busy jiffies, total jiffies, CPUs)
CLOSE_WAIT = 2.0  # seconds


class HostMonitor:
    """The latest CPU jiffies of every load machine, polled off the load path."""

    def __init__(
        self,
        read: Callable[[], Awaitable[Times]],
        workers: dict[str, list[str]],
        poll_every: float,
    ) -> None:
        self.read = read
        self.workers = workers  # host -> the workers on it
        self.poll_every = max(0.1, poll_every)
        self.latest: Times = {}
        self.marks: Times = {}  # the readings the next interval counts from
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._poll())

    async def _poll(self) -> None:
        def take(latest: Times) -> None:
            self.latest = {**self.latest, **latest}

        await poll(self.read, take, self.poll_every)

    def begin(self) -> None:
        """The measured phase begins: busy shares count from the latest readings."""
        self.marks = dict(self.latest)

    def sample(self) -> dict[str, dict[str, Any]]:
        """Each host's busy share since the last sample (hosts with two readings only)."""
        out: dict[str, dict[str, Any]] = {}
        for host, (busy, total, cpus) in self.latest.items():
            mark = self.marks.get(host)
            if mark is not None and total > mark[1]:
                share = (busy - mark[0]) / (total - mark[1])
                out[host] = {
                    "busy": round(min(1.0, max(0.0, share)), 4),
                    "cpus": cpus,
                    "workers": self.workers.get(host, []),
                }
        self.marks = dict(self.latest)
        return out

    async def close(self) -> None:
        """Stop polling. Bounded: a read stuck on a lost node is left behind, never waited
        for past a few polls."""
        if self.task is not None:
            self.task.cancel()
            task, self.task = self.task, None
            await asyncio.wait({task}, timeout=CLOSE_WAIT)
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: a failed read is no figure, not a warning
