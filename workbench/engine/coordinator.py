"""The coordinator: starts workers, hands them steps, merges their intervals into events.

Runs in the caller's event loop (the TUI's or the CLI's). Workers report each interval
on their own; an interval event is emitted once every live worker has reported it, with
the workers' histograms merged. A worker that dies is reported as a notice and the step
goes on with the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from workbench.adapter import CacheSystem, ManagedServer
from workbench.engine.launcher import WorkerHandle, launch_local
from workbench.errors import TargetError
from workbench.events import Event, Interval, Notice, StepFinished, StepStarted
from workbench.metrics import Stats, merged
from workbench.plugins import load_plugin
from workbench.spec.model import spec_to_dict
from workbench.spec.plan import Step, resolve_strategy, total_clients, workers_for


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


async def _pump(
    handle: WorkerHandle, inbox: asyncio.Queue[tuple[int, dict[str, Any] | None]]
) -> None:
    while True:
        frame = await handle.receive()
        if frame is None:  # end of its output: let it finish dying so its exit code is known
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(handle.proc.wait(), timeout=2)
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
        self.handles: list[WorkerHandle] = []
        self.inbox: asyncio.Queue[tuple[int, dict[str, Any] | None]] = asyncio.Queue()
        self.pumps: list[asyncio.Task[None]] = []
        self.server: ManagedServer | None = None
        self.status = "completed"
        self.dead: set[int] = set()
        self.engine = ""  # the engine of the running workers ("python" or "native")
        self.count = 0

    async def events(self) -> AsyncIterator[Event]:
        """Every step in order; `self.status` tells how the run ended."""
        self.count = max(workers_for(s.spec) for s in self.steps)
        try:
            for step in self.steps:
                if self.stop.is_set():
                    self.status = "interrupted"
                    break
                async for event in self._step(step):
                    yield event
                    if isinstance(event, StepFinished) and event.status != "completed":
                        # A failed step is kept as failed; the sweep goes on with the next.
                        self.status = event.status
        finally:
            await self._shutdown()

    async def _shutdown(self) -> None:
        self._stop_server()
        await asyncio.gather(*(h.close() for h in self.handles), return_exceptions=True)
        for p in self.pumps:
            p.cancel()

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
        n = workers_for(spec)
        await self._use_engine(strategy.engine)
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
            **_engine_field(self.handles[0].engine if handles else {}),
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

    async def _use_engine(self, engine: str) -> None:
        """Workers of the step's engine: a sweep that changes engine changes its workers."""
        if engine == self.engine:
            return
        await asyncio.gather(*(h.close() for h in self.handles), return_exceptions=True)
        for p in self.pumps:
            p.cancel()
        self.inbox = asyncio.Queue()  # the old workers' last frames (their exits) stay behind
        self.handles = await launch_local(self.count, engine)
        self.pumps = [asyncio.create_task(_pump(h, self.inbox)) for h in self.handles]
        self.dead.clear()
        self.engine = engine

    async def _replace_dead(self, needed: int) -> None:
        """A worker that died in an earlier step is replaced before the next one."""
        for index in sorted(i for i in self.dead if i < needed):
            (fresh,) = await launch_local(1, self.engine)
            fresh.index = index
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
        return "completed"

    def _take(
        self, step: Step, tally: _StepTally, worker: int, frame: dict[str, Any] | None
    ) -> list[Event]:
        if worker not in tally.live:
            return []
        if frame is None:
            self.dead.add(worker)
            tally.live.discard(worker)
            tally.done.pop(worker, None)
            message = self.handles[worker].describe_exit()
            return [Notice(self.run_id, step.index, "error", f"worker died: {message}")]
        kind = frame["type"]
        if kind == "armed":
            tally.armed.add(worker)
        elif kind == "interval":
            stats = Stats.from_dict(frame["stats"])
            if frame["index"] < 0:
                tally.tails.append(stats)
            elif not frame["warmup"]:
                tally.pending.setdefault(frame["index"], {})[worker] = stats
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


def _engine_field(engine: dict[str, str]) -> dict[str, Any]:
    """StepStarted's engine (name, version), once StepStarted has that field (CONTRACT)."""
    if "engine" in {f.name for f in dataclasses.fields(StepStarted)}:
        return {"engine": engine}
    return {}
