"""Replaying a trace in the Python engine: one worker's share of the requests, shared by
its virtual clients as the native engine shares them (`native/src/trace/replay.rs`), so each
key's requests keep the trace's order and every client works while requests are left.

Every worker reads the file as a stream (`workbench.workload.traces`) and keeps the requests whose
key is its own: client ``crc32(key) % clients`` of all the run's clients is one of its
clients. Within the worker a free client takes the next request. A key is *held* by the
client whose request of it is in flight (a client issues one op at a time, a
get-set-on-miss fill included, so its request ends when it asks for the next), and the
key's later requests go to that client's own queue while it is held. A client takes from
its own queue first. Dealt by hash alone, a zipf trace put up to twice the mean share on
one client, which then ran on alone at the end (issue 23).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import zlib
from collections import Counter, deque
from collections.abc import Callable, Iterator

from workbench.engine.trace_keys import TraceKeys
from workbench.sdk.ops import BY_CODE, CACHE_ASIDE, TRACE_OPS, replay_code
from workbench.spec.model import Spec
from workbench.workload.traces.formats import read
from workbench.workload.traces.records import Request, TraceFormatError

# The largest value a replayed request sends; larger ones are skipped and named (the
# engine's value buffer is allocated once, and caches refuse such items anyway).
MAX_TRACE_VALUE = 4 * 1024**2
# What a request too large to send is counted as among the skipped (`Stats.skipped`).
LARGE_VALUE = "value over 4 MiB"


def issued_codes(as_recorded: bool, supported: frozenset[str]) -> dict[str, int]:
    """What each trace op name is issued as to a strategy declaring `supported`; a name
    left out is skipped by name. A get-set-on-miss replay issues every request as a
    cache-aside, through the strategy's get."""
    if not as_recorded:
        return dict.fromkeys(TRACE_OPS, CACHE_ASIDE) if "get" in supported else {}
    codes = {name: replay_code(name, supported) for name in TRACE_OPS}
    return {name: code for name, code in codes.items() if code is not None}


# The error kind of a trace that cannot be read to its end, in both engines: it fails the
# step (`engine.coordinator`), whatever was measured before it.
UNREADABLE = "trace file"


class TraceEnd(Exception):
    """This client has replayed its share of the trace."""


class WarmupWait(Exception):
    """This client's next request is past the warm-up's trace time (workload.trace.warmup):
    it waits for the measured phase (`TraceStream.wait_measured`), then sends it."""


def owner(key: str, clients: int) -> int:
    """The client (of all the run's) that replays the requests for `key`."""
    return zlib.crc32(key.encode()) % clients


