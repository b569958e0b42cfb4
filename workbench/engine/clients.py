"""The virtual clients' loops: pace, issue, stamp, record. Adapters only do I/O.

Both loops (asyncio clients and one thread per blocking client) share the pacing
(`Pacer`), the phase bookkeeping (`LoadState`) and the one recording path
(`accounting.record`); they differ only in how a call is made and how they sleep.

The stopwatch: `perf_counter_ns()` before and after each op. In open loop each op has an
intended start on the client's schedule, and docs/frames.md ("Latency") says where its
latency starts (`stopwatch_start`): from the intended start if the client was still busy
then (the wait is the server's doing: coordinated omission is corrected), from the send
if it was idle and its timer woke it late (the lateness is the generator's own). Either
way the send lag (send minus intended start) is recorded in its own histogram.
"""

from __future__ import annotations

import asyncio
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any, cast

from workbench.engine.accounting import Buffers, record, record_delivery
from workbench.engine.client_plans import ClientPlan
from workbench.engine.conditional import Tokens, issue, issue_blocking, sent_bytes
from workbench.engine.timer import Wakeups
from workbench.engine.trace_feed import TraceEnd, TraceStream, WarmupWait
from workbench.sdk.ops import CACHE_ASIDE, GET, PUBLISH, SET
from workbench.workload.generator import OpStream, ValueBuffer

# In-process adapters never suspend: a client yields to the loop every few ops so that
# timers fire. With many clients per worker each yields more often, keeping a loop turn
# (every client once) to about TURN_OPS ops.
YIELD_EVERY = 64
TURN_OPS = 4096
TRACED = frozenset({GET, SET, CACHE_ASIDE})  # the ops a captured trace holds
ERROR_PAUSE = 0.001  # a client pauses after an error so a dead server cannot spin the CPU
_STAMP = struct.Struct("<qq")  # publish time (perf_counter_ns), sequence << 1 | measured

Stream = OpStream | TraceStream  # a generated workload, or a replayed trace


class UnsupportedOp(Exception):
    """An op code a blocking client cannot issue (the plan check should have refused it)."""


@dataclass
class LoadState:
    """What the clients of one worker share with the step that drives them."""

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
    in_flight: int = 0  # ops issued and not yet answered
    start_ns: int = 0  # perf_counter_ns at which the load began: the schedules' origin
    end_ns: int = 1 << 62  # when the measured phase ends, once known: no op is due after it
    measured_from_ns: int = 0  # when the measured phase begins, set before it does
    begun: asyncio.Event = field(default_factory=asyncio.Event)  # async clients may start
    begun_threads: threading.Event = field(default_factory=threading.Event)
    halted: threading.Event = field(default_factory=threading.Event)  # wakes pacing threads
    wakeups: Wakeups | None = None  # open loop: the worker's precise timer (engine/timer.py)
    # Capturing a trace: (send ns, key index, size) of each get, set and cache-aside sent
    # in the measured phase (`workbench.workload.oracle_trace`), and in the warm-up (to warm a
    # simulated cache as the real one was); None when not capturing.
    # Flat lists of ints (send ns, key, size, send ns, ...): the cheapest append measured
    # (list.extend of a tuple), and ints are not tracked by the garbage collector, as the
    # tuples of a list of records would be.
    trace: list[int] | None = None
    warm_trace: list[int] = field(default_factory=list)
    tokens: Tokens = field(default_factory=Tokens)  # the cas tokens of the worker's gets

    def begin(self, start_ns: int) -> None:
        self.start_ns = start_ns
        self.begun.set()
        self.begun_threads.set()

    def halt(self) -> None:
        self.running = False
        self.halted.set()
        if self.wakeups is not None:  # called on the loop's thread
            self.wakeups.release_all()
        self.begun.set()
        self.begun_threads.set()

    def phase_of(self, due: int) -> int:
        """The phase a paced op due at `due` belongs to: one due before the measured phase
        began is the warm-up's backlog, recorded in no phase (-1), as the offered count of
        the measured phase leaves it out (it made "issued 103% of the offered ops")."""
        return -1 if self.measuring and due < self.measured_from_ns else self.phase

    def reserve(self) -> bool:
        """Take one op from the phase budget before issuing it; False: do not issue it."""
        # Callers check `remaining is not None` first: no second check on the per-op path.
        self.remaining -= 1  # type: ignore[operator]
        if self.remaining == 0 and self.loop is not None:
            self.loop.call_soon_threadsafe(self.phase_over.set)
        return self.remaining >= 0 or not self.budget_stops


class Pacer:
    """A client's open-loop schedule (`engine.arrivals`): start + offset, then its gaps."""

    __slots__ = ("schedule",)

    def __init__(self, plan: ClientPlan, start_ns: int) -> None:
        self.schedule = plan.schedule(start_ns)

    def take(self) -> int:
        return self.schedule.take()


