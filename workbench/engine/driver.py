"""The load loop of one worker: virtual clients, the stopwatch, and interval accounting.

Adapters only do I/O. Here each operation is stamped with `perf_counter_ns()` before and
after (or, in open loop, latency runs from the intended start time, correcting for
coordinated omission), and the duration is appended to a plain list. Once per interval
the lists are swapped out and folded into histograms in small chunks, so that folding
never stalls the operations in flight for long.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from workbench.adapter import Connection, Strategy, error_kind
from workbench.metrics import Stats, fold, new_histogram
from workbench.spec.model import Spec
from workbench.workload import (
    CACHE_ASIDE,
    DELETE,
    GET,
    PUBLISH,
    SET,
    OpStream,
    ValueBuffer,
    format_key,
    max_value_size,
    parse_key_distribution,
    parse_mix,
    parse_ttl,
    parse_value_size,
    partition,
)

DELIVER = 5
KIND_NAMES = {GET: "get", SET: "set", DELETE: "delete", PUBLISH: "publish", DELIVER: "deliver"}
YIELD_EVERY = 64  # ops between forced loop turns, so in-process adapters cannot starve timers
ERROR_PAUSE = 0.001  # a client pauses after an error so a dead server cannot spin the CPU
FOLD_CHUNK = 4096
_STAMP = struct.Struct("<qq")  # publish time (perf_counter_ns), sequence << 1 | measured

Send = Callable[[dict[str, Any]], None]


class Buffers:
    """What clients record during one interval; swapped out whole at the interval's end."""

    __slots__ = (
        "bytes_in",
        "bytes_out",
        "delivered",
        "errors",
        "expected",
        "first_errors",
        "hits",
        "hot_gets",
        "hot_hits",
        "lat",
        "misses",
        "published",
    )

    def __init__(self) -> None:
        self.lat: list[list[int]] = [[] for _ in range(6)]
        self.hits = self.misses = self.bytes_in = self.bytes_out = 0
        self.published = self.delivered = self.expected = 0
        self.hot_gets = self.hot_hits = 0
        self.errors: dict[str, int] = {}
        self.first_errors: dict[str, str] = {}

    def error(self, exc: BaseException) -> None:
        kind = error_kind(exc)
        self.errors[kind] = self.errors.get(kind, 0) + 1
        if kind not in self.first_errors:
            self.first_errors[kind] = f"{type(exc).__name__}: {exc}"[:300]


async def to_stats(buf: Buffers, duration: float) -> Stats:
    """Fold a swapped-out buffer into Stats, yielding to the loop between chunks."""
    stats = Stats(
        duration=duration,
        hits=buf.hits,
        misses=buf.misses,
        errors=buf.errors,
        first_errors=buf.first_errors,
        bytes_in=buf.bytes_in,
        bytes_out=buf.bytes_out,
        published=buf.published,
        delivered=buf.delivered,
        expected_deliveries=buf.expected,
        hot_gets=buf.hot_gets,
        hot_hits=buf.hot_hits,
    )
    for code, values in enumerate(buf.lat):
        if not values:
            continue
        hist = new_histogram()
        for i in range(0, len(values), FOLD_CHUNK):
            fold(hist, values[i : i + FOLD_CHUNK])
            await asyncio.sleep(0)
        stats.hist[KIND_NAMES[code]] = hist
    return stats


@dataclass
class ClientPlan:
    """One virtual client of this worker: its global id, its op mix, its pace."""

    client_id: int
    mix: dict[int, float]
    period_ns: int | None  # open loop: time between intended starts