class TraceFeed:
    """The requests of one worker's clients, read from the trace as they are needed."""

    def __init__(
        self,
        spec: Spec,
        client_ids: list[int],
        all_clients: int,
        supported: frozenset[str],
        keys: TraceKeys,
        on_skip: Callable[[str], None],
        on_done: Callable[[], None],
        on_warm_over: Callable[[], None] = lambda: None,
    ) -> None:
        tr = spec.workload.trace
        assert tr is not None
        requests: Iterator[Request] = read(tr.path, tr.format or None)
        self.requests = itertools.islice(requests, tr.limit) if tr.limit else requests
        self.as_recorded = tr.ops == "as-recorded"
        self.prefix = spec.workload.key_prefix
        self.prefix_bytes = len(self.prefix.encode())
        self.keys = keys  # which keys the protocol can carry
        self.all_clients = all_clients
        # Per client of this worker: requests of the keys it holds, in trace order.
        self.queues: dict[int, deque[Request]] = {c: deque() for c in client_ids}
        # Requests read, in trace order, that no client has taken yet.
        self.ahead: deque[Request] = deque()
        # Per held key: its client, and its requests in flight or in that client's queue.
        self.held: dict[str, list[int]] = {}
        # Per client: the key of its request in flight (taken and not yet ended).
        self.current: dict[int, str | None] = dict.fromkeys(client_ids)
        # Whether every client of the run is this worker's (no key needs hashing).
        self.all_mine = set(client_ids) == set(range(all_clients))
        self.lock = threading.Lock()
        self.supported = supported
        # What each trace op is issued as to this strategy (`ops.replay_code`); a name
        # missing is skipped by name. A cache-aside replay issues every request through get.
        self.issued = issued_codes(self.as_recorded, supported)
        self.on_skip = on_skip  # (what), called once per request skipped: its op or LARGE_VALUE
        self.skipped: Counter[str] = Counter()
        self.finished: set[int] = set()
        self.speed = tr.speed  # > 0: the trace's timestamps are the schedule
        self.origin: float | None = None  # the trace's first timestamp
        # A timed replay's offered count: trace times of this worker's replayed requests read
        # but not yet counted, and the count so far (`due_before`).
        self.dues: deque[float] = deque()
        self.offered = 0
        self.done = threading.Event()  # every client of this worker replayed its share
        self.on_done = on_done
        # The first unreadable record, once met: every client ends and the step fails with
        # it (`UNREADABLE`), never replaying a shorter trace as if whole.
        self.failure = ""
        # Warm-up by trace time: a client waits at its first request past it; when every
        # client waits or is done, `on_warm_over` ends the warm-up and `release` the wait.
        self.warm_until = tr.warmup
        self.warming = tr.warmup > 0
        self.waiting: set[int] = set()
        self.on_warm_over = on_warm_over
        self.measured = threading.Event()
        self.measured_async = asyncio.Event()
        if not client_ids:  # a worker without clients has no share to replay
            self.done.set()

    def _take(self, client: int) -> Request | None:
        """The client's next request; its previous one has ended (one op at a time)."""
        with self.lock:
            self._ended(client)
            queue = self.queues[client]
            r = queue.popleft() if queue else self._next_free(client)
            self.current[client] = r.key if r is not None else None
            return r

    def _ended(self, client: int) -> None:
        """The client's request in flight ended: its key is held one request less."""
        key, self.current[client] = self.current[client], None
        if key is not None:
            h = self.held[key]
            h[1] -= 1
            if h[1] == 0:
                del self.held[key]

    def _next_free(self, client: int) -> Request | None:
        """The trace's next request for a client with nothing of its own: a request of a
        key another client holds joins that client's queue, and the next one is looked at."""
        held, queues, ahead = self.held, self.queues, self.ahead
        while True:
            if ahead:
                r = ahead.popleft()
            else:
                try:
                    got = self._read_on()
                except TraceFormatError as exc:
                    self.failure = self.failure or str(exc)
                    self.requests = iter(())
                    return None
                if got is None:
                    return None
                r = got
            h = held.get(r.key)
            if h is None:
                held[r.key] = [client, 1]
                return r
            h[1] += 1
            queues[h[0]].append(r)  # held by another: its own queue (never this client's,
            # whose queue is empty and whose request in flight has ended)

    def _find_origin(self) -> bool:
        """The trace's first time, read once (the request stays first); False: empty."""
        if self.origin is None:
            first = next(self.requests, None)
            if first is None:
                return False
            self.origin = first.time
            self.requests = itertools.chain((first,), self.requests)
        return True

    def _read_on(self) -> Request | None:
        """The next request of this worker's keys that is replayed, or None at the end."""
        if not self._find_origin():
            return None
        # The hot loop of every worker, which reads the whole trace: `owner` inlined, names
        # bound locally.
        queues, clients, crc32, skip = self.queues, self.all_clients, zlib.crc32, self._skip
        dues = self.dues if self.speed > 0 else None
        all_mine = self.all_mine
        for r in self.requests:
            if all_mine or crc32(r.key.encode()) % clients in queues:
                # A request that is not replayed is counted as it is read, never queued: a
                # trace of mostly skipped ops must not pile up in the queues.
                if (what := skip(r)) is not None:
                    self.on_skip(what)
                    continue
                if dues is not None:
                    dues.append(r.time)
                return r
        return None

    def due_before(self, since_start_ns: int) -> int:
        """A timed replay: how many of this worker's replayed requests are due before
        `since_start_ns` of the load (asked in growing order), reading ahead that far."""
        with self.lock:
            try:
                if not self._find_origin():
                    return self.offered
            except TraceFormatError as exc:
                self.failure = self.failure or str(exc)
                self.requests = iter(())
                return self.offered
            assert self.origin is not None
            until = self.origin + since_start_ns / 1e9 * self.speed
            try:
                while not self.dues or self.dues[-1] < until:
                    r = self._read_on()  # appends its due
                    if r is None:
                        break
                    self.ahead.append(r)
            except TraceFormatError as exc:
                self.failure = self.failure or str(exc)
                self.requests = iter(())
            while self.dues and self.dues[0] < until:
                self.dues.popleft()
                self.offered += 1
            return self.offered

    def finish(self, client: int) -> None:
        with self.lock:
            self.finished.add(client)
            if len(self.finished) == len(self.queues) and not self.done.is_set():
                self.done.set()
                self.on_done()
            elif self.warming:
                self._warm_over_when_all_wait()

    def wait_at_warm_end(self, client: int) -> None:
        with self.lock:
            self.waiting.add(client)
            self._warm_over_when_all_wait()

    def _warm_over_when_all_wait(self) -> None:
        if len(self.waiting | self.finished) == len(self.queues):
            self.on_warm_over()

    def release(self) -> None:
        """The measured phase began: clients waiting at the warm-up's end go on (called on
        the event loop)."""
        self.warming = False
        self.measured.set()
        self.measured_async.set()

    def key(self, r: Request) -> bytes:
        """The prefix, then the trace's key, padded with '_' to the recorded key size."""
        body = r.key.ljust(r.key_size, "_") if r.key_size > len(r.key) else r.key
        return (self.prefix + body).encode()

    def _skip(self, r: Request) -> str | None:
        """Why a request is not replayed (its op, LARGE_VALUE, or a key the protocol
        cannot carry), or None when it is."""
        code = self.issued.get(r.op)
        if code is None:
            return r.op
        if r.value_size > MAX_TRACE_VALUE and BY_CODE[code].carries_value:
            return LARGE_VALUE
        return self.keys.refusal(self.prefix_bytes, r.key, r.key_size)

    def _code(self, r: Request) -> int | None:
        """The op to issue, or None when skipped (counted by what it is through on_skip)."""
        skip = self._skip(r)
        if skip is not None:
            self.on_skip(skip)
            return None
        return self.issued[r.op]

    def stream(self, client: int) -> TraceStream:
        return TraceStream(self, client)


