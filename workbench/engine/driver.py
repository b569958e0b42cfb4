"""One step in one worker: connect, prefill, start the clients, warm up, measure, report.

The measured phase follows the interval grid of docs/frames.md: boundaries at
begin + k * interval, the same instants on every worker because every worker converts
the coordinator's start time to its own clock. Each interval is sent as soon as its end
is reached; the time spent waiting for ops still unanswered after the end is not
measured time.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from workbench.engine import frames
from workbench.engine.accounting import ABANDONED, Buffers, to_stats
from workbench.engine.client_plans import ClientPlan, Workload, client_plans, mixes
from workbench.engine.clients import LoadState, PubSubPlan, async_client, subscriber, thread_client
from workbench.engine.frames import StepOrder
from workbench.engine.timer import Wakeups
from workbench.engine.trace_feed import MAX_TRACE_VALUE, UNREADABLE, TraceFeed
from workbench.engine.trace_keys import TraceKeys
from workbench.results.metrics import Stats
from workbench.sdk.adapter import Connection
from workbench.sdk.ops import PUBLISH, SET
from workbench.workload.forms import max_value_size, parse_mix, parse_value_size
from workbench.workload.generator import ValueBuffer, share
from workbench.workload.keys import format_key, owned_keys
from workbench.workload.oracle_trace import triples, warmup_path, write_part

Send = Callable[[dict[str, Any]], None]
STRAGGLER_WAIT = 2.0  # at most this long (or one interval) for ops unanswered at the end
CLOSE_WAIT = 2.0  # closing a step's clients and connection takes at most this long


def _cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


@dataclass
class _Span:
    """An interval taken off the clients but perhaps not sent yet (see `_measure`)."""

    index: int
    begin: float  # seconds since the measured phase began
    end: float
    bufs: list[Buffers]
    cpu: float  # CPU seconds this process used in it
    moved: int = 0  # Redis Cluster redirections the connection followed (`redirects`)
    ask: int = 0


class StepRun:
    """One step in one worker: prepare (armed), then run once the start time comes."""

    def __init__(self, ctx: StepOrder, send: Send) -> None:
        self.ctx = ctx
        self.send = send
        self.state = LoadState()
        self.stop_requested = asyncio.Event()
        self.tasks: list[asyncio.Future[Any]] = []
        self.clients: list[Any] = []
        self.sub_clients: list[Any] = []
        self.subs: list[asyncio.Task[None]] = []
        self.conn: Connection | None = None
        self.threads: ThreadPoolExecutor | None = None
        self.plans: list[ClientPlan] = []
        self.feed: TraceFeed | None = None  # replaying a trace (workload.trace)

    def stop(self) -> None:
        self.stop_requested.set()
        self.state.phase_over.set()

    async def prepare(self) -> None:
        """Connect, make every client, prefill, and start every client loop (held at begin)."""
        ctx, spec = self.ctx, self.ctx.spec
        self.state.loop = asyncio.get_running_loop()
        resolved = ctx.resolved
        self.conn = await resolved.strategy.connect(
            resolved.connect_options, resolved.strategy_options
        )
        self.plans = client_plans(spec, ctx.worker, ctx.workers)
        self.values = ValueBuffer(
            max(
                max_value_size(parse_value_size(spec.workload.value_size)),
                spec.workload.pubsub.message_size,
                MAX_TRACE_VALUE if spec.workload.trace is not None else 0,
            ),
            spec.seed,
        )
        if spec.workload.trace is not None:
            self.feed = self._trace_feed()
        self.workload = Workload(spec, ctx.worker, ctx.workers, resolved.shared, self.values)
        self.clients = [await self.conn.client() for _ in self.plans]
        if (open_pool := getattr(self.conn, "open_pool", None)) is not None:
            await open_pool(len(self.clients))
        timed = spec.workload.trace is not None and spec.workload.trace.speed > 0
        if (spec.load.rate or timed) and not resolved.blocking:
            self.state.wakeups = Wakeups.create(self.state.loop)
        if ctx.trace_part:
            self.state.trace = []
        if spec.workload.prefill:
            await self._prefill()
        self._start_clients()
        self.subs = await self._start_subscribers()

    def _trace_feed(self) -> TraceFeed:
        state, resolved = self.state, self.ctx.resolved
        loop = state.loop
        assert loop is not None

        def skipped(what: str) -> None:
            with state.lock:
                state.buf.skip(what)

        def done() -> None:  # the trace ends the step: as a spent budget does
            loop.call_soon_threadsafe(state.phase_over.set)

        def warm_over() -> None:  # the warm-up's trace time is reached by every client
            loop.call_soon_threadsafe(state.phase_over.set)

        return TraceFeed(
            self.ctx.spec,
            [p.client_id for p in self.plans],
            self.ctx.spec.load.concurrency,  # workload.groups are refused with a trace
            frozenset(resolved.strategy.operations),
            TraceKeys.of(resolved.system.keys),
            skipped,
            done,
            warm_over,
        )

    async def _prefill(self) -> None:
        wl = self.ctx.spec.workload
        sizes = self.workload.stream(ClientPlan(-1, {SET: 1.0})).next_size
        if self.ctx.resolved.shared:  # one server: the workers split the key space in ranges
            base, extra = divmod(wl.keys, self.ctx.workers)
            w = self.ctx.worker
            offset = w * base + min(w, extra)
            keys = list(range(offset, offset + base + (1 if w < extra else 0)))
        else:  # a cache in each worker: it fills the keys it owns
            keys = list(owned_keys(wl.keys, self.ctx.worker, self.ctx.workers))
        lanes = max(1, min(len(self.clients), 64))

        async def fill(client: Any, part: list[int]) -> None:
            for i in part:
                if self.stop_requested.is_set():  # a stop during start-up ends the prefill
                    return
                key = format_key(wl.key_prefix, i, wl.key_length)
                if self.ctx.resolved.blocking:
                    await asyncio.to_thread(client.set, key, self.values.value(i, sizes()), None)
                else:
                    await client.set(key, self.values.value(i, sizes()), None)

        await asyncio.gather(*(fill(self.clients[j], keys[j::lanes]) for j in range(lanes)))

    def _start_clients(self) -> None:
        """Every client loop (and thread) exists before the load begins; each waits for it."""
        ps = self.ctx.spec.workload.pubsub
        pubsub = PubSubPlan(
            [f"wb:ch:{i}".encode() for i in range(ps.channels)],
            ps.subscribers_per_channel,
            ps.message_size,
        )
        blocking = self.ctx.resolved.blocking
        if blocking and self.plans:
            # One thread per blocking client: the loop's default pool has only
            # min(32, cores + 4) threads and would silently cap the concurrency.
            self.threads = ThreadPoolExecutor(len(self.plans), thread_name_prefix="wb-client")
        for plan, client in zip(self.plans, self.clients, strict=True):
            stream = self.feed.stream(plan.client_id) if self.feed else self.workload.stream(plan)
            if self.threads is not None:
                args = (client, stream, self.values, self.state, plan)
                loop_ = self.state.loop
                assert loop_ is not None
                self.tasks.append(loop_.run_in_executor(self.threads, thread_client, *args))
            else:
                n = len(self.plans)
                loop = async_client(client, stream, self.values, self.state, plan, pubsub, n)
                self.tasks.append(asyncio.ensure_future(loop))

    async def _start_subscribers(self) -> list[asyncio.Task[None]]:
        spec = self.ctx.spec
        if not any(PUBLISH in parse_mix(m) for m in mixes(spec)):
            return []
        ps = spec.workload.pubsub
        slots = [(c, s) for c in range(ps.channels) for s in range(ps.subscribers_per_channel)]
        if self.ctx.resolved.shared:  # one set of subscribers in all, dealt among the workers
            slots = slots[self.ctx.worker :: self.ctx.workers]
        ready = asyncio.Event()
        counter = [0]
        subs = []
        conn = self.conn
        assert conn is not None  # opened before any subscriber starts
        for c, _ in slots:
            client = await conn.client()
            self.sub_clients.append(client)
            channel = f"wb:ch:{c}".encode()
            job = subscriber(client, channel, self.state, ready, counter, len(slots))
            subs.append(asyncio.create_task(job))
        if slots:
            await asyncio.wait_for(ready.wait(), timeout=10)
        return subs

    async def run(self, go: Awaitable[float | None]) -> str:
        """Run the armed step from the start `go` names (a perf_counter time, None: now)."""
        self.send(frames.armed())
        start = await go
        if self.stop_requested.is_set():
            self.state.halt()
            return "interrupted"
        start = time.perf_counter() if start is None else start
        await asyncio.sleep(max(0.0, start - time.perf_counter()))
        status = await self._warm_and_measure(start)
        if self.feed is not None and self.feed.failure:
            self.send(frames.error(UNREADABLE, self.feed.failure, ""))
            status = "failed"
        if (trace := self.state.trace) is not None:
            part, state = self.ctx.trace_part, self.state
            await asyncio.to_thread(write_part, part, triples(trace))
            await asyncio.to_thread(write_part, warmup_path(part), triples(state.warm_trace))
        return status

    async def _warm_and_measure(self, start: float) -> str:
        spec, load = self.ctx.spec, self.ctx.spec.load
        n_all = sum(g.concurrency for g in spec.workload.groups) or load.concurrency
        warm_ops = share(load.warmup_ops, len(self.plans), n_all)
        measured_ops = share(load.ops, len(self.plans), n_all)
        begin = start
        # A replay's warm-up may be the trace's first seconds: it ends when the feed says so.
        by_trace = self.feed is not None and self.feed.warming
        if warm_ops or load.warmup > 0 or by_trace:
            self._enter_phase(warm_ops, warmup=True)
            self.state.begin(int(start * 1e9))
            by_count = warm_ops or by_trace
            timeout = None if by_count else start + load.warmup - time.perf_counter()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.state.phase_over.wait(), timeout)
            begin = time.perf_counter() if by_count else start + load.warmup
        if self.stop_requested.is_set():
            await self._end_load()
            return "interrupted"
        self.state.measured_from_ns = int(begin * 1e9)  # before the phase: see phase_of
        self._enter_phase(measured_ops, warmup=False)
        self.state.begin(int(start * 1e9))  # no-op after a warm-up: the clients run already
        self._measure_begin_ns = int(begin * 1e9)
        if not measured_ops and load.duration is not None:
            self.state.end_ns = int((begin + load.duration) * 1e9)
        await self._measure(begin, None if measured_ops else load.duration)
        return "interrupted" if self.stop_requested.is_set() else "completed"

    def _enter_phase(self, ops: int | None, *, warmup: bool) -> None:
        state = self.state
        with state.lock:  # budget and buffer change together: a reserved op lands in this phase
            state.remaining = ops if ops else None
            state.budget_stops = not warmup
            state.buf = Buffers() if warmup else state.early
            state.early = Buffers()
            state.phase += 1
            state.measuring = not warmup
        self._redirects()  # those of the phase before are not this phase's
        if not self.stop_requested.is_set():
            state.phase_over.clear()
        if self.feed is not None and self.feed.done.is_set():
            state.phase_over.set()  # the trace ended in the warm-up: nothing left to measure
        if self.feed is not None and not warmup:
            self.feed.release()  # clients waiting at a warm-up's trace time go on

    def _boundaries(self, seconds: float | None) -> Iterator[float]:
        """Interval ends (s since the phase began): the fold rule's grid, or endless."""
        interval = self.ctx.spec.load.interval
        if seconds is not None:
            yield from frames.interval_ends(seconds, interval)
            return
        k = 1
        while True:
            yield k * interval
            k += 1

    async def _measure(self, begin: float, seconds: float | None) -> None:
        """Send each interval at its end; the phase ends at `seconds`, a spent budget or stop.

        With an op budget the end is not known beforehand, so an interval is held until
        half an interval after its end: a phase ending before then folds its tail into it.
        """
        interval = self.ctx.spec.load.interval
        self._cpu_mark = _cpu_seconds()
        held: _Span | None = None
        last = 0.0
        for index, end in enumerate(self._boundaries(seconds)):
            if held is not None:
                if await self._wait_until(begin + held.end + interval / 2):
                    await self._end_early(begin, held)
                    return
                await self._send(held)
                held = None
            if await self._wait_until(begin + end):
                await self._end_early(begin, _Span(index, last, last, [], 0.0))
                return
            final = seconds is not None and end >= seconds - 1e-9
            if final:
                await self._end_load()
            span = self._take(_Span(index, last, end, [], 0.0))
            last = end
            if seconds is None:
                held = span
                continue
            await self._send(span)
            if final:
                return

    async def _end_early(self, begin: float, span: _Span) -> None:
        """The phase ended now (stop, or budget spent): the rest goes into `span`, then sent."""
        span.end = time.perf_counter() - begin
        await self._end_load()
        await self._send(self._take(span))

    def _take(self, span: _Span) -> _Span:
        """Swap what the clients recorded into `span`, with the CPU used since the last take."""
        with self.state.lock:
            buf, self.state.buf = self.state.buf, Buffers()
        now = _cpu_seconds()
        span.bufs.append(buf)
        span.cpu += now - self._cpu_mark
        self._cpu_mark = now
        moved, ask = self._redirects()
        span.moved += moved
        span.ask += ask
        return span

    def _redirects(self) -> tuple[int, int]:
        """MOVED and ASK redirections since the last call, when the connection counts them."""
        read = getattr(self.conn, "redirects", None)
        return read() if read is not None else (0, 0)

    async def _send(self, span: _Span) -> None:
        stats = Stats()
        trace = self.ctx.spec.workload.trace
        paced = self.ctx.spec.load.rate is not None or (trace is not None and trace.speed > 0)
        for buf in span.bufs:
            stats.merge(await to_stats(buf, 0.0, paced=paced), concurrent=False)
        stats.duration = span.end - span.begin
        stats.cpu = {str(self.ctx.worker): span.cpu}
        stats.offered = self._offered(span.begin, span.end)
        stats.moved, stats.ask = span.moved, span.ask
        if not self.ctx.resolved.shared:  # the system lives in this worker: only it can report it
            stats.server = await self._server_stats()
        self.send(frames.interval(span.index, span.end, stats))

    def _offered(self, begin_s: float, end_s: float) -> int:
        start_ns = self.state.start_ns
        a = self._measure_begin_ns + int(begin_s * 1e9)
        b = self._measure_begin_ns + int(end_s * 1e9)
        if self.feed is not None and self.feed.speed > 0:  # a timed replay: the trace's times
            before = self.feed.due_before(a - start_ns)  # asked in growing order
            return self.feed.due_before(b - start_ns) - before
        if not self.plans or self.plans[0].period_ns is None:
            return 0
        return sum(p.offered(start_ns, a, b) for p in self.plans)

    async def _wait_until(self, when: float) -> bool:
        """Sleep until `when` (perf_counter s); True if the phase ended first."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                self.state.phase_over.wait(), timeout=max(0.0, when - time.perf_counter())
            )
        return self.state.phase_over.is_set()

    async def _end_load(self) -> None:
        """Stop the clients; wait (bounded) for ops in flight, which land in the last interval.

        What is still unanswered then is counted as abandoned, and anything that answers
        later is not recorded (the phase moves on). Pub/sub deliveries still on their way
        are awaited too: they land in the last interval as well, so the step's deliveries
        are the sum of its intervals'.
        """
        state = self.state
        state.halt()
        bound = min(STRAGGLER_WAIT, self.ctx.spec.load.interval)
        deadline = time.perf_counter() + bound
        while state.in_flight > 0 and time.perf_counter() < deadline:
            await asyncio.sleep(0.001)
        with state.lock:
            abandoned = state.in_flight
            if abandoned:
                state.buf.count_error(
                    ABANDONED, f"{abandoned} op(s) unanswered {bound:g}s after the end", abandoned
                )
            state.phase += 1  # answers still to come are not recorded
        for t in self.tasks:
            if isinstance(t, asyncio.Task):
                t.cancel()
        if self.subs:
            await self._await_deliveries()

    async def _await_deliveries(self) -> None:
        """Wait until no delivery came for 0.3 s (at most `frames.DELIVERY_WAIT`)."""
        quiet, last = 0, -1
        for _ in range(int(frames.DELIVERY_WAIT / 0.1)):
            delivered = self.state.buf.delivered
            quiet = quiet + 1 if delivered == last else 0
            if quiet >= 3:
                break
            last = delivered
            await asyncio.sleep(0.1)

    async def close(self) -> None:
        """Close clients and connection, bounded: a stalled server cannot hold the worker."""
        self.state.halt()
        for t in self.tasks:
            if isinstance(t, asyncio.Task) and not t.done():
                t.cancel()
        for t in self.subs:
            t.cancel()

        async def close_client(client: Any) -> None:
            result = client.close()
            if asyncio.iscoroutine(result):
                await result

        jobs = [close_client(c) for c in (*self.clients, *self.sub_clients)]
        if self.conn is not None:
            jobs.append(self.conn.close())
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*jobs, return_exceptions=True), CLOSE_WAIT)
        if self.threads is not None:
            self.threads.shutdown(wait=False, cancel_futures=True)
        if self.state.wakeups is not None:
            self.state.wakeups.close()
            self.state.wakeups = None

    async def _server_stats(self) -> dict[str, Any]:
        if self.conn is None:
            return {}
        try:
            return await asyncio.wait_for(self.conn.server_stats(), timeout=2)
        except Exception:
            return {}