def _pacer(plan: ClientPlan, stream: Any, start_ns: int) -> Any:
    """The client's open-loop schedule: a timed trace replay's own, load.rate's, or None."""
    if isinstance(stream, TraceStream):
        return stream.pacer(start_ns)
    return Pacer(plan, start_ns) if plan.period_ns is not None else None


def stopwatch_start(due: int, sent: int, last_end: int, run_began: int) -> tuple[int, int]:
    """Where an open-loop op's latency starts (docs/frames.md, "Latency"), and when the
    client's current run of back-to-back ops began (kept for its next op).

    Busy at the intended start (its previous op ended after it): from the intended start,
    but never before the run began: time the client spent idle before that, waiting for
    its own late timer, is the generator's, not the server's. Idle: from the send, which
    begins a run.
    """
    if last_end > due:
        return max(due, run_began), run_began
    return sent, sent


@dataclass(frozen=True)
class PubSubPlan:
    channels: list[bytes]
    subscribers_per_channel: int
    message_size: int


def stamped(perf_ns: int, seq: int, measured: bool, body: memoryview) -> bytes:
    """A published message: its publish time and whether it is measured, then the body.

    The tag says whether the publish is measured, so that every worker's subscribers
    count the same messages whatever their own phase.
    """
    return _STAMP.pack(perf_ns, seq << 1 | measured) + bytes(body)