class TraceStream:
    """A client's share of the trace, with OpStream's interface: `next()` gives
    (op code, key index, key, value size, ttl) and raises TraceEnd at the end."""

    hot_end = 0  # a trace has no hot set of its own: no op counts as hot

    def __init__(self, feed: TraceFeed, client: int) -> None:
        self.feed = feed
        self.client = client

        self.pending: tuple[Request, int] | None = None  # taken by `take`, issued by `next`

    def _request(self) -> tuple[Request, int]:
        """The client's next request that is replayed, with its op code."""
        if self.pending is not None:
            pending, self.pending = self.pending, None
            return pending
        feed = self.feed
        while True:
            r = feed._take(self.client)
            if r is None:
                feed.finish(self.client)
                raise TraceEnd
            code = feed._code(r)
            if code is None:
                continue
            if feed.warming and feed.origin is not None and r.time - feed.origin >= feed.warm_until:
                self.pending = (r, code)
                feed.wait_at_warm_end(self.client)
                raise WarmupWait
            return r, code

    async def wait_measured(self) -> None:
        await self.feed.measured_async.wait()

    def wait_measured_blocking(self, halted: threading.Event) -> None:
        """A thread client's wait, bounded by the load's halt."""
        while not self.feed.measured.wait(0.05) and not halted.is_set():
            pass

    def next(self) -> tuple[int, int, bytes, int, float | None]:
        r, code = self._request()
        key = self.feed.key(r)
        return code, zlib.crc32(key), key, r.value_size, (float(r.ttl) if r.ttl else None)

    def pacer(self, start_ns: int) -> TracePacer | None:
        """At speed > 0: the schedule of this client's requests, from their timestamps."""
        return TracePacer(self, start_ns) if self.feed.speed > 0 else None


class TracePacer:
    """`take()` gives the intended start (perf_counter ns) of the client's next request:
    the load's start plus its trace time since the trace's first request, over the speed.
    It raises TraceEnd when the client's share is done."""

    __slots__ = ("start_ns", "stream")

    def __init__(self, stream: TraceStream, start_ns: int) -> None:
        self.stream = stream
        self.start_ns = start_ns

    def take(self) -> int:
        stream = self.stream
        stream.pending = stream._request()
        feed = stream.feed
        assert feed.origin is not None
        offset = (stream.pending[0].time - feed.origin) / feed.speed
        return self.start_ns + int(offset * 1e9)