@dataclass
class LoadState:
    running: bool = True
    buf: Buffers = field(default_factory=Buffers)
    remaining: int | None = None  # ops left in the current phase, when counted
    phase: int = 0  # warm-up, measured...: bumped with the budget, under the lock
    measuring: bool = False  # in the measured phase (not warm-up)
    early: Buffers = field(default_factory=Buffers)  # measured deliveries seen during warm-up
    phase_over: asyncio.Event = field(default_factory=asyncio.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    loop: asyncio.AbstractEventLoop | None = None
    # In the measured phase a spent budget stops the clients; in warm-up it only ends the phase.
    budget_stops: bool = False

    def reserve(self) -> bool:
        """Take one op from the phase budget before issuing it; False: do not issue it."""
        self.remaining -= 1  # type: ignore[operator]
        if self.remaining == 0 and self.loop is not None:
            self.loop.call_soon_threadsafe(self.phase_over.set)
        return self.remaining >= 0 or not self.budget_stops


@dataclass
class Workload:
    """Everything a client needs to make its op stream, parsed once per step."""

    spec: Spec
    worker: int
    workers: int
    shared: bool
    values: ValueBuffer

    def stream(self, plan: ClientPlan) -> OpStream:
        wl = self.spec.workload
        offset, count = (
            (0, wl.keys) if self.shared else partition(wl.keys, self.workers, self.worker)
        )
        return OpStream(
            mix=plan.mix,
            key_dist=parse_key_distribution(wl.key_distribution),
            keys=max(count, 1),
            key_offset=offset,
            key_prefix=wl.key_prefix,
            key_length=wl.key_length,
            value_size=parse_value_size(wl.value_size),
            ttl=parse_ttl(wl.ttl),
            seed=self.spec.seed,
            client_id=plan.client_id,
        )


def client_plans(spec: Spec, worker: int, workers: int) -> list[ClientPlan]:
    """This worker's share of the virtual clients (global ids dealt round-robin)."""
    groups = spec.workload.groups
    entries: list[dict[int, float]] = []
    if groups:
        for g in groups:
            entries += [parse_mix(g.mix)] * g.concurrency
    else:
        entries = [parse_mix(spec.workload.mix)] * spec.load.concurrency
    period = None
    if spec.load.rate:
        period = int(1e9 * len(entries) / spec.load.rate)
    return [ClientPlan(i, mix, period) for i, mix in enumerate(entries) if i % workers == worker]


async def async_client(
    client: Any,
    stream: OpStream,
    values: ValueBuffer,
    state: LoadState,
    plan: ClientPlan,
    channels: list[bytes],
    subs_per_channel: int,
    message_size: int = 64,
) -> None:
    perf = time.perf_counter_ns
    nxt = stream.next
    value = values.view
    spread = values.SPREAD
    period = plan.period_ns
    hot_end = stream.hot_end
    intended = perf()
    count = 0
    seq = 0
    body = max(message_size - 16, 0)  # a published message: the stamp, then this many bytes
    while state.running:
        if state.remaining is not None and not state.reserve():
            break
        # An op is recorded in the interval it ends in, and only if it began in the same
        # phase: one still in flight when warm-up ends is not measured.
        phase, measured = state.phase, state.measuring
        code, index, key, size, ttl = nxt()
        if period is not None:
            intended += period
            ahead = intended - perf()
            if ahead > 0:
                await asyncio.sleep(ahead / 1e9)
            t0 = intended
        else:
            t0 = perf()
        try:
            if code in (GET, CACHE_ASIDE):
                got = await client.get(key)
                t1 = perf()
                if state.phase == phase:
                    buf = state.buf
                    buf.lat[GET].append(t1 - t0)
                    hot = index < hot_end
                    if got is None:
                        buf.misses += 1
                    else:
                        buf.hits += 1
                        buf.bytes_in += len(got)
                        if hot:
                            buf.hot_hits += 1
                    if hot:
                        buf.hot_gets += 1
                if got is None and code == CACHE_ASIDE:
                    off = index % spread
                    t0 = perf()
                    await client.set(key, value[off : off + size], ttl)
                    if state.phase == phase:
                        buf = state.buf
                        buf.lat[SET].append(perf() - t0)
                        buf.bytes_out += size
            elif code == SET:
                off = index % spread
                await client.set(key, value[off : off + size], ttl)
                if state.phase == phase:
                    buf = state.buf
                    buf.lat[SET].append(perf() - t0)
                    buf.bytes_out += size
            elif code == DELETE:
                await client.delete(key)
                if state.phase == phase:
                    state.buf.lat[DELETE].append(perf() - t0)
            else:
                seq += 1
                channel = channels[index % len(channels)]
                # The tag says whether the publish is measured, so that every worker's
                # subscribers count the same messages whatever their own phase.
                tag = seq << 1 | measured
                message = _STAMP.pack(perf(), tag) + bytes(value[:body])
                await client.publish(channel, message)
                if state.phase == phase:
                    buf = state.buf
                    buf.lat[PUBLISH].append(perf() - t0)
                    buf.published += 1
                    buf.expected += subs_per_channel
                    buf.bytes_out += len(message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if state.phase == phase:
                state.buf.error(exc)
            await asyncio.sleep(ERROR_PAUSE)
        count += 1
        if count % YIELD_EVERY == 0:
            await asyncio.sleep(0)


def thread_client(
    client: Any, stream: OpStream, values: ValueBuffer, state: LoadState, plan: ClientPlan
) -> None:
    """The blocking twin of `async_client` for strategies driven from threads."""
    perf = time.perf_counter_ns
    nxt = stream.next
    value = values.view
    spread = values.SPREAD
    period = plan.period_ns
    hot_end = stream.hot_end
    intended = perf()
    lock = state.lock
    while state.running:
        with lock:  # the budget and the phase are read together (see _phase)
            if state.remaining is not None and not state.reserve():
                break
            phase = state.phase  # as in async_client: recorded only within its own phase
        code, index, key, size, ttl = nxt()
        if period is not None:
            intended += period
            ahead = intended - perf()
            if ahead > 0:
                time.sleep(ahead / 1e9)
            t0 = intended
        else:
            t0 = perf()
        try:
            if code in (GET, CACHE_ASIDE):
                got = client.get(key)
                t1 = perf()
                set_ns = None
                if got is None and code == CACHE_ASIDE:
                    off = index % spread
                    s0 = perf()
                    client.set(key, value[off : off + size], ttl)
                    set_ns = perf() - s0
                with lock:
                    if state.phase != phase:
                        continue
                    buf = state.buf
                    buf.lat[GET].append(t1 - t0)
                    hot = index < hot_end
                    buf.hot_gets += hot
                    if got is None:
                        buf.misses += 1
                        if set_ns is not None:
                            buf.lat[SET].append(set_ns)
                            buf.bytes_out += size
                    else:
                        buf.hits += 1
                        buf.bytes_in += len(got)
                        buf.hot_hits += hot
            elif code == SET:
                off = index % spread
                client.set(key, value[off : off + size], ttl)
                t1 = perf()
                with lock:
                    if state.phase != phase:
                        continue
                    buf = state.buf
                    buf.lat[SET].append(t1 - t0)
                    buf.bytes_out += size
            else:
                client.delete(key)
                t1 = perf()
                with lock:
                    if state.phase != phase:
                        continue
                    state.buf.lat[DELETE].append(t1 - t0)
        except Exception as exc:
            with lock:
                if state.phase == phase:
                    state.buf.error(exc)
            time.sleep(ERROR_PAUSE)


async def subscriber(
    client: Any,
    channel: bytes,
    state: LoadState,
    ready: asyncio.Event,
    counter: list[int],
    total: int,
) -> None:
    """Receives on one channel and records delivery latency from the stamped publish time."""
    perf = time.perf_counter_ns
    try:
        messages = await client.subscribe([channel])
    except Exception as exc:
        state.buf.error(exc)
        counter[0] += 1
        if counter[0] == total:
            ready.set()
        return
    counter[0] += 1
    if counter[0] == total:
        ready.set()
    async for message in messages:
        sent, tag = _STAMP.unpack_from(message)
        if not tag & 1:
            continue  # published during warm-up: neither it nor its publish is counted
        # Another worker may already measure while this one still warms up: keep such
        # deliveries for this worker's first measured interval.
        buf = state.buf if state.measuring else state.early
        buf.lat[DELIVER].append(perf() - sent)
        buf.delivered += 1
        buf.bytes_in += len(message)


@dataclass
class StepContext:
    spec: Spec
    strategy: Strategy
    system_options: dict[str, Any]
    strategy_options: dict[str, Any]
    worker: int
    workers: int
    shared: bool


def _share(total: int | None, plans: int, all_clients: int) -> int | None:
    if total is None:
        return None
    return max(1, round(total * plans / max(all_clients, 1))) if plans else 0


class StepRun:
    """One step in one worker: connect, prefill, wait for go, warm up, measure, report."""

    def __init__(self, ctx: StepContext, send: Send) -> None:
        self.ctx = ctx
        self.send = send
        self.state = LoadState()
        self.stop_requested = asyncio.Event()
        self.tasks: list[asyncio.Future[Any]] = []
        self.clients: list[Any] = []
        self.sub_clients: list[Any] = []
        self.conn: Connection | None = None
        self.threads: ThreadPoolExecutor | None = None

    def stop(self) -> None:
        self.stop_requested.set()
        self.state.phase_over.set()

    async def prepare(self) -> None:
        ctx, spec = self.ctx, self.ctx.spec
        self.state.loop = asyncio.get_running_loop()
        self.conn = await ctx.strategy.connect(ctx.system_options, ctx.strategy_options)
        self.plans = client_plans(spec, ctx.worker, ctx.workers)
        self.values = ValueBuffer(
            max(
                max_value_size(parse_value_size(spec.workload.value_size)),
                spec.workload.pubsub.message_size,
            ),
            spec.seed,
        )
        self.workload = Workload(spec, ctx.worker, ctx.workers, ctx.shared, self.values)
        self.clients = [await self.conn.client() for _ in self.plans]
        if spec.workload.prefill:
            await self._prefill()

    async def _prefill(self) -> None:
        wl = self.ctx.spec.workload
        offset, count = partition(wl.keys, self.ctx.workers, self.ctx.worker)
        sizes = self.workload.stream(ClientPlan(-1, {SET: 1.0}, None)).next_size
        keys = list(range(offset, offset + count))
        lanes = max(1, min(len(self.clients), 64))

        async def fill(client: Any, part: list[int]) -> None:
            for i in part:
                key = format_key(wl.key_prefix, i, wl.key_length)
                if self.ctx.strategy.blocking:
                    await asyncio.to_thread(client.set, key, self.values.value(i, sizes()), None)
                else:
                    await client.set(key, self.values.value(i, sizes()), None)

        await asyncio.gather(*(fill(self.clients[j], keys[j::lanes]) for j in range(lanes)))

    def _start_load(self) -> None:
        spec = self.ctx.spec
        ps = spec.workload.pubsub
        channels = [f"wb:ch:{i}".encode() for i in range(ps.channels)]
        for plan, client in zip(self.plans, self.clients, strict=True):
            stream = self.workload.stream(plan)
            if self.ctx.strategy.blocking:
                if self.threads is None:
                    # One thread per blocking client: the loop's default pool has only
                    # min(32, cores + 4) threads and would silently cap the concurrency.
                    self.threads = ThreadPoolExecutor(
                        max_workers=len(self.plans), thread_name_prefix="wb-client"
                    )
                self.tasks.append(
                    self.state.loop.run_in_executor(
                        self.threads, thread_client, client, stream, self.values, self.state, plan
                    )
                )
            else:
                self.tasks.append(
                    asyncio.ensure_future(
                        async_client(
                            client,
                            stream,
                            self.values,
                            self.state,
                            plan,
                            channels,
                            ps.subscribers_per_channel,
                            ps.message_size,
                        )
                    )
                )

    async def _start_subscribers(self) -> list[asyncio.Task[None]]:
        spec = self.ctx.spec
        if not any(PUBLISH in parse_mix(m) for m in _mixes(spec)):
            return []
        ps = spec.workload.pubsub
        slots = [(c, s) for c in range(ps.channels) for s in range(ps.subscribers_per_channel)]
        if self.ctx.shared:  # one set of subscribers in all, dealt among the workers
            slots = slots[self.ctx.worker :: self.ctx.workers]
        ready = asyncio.Event()
        counter = [0]
        subs = []
        for c, _ in slots:
            client = await self.conn.client()  # type: ignore[union-attr]
            self.sub_clients.append(client)
            subs.append(
                asyncio.create_task(
                    subscriber(
                        client, f"wb:ch:{c}".encode(), self.state, ready, counter, len(slots)
                    )
                )
            )
        if slots:
            await asyncio.wait_for(ready.wait(), timeout=10)
        return subs

    async def run(self, go: Awaitable[None]) -> str:
        """Run the armed step once `go` completes; returns completed or interrupted."""
        spec, load = self.ctx.spec, self.ctx.spec.load
        subs = await self._start_subscribers()
        self.send({"type": "armed"})
        await go
        if self.stop_requested.is_set():
            return "interrupted"
        n_all = sum(g.concurrency for g in spec.workload.groups) or load.concurrency
        warm_ops = _share(load.warmup_ops, len(self.plans), n_all)
        measured_ops = _share(load.ops, len(self.plans), n_all)
        self._start_load()
        status = "completed"
        # Warm-up: run, then throw the figures away.
        if warm_ops or load.warmup > 0:
            await self._phase(warm_ops, load.warmup if not warm_ops else None, warmup=True)
        if self.stop_requested.is_set():
            status = "interrupted"
        else:
            status = await self._phase(
                measured_ops, load.duration if not measured_ops else None, warmup=False
            )
        self.state.running = False
        await self._finish_clients()
        if subs:
            await self._drain_deliveries()
            for t in subs:
                t.cancel()
            await asyncio.gather(*subs, return_exceptions=True)
            tail = self.state.buf
            self.state.buf = Buffers()
            if tail.delivered or tail.errors:
                stats = await to_stats(tail, 0.0)
                self.send(
                    {
                        "type": "interval",
                        "index": -1,
                        "elapsed": 0.0,
                        "warmup": False,
                        "stats": stats.to_dict(),
                    }
                )
        return status

    async def _drain_deliveries(self) -> None:
        """Wait for messages still on their way: until none arrives for 0.3 s (at most 3 s)."""
        quiet, last = 0, -1
        for _ in range(30):
            delivered = self.state.buf.delivered
            quiet = quiet + 1 if delivered == last else 0
            if quiet >= 3:
                return
            last = delivered
            await asyncio.sleep(0.1)

    async def _phase(self, ops: int | None, seconds: float | None, *, warmup: bool) -> str:
        state, load = self.state, self.ctx.spec.load
        with state.lock:  # budget and buffer change together: a reserved op lands in this phase
            state.remaining = ops if ops else None
            state.budget_stops = not warmup
            state.buf = state.early if not warmup else Buffers()
            state.early = Buffers()
            state.phase += 1
            state.measuring = not warmup
        state.phase_over.clear()
        if self.stop_requested.is_set():
            return "interrupted"
        begin = time.perf_counter()
        last = begin
        index = 0
        status = "completed"
        while True:
            boundary = begin + (index + 1) * load.interval
            end_at = begin + seconds if seconds is not None else None
            wake = min(boundary, end_at) if end_at is not None else boundary
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    state.phase_over.wait(), timeout=max(0.0, wake - time.perf_counter())
                )
            now = time.perf_counter()
            done = state.phase_over.is_set() or (end_at is not None and now >= end_at - 1e-4)
            if done and not warmup:
                state.running = False  # clients stop before the last interval is taken
                await self._finish_clients()
                now = time.perf_counter()
            with state.lock:
                old, state.buf = state.buf, Buffers()
            if not warmup or done:
                stats = await to_stats(old, now - last)
                if self.ctx.worker == 0 and not warmup:
                    # One worker asks the server for its own figures (memory, items...).
                    stats.server = await self.server_stats()
                self.send(
                    {
                        "type": "interval",
                        "index": index,
                        "elapsed": now - begin,
                        "warmup": warmup,
                        "stats": stats.to_dict(),
                    }
                )
            last = now
            index += 1
            if done:
                if self.stop_requested.is_set():
                    status = "interrupted"
                return status

    async def _finish_clients(self) -> None:
        if self.tasks:
            await asyncio.wait(self.tasks, timeout=30)

    async def close(self) -> None:
        self.state.running = False
        for t in self.tasks:
            if not t.done() and isinstance(t, asyncio.Task):
                t.cancel()
        for client in (*self.clients, *self.sub_clients):
            with contextlib.suppress(Exception):
                result = client.close()
                if asyncio.iscoroutine(result):
                    await asyncio.wait_for(result, timeout=5)
        if self.conn is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.conn.close(), timeout=5)
        if self.threads is not None:
            self.threads.shutdown(wait=False, cancel_futures=True)

    async def server_stats(self) -> dict[str, Any]:
        if self.conn is None:
            return {}
        try:
            return await asyncio.wait_for(self.conn.server_stats(), timeout=2)
        except Exception:
            return {}


def _mixes(spec: Spec) -> list[Any]:
    return [g.mix for g in spec.workload.groups] or [spec.workload.mix]
