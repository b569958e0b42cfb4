"""The coordinator: starts workers, hands them steps, merges their intervals into events.

Runs in the caller's event loop (the TUI's or the CLI's). Workers report each interval
on their own; an interval event is emitted once every live worker has reported it, with
the workers' histograms merged. A worker that dies is reported as a notice and the step
goes on with the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from workbench.adapter import CacheSystem, ManagedServer
from workbench.engine.launchers import Handle, Launcher, LocalLauncher, open_launcher
from workbench.errors import TargetError
from workbench.events import Event, Interval, Notice, StepFinished, StepStarted
from workbench.metrics import Stats, merged
from workbench.plugins import load_plugin
from workbench.spec.model import spec_to_dict
from workbench.spec.plan import Step, resolve_strategy, total_clients, workers_for

# Worst last: a run is as bad as its worst step.
_STATUS_RANK = ["completed", "degraded", "interrupted", "failed"]


@dataclass
class _StepTally:
    """What has arrived from the workers of one step."""

    live: set[int]
    pending: dict[int, dict[int, Stats]] = field(default_factory=dict)  # index -> worker -> stats
    elapsed: dict[int, float] = field(default_factory=dict)
    emitted: list[Stats] = field(default_factory=list)
    tails: list[Stats] = field(default_factory=list)  # deliveries after the load stopped
    armed: set[int] = field(default_factory=set)
    done: dict[int, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    measured: dict[int, tuple[int, int]] = field(default_factory=dict)  # worker -> intervals, ops
    lost: set[int] = field(default_factory=set)  # workers that vanished before step_done
    go_at: float | None = None  # monotonic time the "go" was sent


async def _pump(
    handle: Handle, inbox: asyncio.Queue[tuple[int, dict[str, Any] | None]]
) -> None:
    while True:
        frame = await handle.receive()
        if frame is None:  # end of its output: let it finish dying so its exit code is known
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(handle.wait(), timeout=2)
        await inbox.put((handle.index, frame))
        if frame is None:
            return


def _start_server(system: CacheSystem, options: dict[str, Any]) -> ManagedServer:
    assert system.server is not None
    return system.server.start(options)


class Coordinator:
    def __init__(self, run_id: str, steps: list[Step], stop: asyncio.Event) -> None:
        self.run_id = run_id
        self.steps = steps
        self.stop = stop
        self.handles: list[Handle] = []
        self.launcher: Launcher = LocalLauncher()
        self.inbox: asyncio.Queue[tuple[int, dict[str, Any] | None]] = asyncio.Queue()
        self.pumps: list[asyncio.Task[None]] = []
        self.server: ManagedServer | None = None
        self.status = "completed"
        self.dead: set[int] = set()

    async def events(self) -> AsyncIterator[Event]:
        """Every step in order; `self.status` tells how the run ended."""
        self.launcher = await open_launcher(self.steps[0].spec.load)
        try:
            count = max(workers_for(s.spec, self.launcher.cpus) for s in self.steps)
            self.handles = await self.launcher.launch(count)
            self.pumps = [asyncio.create_task(_pump(h, self.inbox)) for h in self.handles]
            for step in self.steps:
                if self.stop.is_set():
                    self.status = "interrupted"
                    break
                async for event in self._step(step):
                    yield event
                    if isinstance(event, StepFinished):
                        # A failed step is kept as failed; the sweep goes on with the next.
                        self.status = max(self.status, event.status, key=_STATUS_RANK.index)
        finally:
            await self._shutdown()

    async def _shutdown(self) -> None:
        self._stop_server()
        await asyncio.gather(*(h.close() for h in self.handles), return_exceptions=True)
        for p in self.pumps:
            p.cancel()
        await self.launcher.close()

    def _stop_server(self) -> None:
        if self.server is not None:
            with contextlib.suppress(Exception):
                self.server.stop()
            self.server = None

    async def _step(self, step: Step) -> AsyncIterator[Event]:
        spec = step.spec
        system = load_plugin(spec.target.system)
        strategy = resolve_strategy(system, spec)
        system_options = system.options.resolve(dict(spec.target.options), "target.options")
        strategy_options = strategy.options.resolve(dict(spec.strategy.options), "strategy.options")
        server_info: dict[str, Any] = {}
        if spec.target.managed and system.server is not None:
            server_opts = system.server.options.resolve(dict(spec.target.server), "target.server")
            try:
                self.server = await asyncio.to_thread(_start_server, system, server_opts)
            except TargetError as exc:
                yield Notice(self.run_id, step.index, "error", str(exc))
                yield StepFinished(self.run_id, step.index, "failed", Stats())
                return
            system_options = {**system_options, **self.server.target_options}
            server_info = {
                "pid": self.server.pid,
                "version": self.server.version,
                **{k: str(v) for k, v in self.server.target_options.items()},
            }
        n = workers_for(spec, self.launcher.cpus)
        await self._replace_dead(n)
        handles = self.handles[:n]
        yield StepStarted(
            self.run_id,
            step.index,
            step.title,
            step.label,
            spec_to_dict(spec),
            workers=n,
            clients=total_clients(spec),
            server=server_info,
            nodes=self.launcher.nodes(handles),
        )
        order = {
            "type": "step",
            "spec": spec_to_dict(spec),
            "system_options": system_options,
            "strategy_options": strategy_options,
            "workers": n,
        }
        tally = _StepTally(live={h.index for h in handles})
        for h in handles:
            await h.send({**order, "worker": h.index})
        stop_sent = False
        go_sent = False
        stop_wait = asyncio.create_task(self.stop.wait())
        try:
            while len(tally.done) < len(tally.live):
                get = asyncio.create_task(self.inbox.get())
                await asyncio.wait({get, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
                if self.stop.is_set() and not stop_sent:
                    stop_sent = True
                    for h in handles:
                        await h.send({"type": "stop"})
                if not get.done():
                    get.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await get
                    continue
                worker, frame = get.result()
                for event in self._take(step, tally, worker, frame):
                    yield event
                if not go_sent and tally.armed >= tally.live - set(tally.done):
                    go_sent = True
                    tally.go_at = time.monotonic()
                    for h in handles:
                        await h.send({"type": "go"})
                for event in await self._complete_intervals(step, tally):
                    yield event
        finally:
            stop_wait.cancel()
            self._stop_server()
        total = merged(tally.emitted + tally.tails, concurrent=False)
        status = self._step_status(tally, stop_sent)
        if status == "completed" and not total.ops and total.error_count:
            status = "failed"  # every operation failed: nothing about the cache was measured
        if tally.emitted:
            total.server = tally.emitted[-1].server | total.server
        yield StepFinished(self.run_id, step.index, status, total)

    async def _replace_dead(self, needed: int) -> None:
        """A worker that died in an earlier step is replaced before the next one."""
        for index in sorted(i for i in self.dead if i < needed):
            (fresh,) = await self.launcher.launch(1, first_index=index)
            self.handles[index] = fresh
            self.pumps.append(asyncio.create_task(_pump(fresh, self.inbox)))
            self.dead.discard(index)

    def _step_status(self, tally: _StepTally, stopped: bool) -> str:
        if stopped:
            return "interrupted"
        if not tally.emitted and (tally.errors or not tally.live):
            return "failed"
        if "failed" in tally.done.values() and not tally.emitted:
            return "failed"
        if tally.lost:
            return "degraded"  # measured, but without the workers that were lost
        return "completed"

    def _take(
        self, step: Step, tally: _StepTally, worker: int, frame: dict[str, Any] | None
    ) -> list[Event]:
        if worker not in tally.live:
            return []
        if frame is None:
            self.dead.add(worker)
            tally.live.discard(worker)
            if worker in tally.done:  # it had finished the step: nothing was lost
                tally.done.pop(worker)
                message = self.handles[worker].describe_exit()
                return [Notice(self.run_id, step.index, "error", f"worker died: {message}")]
            tally.lost.add(worker)
            return [Notice(self.run_id, step.index, "error", self._lost(step, tally, worker))]
        kind = frame["type"]
        if kind == "armed":
            tally.armed.add(worker)
        elif kind == "interval":
            stats = Stats.from_dict(frame["stats"])
            if frame["index"] < 0:
                tally.tails.append(stats)
            elif not frame["warmup"]:
                tally.pending.setdefault(frame["index"], {})[worker] = stats
                intervals, ops = tally.measured.get(worker, (0, 0))
                tally.measured[worker] = (intervals + 1, ops + stats.ops)
                tally.elapsed[frame["index"]] = max(
                    tally.elapsed.get(frame["index"], 0.0), frame["elapsed"]
                )
        elif kind == "error":
            tally.errors.append(frame["message"])
            return [
                Notice(self.run_id, step.index, "error", f"worker {worker}: {frame['message']}")
            ]
        elif kind == "step_done":
            tally.done[worker] = frame["status"]
        return []

    def _lost(self, step: Step, tally: _StepTally, worker: int) -> str:
        """Which worker was lost, when, and how much it had measured."""
        load = step.spec.load
        if tally.go_at is None:
            when = "before the load began"
        else:
            into = time.monotonic() - tally.go_at - (0 if load.warmup_ops else load.warmup)
            when = f"{into:.1f} s into the measured phase" if into >= 0 else "during warm-up"
        intervals, ops = tally.measured.get(worker, (0, 0))
        return (
            f"worker lost: {self.handles[worker].describe_exit()}, {when}, after measuring "
            f"{ops} ops in {intervals} intervals (kept); the other workers go on"
        )

    async def _complete_intervals(self, step: Step, tally: _StepTally) -> list[Event]:
        """Intervals every live worker has reported (or all, once every worker is done)."""
        events: list[Event] = []
        finished = len(tally.done) >= len(tally.live)
        for index in sorted(tally.pending):
            parts = tally.pending[index]
            if not finished and not tally.live <= set(parts):
                break
            stats = merged(parts.values(), concurrent=True)
            if self.server is not None:
                with contextlib.suppress(Exception):
                    stats.server = {**stats.server, **await asyncio.to_thread(self.server.memory)}
            del tally.pending[index]
            tally.emitted.append(stats)
            events.append(Interval(self.run_id, step.index, index, tally.elapsed[index], stats))
        return events