async def async_client(
    client: Any,
    stream: Stream,
    values: ValueBuffer,
    state: LoadState,
    plan: ClientPlan,
    pubsub: PubSubPlan,
    clients: int = 1,
) -> None:
    await state.begun.wait()
    yield_every = max(1, min(YIELD_EVERY, TURN_OPS // max(clients, 1)))
    perf = time.perf_counter_ns
    nxt, value, spread, hot_end = stream.next, values.view, values.SPREAD, stream.hot_end
    pacer = _pacer(plan, stream, state.start_ns)
    body = value[: max(pubsub.message_size - 16, 0)]
    subs, channels = pubsub.subscribers_per_channel, pubsub.channels
    trace, warm_trace, tokens = state.trace, state.warm_trace, state.tokens
    due = last_end = run_began = count = seq = 0
    while state.running:
        try:
            if pacer is not None and not await _until_due(due := pacer.take(), state):
                break  # the load ended, or this op's time is past the end
        except TraceEnd:  # a timed replay: this client's share is done
            break
        except WarmupWait:  # a replay's warm-up by trace time ends: wait for the measured phase
            await cast(TraceStream, stream).wait_measured()  # only a replay raises it
            continue
        if state.remaining is not None and not state.reserve():
            break
        # An op is recorded only if it ends in the phase it began in: one still in
        # flight when warm-up ends is not measured.
        phase = state.phase if pacer is None else state.phase_of(due)
        try:
            code, index, key, size, ttl = nxt()
        except TraceEnd:  # replaying a trace: this client's share is done
            break
        except WarmupWait:
            await cast(TraceStream, stream).wait_measured()  # only a replay raises it
            continue
        state.in_flight += 1
        t0 = perf()
        if trace is not None and code in TRACED:
            (trace if state.measuring else warm_trace).extend((t0, index, size))
        lag = t0 - due if pacer is not None else -1
        if pacer is not None:
            t0, run_began = stopwatch_start(due, t0, last_end, run_began)
        got, sent, expected = None, size, 0
        try:
            if code in (GET, CACHE_ASIDE):
                got = await client.get(key)
            elif code == SET:
                off = index % spread
                await client.set(key, value[off : off + size], ttl)
            elif code == PUBLISH:
                seq += 1
                message = stamped(perf(), seq, state.measuring, body)
                await client.publish(channels[index % len(channels)], message)
                sent, expected = len(message), subs
            else:  # a delete, a gets or a conditional write (whose reply is its outcome)
                got, sent = await issue(client, code, key, value, index, size, ttl, tokens)
            last_end = perf()
            if state.phase == phase:
                _finish(state.buf, code, last_end - t0, got, index < hot_end, sent, expected, lag)
            if got is None and code == CACHE_ASIDE:
                off = index % spread
                last_end = await _fill(client, state, phase, key, value[off : off + size], ttl)
        except Exception as exc:
            last_end = perf()
            if state.phase == phase:
                state.buf.error(exc)
            await asyncio.sleep(ERROR_PAUSE)
        finally:
            state.in_flight -= 1
        count += 1
        if count % yield_every == 0:
            await asyncio.sleep(0)


async def _until_due(due: int, state: LoadState) -> bool:
    """Wait until `due` (perf_counter_ns); False if the load ended meanwhile.

    The worker's timerfd (`Wakeups`) wakes a client at its instant. Without one, sleep:
    uvloop's timers have millisecond resolution and may fire early, so sleep again until
    the time has truly come (an early send was once a negative latency).
    """
    perf = time.perf_counter_ns
    wakeups = state.wakeups
    if wakeups is not None:
        if state.running:
            await wakeups.until(due)
    else:
        while (ahead := due - perf()) > 0 and state.running:
            await asyncio.sleep(ahead / 1e9)
    return state.running and due < state.end_ns


async def _fill(
    client: Any, state: LoadState, phase: int, key: bytes, value: Any, ttl: float | None
) -> int:
    """Cache-aside after a miss: set the value, recorded as a set; returns when it ended."""
    begin = time.perf_counter_ns()
    await client.set(key, value, ttl)
    end = time.perf_counter_ns()
    if state.phase == phase:
        record(state.buf, SET, end - begin, None, False, len(value), 0)
    return end


def _finish(
    buf: Buffers, code: int, ns: int, got: Any, hot: bool, sent: int, expected: int, lag: int
) -> None:
    record(buf, code, ns, got, hot, sent, expected)
    if lag >= 0:
        buf.send_lag.append(lag)


def _blocking_call(
    client: Any, code: int, key: bytes, value: Any, ttl: float | None, tokens: Tokens
) -> Any:
    """Issue one op on a blocking client: its reply (a read's value, a conditional write's
    outcome), None for a set or a delete."""
    if code in (GET, CACHE_ASIDE):
        return client.get(key)
    if code == SET:
        client.set(key, value, ttl)
        return None
    if code == PUBLISH:
        raise UnsupportedOp(f"blocking clients cannot issue op code {code}")
    return issue_blocking(client, code, key, value, ttl, tokens)


def thread_client(
    client: Any, stream: Stream, values: ValueBuffer, state: LoadState, plan: ClientPlan
) -> None:
    """The loop of one blocking client, on its own thread; the lock guards phase and budget."""
    state.begun_threads.wait()
    perf = time.perf_counter_ns
    nxt, view, spread, hot_end = stream.next, values.view, values.SPREAD, stream.hot_end
    pacer = _pacer(plan, stream, state.start_ns)
    lock = state.lock
    trace, warm_trace, tokens = state.trace, state.warm_trace, state.tokens
    due = last_end = run_began = 0
    while state.running:
        if pacer is not None:
            try:
                due = pacer.take()
            except TraceEnd:  # a timed replay: this client's share is done
                break
            except WarmupWait:  # a replay's warm-up by trace time ends
                cast(TraceStream, stream).wait_measured_blocking(state.halted)  # only a replay
                continue
            while (ahead := due - perf()) > 0 and not state.halted.is_set():
                state.halted.wait(ahead / 1e9)
            if state.halted.is_set() or due >= state.end_ns:
                break
        with lock:  # the budget and the phase are read together (see StepRun._phase)
            if state.remaining is not None and not state.reserve():
                break
            phase = state.phase if pacer is None else state.phase_of(due)
            state.in_flight += 1
        try:
            code, index, key, size, ttl = nxt()
        except TraceEnd:  # replaying a trace: this client's share is done
            with lock:
                state.in_flight -= 1
            break
        except WarmupWait:
            with lock:
                state.in_flight -= 1
            cast(TraceStream, stream).wait_measured_blocking(state.halted)  # only a replay
            continue
        off = index % spread
        value = view[off : off + size]
        t0 = perf()
        if trace is not None and code in TRACED:
            (trace if state.measuring else warm_trace).extend((t0, index, size))
        lag = t0 - due if pacer is not None else -1
        if pacer is not None:
            t0, run_began = stopwatch_start(due, t0, last_end, run_began)
        failure: Exception | None = None
        set_ns = -1
        got = None
        try:
            got = _blocking_call(client, code, key, value, ttl, tokens)
            last_end = perf()
            if got is None and code == CACHE_ASIDE:
                s0 = perf()
                client.set(key, value, ttl)
                set_ns = perf() - s0
        except Exception as exc:
            failure, last_end = exc, perf()
        with lock:
            state.in_flight -= 1
            if state.phase == phase:
                buf = state.buf
                if failure is not None:
                    buf.error(failure)
                else:
                    sent = sent_bytes(code, size)
                    _finish(buf, code, last_end - t0, got, index < hot_end, sent, 0, lag)
                    if set_ns >= 0:
                        record(buf, SET, set_ns, None, False, size, 0)
        if failure is not None:
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
        messages = None
    counter[0] += 1
    if counter[0] == total:
        ready.set()
    if messages is None:
        return
    async for message in messages:
        sent, tag = _STAMP.unpack_from(message)
        if not tag & 1:
            continue  # published during warm-up: neither it nor its publish is counted
        # Another worker may already measure while this one still warms up: keep such
        # deliveries for this worker's first measured interval.
        record_delivery(state.buf if state.measuring else state.early, perf() - sent, len(message))


__all__ = ["PUBLISH", "LoadState", "PubSubPlan", "async_client", "subscriber", "thread_client"]
