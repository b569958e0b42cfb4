"""The coordinator's side of the hiccup meters: this machine's, started with a run's first
step and watching each step's managed server and local workers, and the Ray nodes', polled
while a step runs (`workbench.engine.hiccup_meter`)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from typing import Any

from workbench.engine.hiccup_meter import MeterProcess, StepHiccups, poll_nodes
from workbench.engine.local_server import server_pids, unknown_server
from workbench.sdk.adapter import ManagedServer
from workbench.sdk.remote import addresses, is_loopback
from workbench.spec.model import MachineSpec, Spec
from workbench.spec.resolve import ResolvedStep


class MachineWatch:
    """The meters of one run: `step` gives each step its side, `close` ends them."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self.meter: MeterProcess | None = None
        self._tried = False
        self._wake = wake  # wakes the coordinator's collecting loop
        self.waiting = False  # an interval waits for a meter's next slice
        self._nodes: asyncio.Task[None] | None = None

    async def step(
        self,
        spec: Spec,
        resolved: ResolvedStep,
        server: ManagedServer | None,
        local_workers: Sequence[Any],
    ) -> StepHiccups | None:
        """The step's side of the meter, watching its server and `local_workers` (None when
        `machine.hiccup_tick` is 0 or no meter would start)."""
        settings = spec.machine or MachineSpec()
        if not self._tried and settings.hiccup_tick > 0:
            self._tried = True
            self.meter = await MeterProcess.start(settings.hiccup_tick, settings.hiccup_threshold)
            if self.meter is not None:
                self.meter.on_slice = self.slice_came
        if self.meter is None:
            return None
        options = resolved.system_options
        remote = not resolved.managed and any(
            not is_loopback(host) for _, _, host in addresses(options)
        )
        pids = watched(server, local_workers)
        anywhere = False
        if server is None and not remote:  # a server on this machine someone else started
            found = await asyncio.to_thread(server_pids, options)
            pids.update(_named(found))
            anywhere = unknown_server(options, found)
        # This process is the run's too: its CPU time is the load's, not the machine's.
        await self.meter.watch(pids, own={"coordinator": os.getpid()})
        return StepHiccups(self.meter.book, remote, server_anywhere=anywhere)

    def watch_nodes(self, side: StepHiccups | None, read: Callable[[], Any] | None) -> None:
        """Poll the other load machines' meters into `side` while the step runs (`read`:
        the launcher's `hiccups` of the step's workers; None: no other machine)."""
        if side is not None and read is not None:
            self._nodes = asyncio.create_task(poll_nodes(read, side, self.slice_came))

    def step_ended(self) -> None:
        if self._nodes is not None:
            self._nodes.cancel()
            self._nodes = None

    def slice_came(self) -> None:
        """A slice came in: wake the collecting loop if an interval waits for one."""
        if self.waiting:
            self.waiting = False
            self._wake()

    async def through(self, side: StepHiccups, elapsed: Sequence[float]) -> None:
        """Wait (each meter bounded by its own wait) until the meters have reported up to
        the end of the last of these intervals."""
        last = max(elapsed, default=0.0)
        while not side.ready(last):
            await asyncio.sleep(0.02)

    async def close(self, *, abandon: bool) -> None:
        self.step_ended()
        if self.meter is not None:
            if abandon:
                self.meter.kill()
            else:
                await self.meter.close()
            self.meter = None


def _named(found: dict[int, int]) -> dict[str, int]:
    """The meter's names of the local servers found by port: "server", or one per port."""
    if len(found) == 1:
        return {"server": next(iter(found.values()))}
    return {f"server 127.0.0.1:{port}": pid for port, pid in found.items()}


def watched(server: ManagedServer | None, workers: Sequence[Any]) -> dict[str, int]:
    """The processes a meter watches, by name: the managed server (each node of a managed
    cluster as "server ADDRESS") and each local worker ("worker 0")."""
    pids: dict[str, int] = {}
    if server is not None:
        nodes = getattr(server, "nodes", ())
        for node in nodes:
            pids[f"server {node.address}"] = node.pid
        if not nodes:
            pids["server"] = server.pid
    for h in workers:
        pids[f"worker {h.index}"] = getattr(h, "worker_pid", None) or h.pid
    return pids
