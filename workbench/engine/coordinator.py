"""The coordinator: starts workers, hands them steps, merges their intervals into events.

Runs in the caller's event loop (the TUI's or the CLI's). Workers report each interval
on their own; an interval event is emitted once every live worker has reported it, with
the workers' histograms merged and the server's latest figures added (polled in the
background, never on the load path). A worker that dies or is lost (a Ray node gone) is
reported as a notice (which, when, how much it had measured) and the step goes on with
the others; the step is then "degraded". A worker on another machine (a Ray actor) whose
intervals stop for `SILENT_INTERVALS` interval lengths (at least `SILENT_AT_LEAST` s)
counts as lost then, without waiting for the cluster to notice that its machine is gone
(when every worker falls silent at once, each gets `SILENT_ALL_AT_LEAST` s).
A step of a set duration never waits for a worker more than `OVERRUN_GRACE` s past its
planned end: one still going then is killed (or, remote, abandoned) and counts as lost
(`workbench.engine.worker_loss`).

Steps come from a list (`events`) or one at a time from a caller that sees each step's
result before choosing the next (`events_from`), as a search for a rate does.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from workbench import __version__
from workbench.engine import frames
from workbench.engine.allocator import map_large_blocks
from workbench.engine.connections import describe as describe_connections
from workbench.engine.hostload import HostMonitor
from workbench.engine.inbox import TICK, inbox_frames, pump
from workbench.engine.launchers import Handle, Launcher, open_launcher
from workbench.engine.machine_watch import MachineWatch
from workbench.engine.native import worker_command
from workbench.engine.serverstats import ServerMonitor
from workbench.engine.step_tally import StepTally, step_failure
from workbench.engine.trace_feed import UNREADABLE
from workbench.engine.worker_loss import WorkerLoss, remote
from workbench.results.events import (
    Event,
    Interval,
    Notice,
    RunStatus,
    StepFinished,
    StepStarted,
)
from workbench.results.metrics import Stats, merged
from workbench.sdk.adapter import ManagedServer
from workbench.sdk.errors import TargetError
from workbench.spec.model import spec_to_dict
from workbench.spec.resolve import ResolvedStep, resolve_step, total_clients, workers_for
from workbench.spec.steps import Step
from workbench.workload.oracle_trace import merge_parts, part_path, warmup_path

# The engine a step ran on, as StepStarted records it (the native engine names itself).
PYTHON_ENGINE = {"name": "python", "version": __version__}


NextStep = Callable[[StepFinished | None], Step | None]
_MANAGED_ACROSS_NODES = (
    "the managed server listens on this machine's loopback: workers on the other nodes "
    "cannot reach it. Across machines, start the server yourself and point the target at "
    "its address (target.allow_remote = true)"
)
# Worst last: a run is as bad as its worst step.
STATUS_RANK = ["completed", "degraded", "interrupted", "failed"]


class Coordinator(WorkerLoss):
    def __init__(
        self,
        run_id: str,
        steps: Iterable[Step],
        stop: asyncio.Event,
        launcher_log: Path | None = None,
    ) -> None:
        self.run_id = run_id
        self.launcher_log = launcher_log  # where a Ray launcher writes Ray's own log lines
        self.steps = steps
        self.stop = stop
        self.handles: list[Handle] = []
        self.engine = "python"  # the engine of the running workers ("python" or "native")
        self.command: list[str] | None = None  # its worker program (None: the Python worker)
        self.launcher: Launcher | None = None  # opened for the first step's load.launcher
        self.inbox: asyncio.Queue[tuple[int, dict[str, Any] | None]] = asyncio.Queue()
        self.pumps: list[asyncio.Task[None]] = []
        self.server: ManagedServer | None = None
        self.hosts: HostMonitor | None = None  # the load machines' CPU, with workers elsewhere
        # The hiccup meters (this machine's, the Ray nodes'): a slice wakes the loop.
        self.machine = MachineWatch(lambda: self.inbox.put_nowait((TICK, None)))
        self.status: RunStatus = "completed"
        self.dead: set[int] = set()
        map_large_blocks()  # histograms freed back to the kernel: a long run stays flat

    async def events(self) -> AsyncIterator[Event]:
        """Every step of the list in order; `self.status` tells how the run ended."""
        steps = iter(self.steps)
        async for event in self.events_from(lambda _last: next(steps, None)):
            yield event

    async def events_from(self, next_step: NextStep) -> AsyncIterator[Event]:
        """Steps one at a time: `next_step` sees the last StepFinished (None at first)."""
        last: StepFinished | None = None
        abandoned = True
        try:
            while (step := next_step(last)) is not None:
                if self.stop.is_set():
                    self.status = "interrupted"
                    break
                async for event in self.run_step(step):
                    yield event
                    if isinstance(event, StepFinished):
                        last = event
                        # A failed step is kept as failed; the sweep goes on with the next.
                        self.status = max(self.status, event.status, key=STATUS_RANK.index)
            abandoned = False
        finally:
            await self._shutdown(abandon=abandoned)

    async def _shutdown(self, *, abandon: bool) -> None:
        """Close the workers; abandoned (cancelled, second Ctrl-C): kill them at once."""
        self._stop_server()
        await self.machine.close(abandon=abandon)
        if abandon:
            for h in self.handles:
                h.kill()
        else:
            await asyncio.gather(*(h.close() for h in self.handles), return_exceptions=True)
        for p in self.pumps:
            p.cancel()
        if self.launcher is not None:
            await self.launcher.close()

    def _stop_server(self) -> None:
        if self.server is not None:
            with contextlib.suppress(Exception):
                self.server.stop()
            self.server = None

    async def run_step(self, step: Step) -> AsyncIterator[Event]:
        """One step: its StepStarted, intervals and notices, then exactly one StepFinished."""
        try:
            resolved, server_info = await self._setup(step)
        except TargetError as exc:
            yield Notice(self.run_id, step.index, "error", str(exc))
            yield StepFinished(self.run_id, step.index, "failed", Stats(), str(exc))
            return
        monitor = ServerMonitor(self.server, step.spec.load.interval / 2)
        try:
            opening = self.launcher is None
            launcher = await self._launcher(step)
            if opening and launcher.log_path is not None:
                text = f"Ray's own log lines go to {launcher.log_path}"
                yield Notice(self.run_id, step.index, "info", text)
            n = workers_for(step.spec, launcher.cpus)
            await self._use_engine(resolved.engine)
            await self._ensure_workers(n)
            started = self._started(step, resolved, server_info, n)
            yield started
            if step.spec.target.managed and len(started.nodes) > 1:
                yield Notice(self.run_id, step.index, "warning", _MANAGED_ACROSS_NODES)
            monitor.watch(
                resolved.system,
                resolved.strategy,
                resolved.connect_options,
                resolved.strategy_options,
            )
            self._watch_hosts(step, started)
            tally = StepTally(live={h.index for h in self.handles[:n]})
            local = [h for h in self.handles[:n] if not remote(h)]
            tally.hiccups = await self.machine.step(step.spec, resolved, self.server, local)
            handles = self.handles[:n]
            read = (lambda: launcher.hiccups(handles)) if started.nodes else None
            self.machine.watch_nodes(tally.hiccups, read)
            await self._order(step, resolved, n)
            try:
                async for event in self._collect(step, tally, monitor):
                    yield event
            finally:
                self.machine.step_ended()
            final_figures = await monitor.refresh()
            if trace := step.spec.workload.trace_out:
                parts = [part_path(trace, i) for i in range(n)]
                await asyncio.to_thread(merge_parts, parts, trace)
                warm = [warmup_path(p) for p in parts]
                await asyncio.to_thread(merge_parts, warm, warmup_path(trace))
        except BaseException:  # cancelled (abandoned) or closed: nothing waits any more
            monitor.cancel()
            if self.hosts is not None and self.hosts.task is not None:
                self.hosts.task.cancel()
            self._stop_server()
            raise
        await monitor.close()
        if self.hosts is not None:
            await self.hosts.close()
        self._stop_server()
        for event in self._finished(step, tally, final_figures):
            yield event

    async def _setup(self, step: Step) -> tuple[ResolvedStep, dict[str, Any]]:
        """The step's resolved target, pointed at its managed server once that is started;
        and what the server is (pid, version, address), if it is managed."""
        resolved = step.resolved or resolve_step(step.spec)
        server = resolved.system.server
        if not resolved.managed or server is None:
            return resolved, {}
        self.server = await asyncio.to_thread(server.start, resolved.server_options)
        info = {
            "pid": self.server.pid,
            "version": self.server.version,
            **{k: str(v) for k, v in self.server.target_options.items()},
        }
        if build := getattr(self.server, "build", ()):  # how it was built, for reports
            info["build"] = list(build)
        return resolved.with_server(self.server.target_options), info

    def _started(
        self, step: Step, resolved: ResolvedStep, server_info: dict[str, Any], workers: int
    ) -> StepStarted:
        return StepStarted(
            self.run_id,
            step.index,
            step.title,
            step.label,
            spec_to_dict(step.spec),
            workers=workers,
            clients=total_clients(step.spec),
            server=server_info,
            system=resolved.system.name,
            strategy=resolved.strategy.name,
            system_options=resolved.system_options,
            strategy_options=resolved.strategy_options,
            server_options=resolved.server_options,
            # The engine the workers named in their ready frame (python until one says), and
            # whether the system has a native strategy (the verdict's advice may offer it).
            engine={
                **dict(
                    (getattr(self.handles[0], "engine", None) if workers else None) or PYTHON_ENGINE
                ),
                "native_available": any(s.engine == "native" for s in resolved.system.strategies),
            },
            allow_remote=resolved.allow_remote,
            nodes=self._launcher_now().nodes(self.handles[:workers]),
            connections=describe_connections(
                resolved.system.name,
                resolved.strategy.name,
                resolved.strategy_options,
                total_clients(step.spec),
                workers,
                resolved.system_options,
            ),
            facts=resolved.facts,
        )

    async def _order(self, step: Step, resolved: ResolvedStep, n: int) -> None:
        for h in self.handles[:n]:
            await h.send(frames.StepOrder.for_worker(step.spec, resolved, n, h.index).frame())

    def _watch_hosts(self, step: Step, started: StepStarted) -> None:
        """Poll the load machines' CPU when workers run on other machines (Ray nodes)."""
        self.hosts = None
        if not started.nodes:
            return
        handles = self.handles[: started.workers]
        workers = {
            node["host"]: [str(i) for i in node.get("worker_indices", [])] for node in started.nodes
        }
        launcher = self._launcher_now()
        self.hosts = HostMonitor(
            lambda: launcher.host_times(handles), workers, step.spec.load.interval / 2
        )
        self.hosts.start()

    async def _launcher(self, step: Step) -> Launcher:
        if self.launcher is None:
            self.launcher = await open_launcher(step.spec.load, self.launcher_log)
        return self.launcher

    def _launcher_now(self) -> Launcher:
        assert self.launcher is not None
        return self.launcher

    async def _use_engine(self, engine: str) -> None:
        """Workers of the step's engine: a sweep that changes engine changes its workers."""
        if engine == self.engine:
            return
        await asyncio.gather(*(h.close() for h in self.handles), return_exceptions=True)
        for p in self.pumps:
            p.cancel()
        self.inbox = asyncio.Queue()  # the old workers' last frames (their exits) stay behind
        self.handles, self.pumps = [], []
        self.dead.clear()
        self.engine = engine
        self.command = worker_command(engine) if engine != "python" else None

    async def _ensure_workers(self, needed: int) -> None:
        """Enough live workers for the step: dead ones replaced, missing ones started."""
        launcher = self._launcher_now()
        for index in sorted(i for i in self.dead if i < needed):
            (fresh,) = await launcher.launch(1, first_index=index, command=self.command)
            self.handles[index] = fresh
            self.pumps.append(asyncio.create_task(pump(fresh, self.inbox)))
            self.dead.discard(index)
        if len(self.handles) < needed:
            fresh_ones = await launcher.launch(
                needed - len(self.handles), first_index=len(self.handles), command=self.command
            )
            self.handles += fresh_ones
            self.pumps += [asyncio.create_task(pump(h, self.inbox)) for h in fresh_ones]

    async def _collect(
        self, step: Step, tally: StepTally, monitor: ServerMonitor
    ) -> AsyncIterator[Event]:
        """Frames until every live worker is done; intervals as soon as all reported them."""
        handles = [self.handles[i] for i in sorted(tally.live)]
        go_sent = False
        load = step.spec.load
        watched = (load.duration and load.ops is None) or any(remote(h) for h in handles)
        tick = load.interval / 2 if watched else None
        async for worker, frame in inbox_frames(self.inbox, self.stop, tally, handles, tick):
            if worker != TICK:
                for event in self._take(step, tally, worker, frame):
                    yield event
            for event in self._silent(step, tally):
                yield event
            for event in self._overrun(step, tally):
                yield event
            if not go_sent and tally.armed >= tally.live - set(tally.done):
                go_sent = True
                tally.go_at = time.monotonic()
                start = await self._go(step, handles, monitor)
                if tally.hiccups is not None and not load.warmup_ops:
                    tally.hiccups.begins(start + load.warmup)
            for event in self._complete_intervals(step, tally, monitor):
                yield event
        if tally.pending and tally.hiccups is not None:  # the meters' last slices, briefly
            await self.machine.through(tally.hiccups, list(tally.elapsed.values()))
        for event in self._complete_intervals(step, tally, monitor, force=True):
            yield event

    async def _go(self, step: Step, handles: list[Handle], monitor: ServerMonitor) -> float:
        """Every worker starts at the same instant, a little ahead (frames.GO_LEAD): that
        instant (wall clock) is returned."""
        start = time.time() + frames.GO_LEAD
        for h in handles:
            await h.send(frames.go(start))
        # After an op-budget warm-up only the workers know when measuring began: the first
        # merged interval begins the server's CPU count instead (ServerMonitor.sample).
        if not step.spec.load.warmup_ops:
            warmup = step.spec.load.warmup
            asyncio.get_running_loop().call_later(frames.GO_LEAD + warmup, monitor.begin)
            if self.hosts is not None:
                asyncio.get_running_loop().call_later(frames.GO_LEAD + warmup, self.hosts.begin)
        return start

    def _finished(self, step: Step, tally: StepTally, figures: dict[str, Any]) -> list[Event]:
        total = merged([tally.total], concurrent=False)
        if tally.emitted:
            # The sums and averages over the intervals win over the last interval's values
            # that merging kept; the final reading's statistics win over both.
            total.server = total.server | tally.server.figures() | figures
        status = self._step_status(tally)
        reason = ""
        if status in ("completed", "degraded"):
            reason = tally.unreadable or step_failure(total)
            status = "failed" if reason else status
        elif status == "failed":
            # Workers that failed alike (a server that is not running) say it once.
            reason = "; ".join(dict.fromkeys(tally.errors)) or "no worker measured anything"
        events: list[Event] = []
        if reason:
            events.append(Notice(self.run_id, step.index, "error", f"step failed: {reason}"))
        events.append(StepFinished(self.run_id, step.index, status, total, reason))  # type: ignore[arg-type]
        return events

    def _step_status(self, tally: StepTally) -> str:
        if tally.stop_sent:
            return "interrupted"
        if not tally.emitted and (tally.errors or not tally.live):
            return "failed"
        if "failed" in tally.done.values() and not tally.emitted:
            return "failed"
        if tally.lost:
            return "degraded"  # measured, but without the workers that were lost
        return "completed"

    def _take(
        self, step: Step, tally: StepTally, worker: int, frame: dict[str, Any] | None
    ) -> list[Event]:
        if worker not in tally.live:
            return []
        if frame is None:
            self.dead.add(worker)
            tally.live.discard(worker)
            if worker in tally.done or tally.stop_sent:  # finished, or killed after a stop
                tally.done.pop(worker, None)
                message = self.handles[worker].describe_exit()
                return [Notice(self.run_id, step.index, "error", f"worker died: {message}")]
            tally.lost.add(worker)
            return [Notice(self.run_id, step.index, "error", self._lost(step, tally, worker))]
        kind = frame["type"]
        if kind == frames.ARMED:
            tally.armed.add(worker)
        elif kind == frames.INTERVAL:
            stats = Stats.from_dict(frame["stats"])
            index = frame["index"]
            if not frame["warmup"]:
                tally.pending.setdefault(index, {})[worker] = stats
                if frame.get("polled"):
                    key = next(iter(stats.cpu), str(worker))
                    tally.polled.setdefault(index, {})[key] = float(frame["polled"])
                intervals, ops = tally.measured.get(worker, (0, 0))
                tally.measured[worker] = (intervals + 1, ops + stats.ops)
                tally.elapsed[index] = max(tally.elapsed.get(index, 0.0), frame["elapsed"])
                now = time.monotonic()
                if not tally.heard:  # the measured phase began: the silence of all counts now
                    tally.heard = dict.fromkeys(tally.live, now)
                    tally.began = now - frame["elapsed"]
                    if tally.hiccups is not None:  # after an op-budget warm-up: from here
                        tally.hiccups.begins(time.time() - frame["elapsed"])
                tally.heard[worker] = now
                tally.last_elapsed[worker] = frame["elapsed"]
                tally.last_index[worker] = index
        elif kind == frames.ERROR:
            said = frame["message"] in tally.errors
            tally.errors.append(frame["message"])
            if frame.get("kind") == UNREADABLE:
                tally.unreadable = tally.unreadable or frame["message"]
            if said:  # workers that fail alike (a server that is not running) say it once
                return []
            text = f"worker {worker}: {frame['message']}"
            return [Notice(self.run_id, step.index, "error", text)]
        elif kind == frames.STEP_DONE:
            tally.done[worker] = frame["status"]
        return []

    def _complete_intervals(
        self, step: Step, tally: StepTally, monitor: ServerMonitor, force: bool = False
    ) -> list[Event]:
        """Intervals every live worker has reported (or all, once every worker is done),
        each once the hiccup meter has reported up to its end (`force`: whatever it has)."""
        events: list[Event] = []
        for index in sorted(tally.pending):
            parts = tally.pending[index]
            if not tally.finished and not tally.live <= set(parts):
                break
            meter = tally.hiccups
            if not force and meter is not None and not meter.ready(tally.elapsed[index]):
                self.machine.waiting = True  # its next slice wakes the loop
                break
            stats = merged(parts.values(), concurrent=True)
            stats.server = {**stats.server, **monitor.sample()}
            if polled := tally.polled.pop(index, None):
                stats.server["idle_poll"] = {k: round(v, 6) for k, v in polled.items()}
            if self.hosts is not None and (hosts := self.hosts.sample()):
                stats.server["hosts"] = hosts
            del tally.pending[index]
            elapsed = tally.elapsed.pop(index)
            if meter is not None:
                meter.attach(stats, elapsed)
            tally.emitted += 1
            tally.total.merge(stats, concurrent=False)
            tally.server.add(stats)
            events.append(Interval(self.run_id, step.index, index, elapsed, stats))
        return events
