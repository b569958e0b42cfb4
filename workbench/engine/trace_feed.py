"""Replaying a trace in the Python engine: one worker's share of the requests, dealt to
its virtual clients by a hash of the key, so each key's requests keep the trace's order.

Every worker reads the file as a stream (`workbench.traces`) and keeps the requests of its
own clients: client ``crc32(key) % clients`` of all the run's clients. A client takes its
next request from its own queue, reading on when the queue is empty; the queues of the
others hold only what was read ahead for them.
"""

from __future__ import annotations

import itertools
import threading
import zlib
from collections import Counter, deque
from collections.abc import Callable, Iterator

from workbench.spec.model import Spec
from workbench.traces.formats import read
from workbench.traces.records import Request, TraceFormatError
from workbench.workload import CACHE_ASIDE, DELETE, GET, SET

# The largest value a replayed request sends; larger ones are skipped and named (the
# engine's value buffer is allocated once, and caches refuse such items anyway).
MAX_TRACE_VALUE = 4 * 1024**2
AS_RECORDED = {"get": GET, "gets": GET, "set": SET, "delete": DELETE}
OP_NEEDS = {GET: "get", SET: "set", DELETE: "delete", CACHE_ASIDE: "get"}


# The error kind of a trace that cannot be read to its end, in both engines: it fails the
# step (`engine.coordinator`), whatever was measured before it.
UNREADABLE = "trace file"


class TraceEnd(Exception):
    """This client has replayed its share of the trace."""


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
        on_skip: Callable[[str, str], None],
        on_done: Callable[[], None],
    ) -> None:
        tr = spec.workload.trace
        assert tr is not None
        requests: Iterator[Request] = read(tr.path, tr.format or None)
        self.requests = itertools.islice(requests, tr.limit) if tr.limit else requests
        self.as_recorded = tr.ops == "as-recorded"
        self.prefix = spec.workload.key_prefix
        self.all_clients = all_clients
        self.queues: dict[int, deque[Request]] = {c: deque() for c in client_ids}
        self.lock = threading.Lock()
        self.supported = supported
        self.on_skip = on_skip  # (kind, message), called once per request skipped
        self.skipped: Counter[str] = Counter()
        self.finished: set[int] = set()
        self.speed = tr.speed  # > 0: the trace's timestamps are the schedule
        self.origin: float | None = None  # the trace's first timestamp
        self.done = threading.Event()  # every client of this worker replayed its share
        self.on_done = on_done
        # The first unreadable record, once met: every client ends and the step fails with
        # it (`UNREADABLE`), never replaying a shorter trace as if whole.
        self.failure = ""
        if not client_ids:  # a worker without clients has no share to replay
            self.done.set()

    def _take(self, client: int) -> Request | None:
        with self.lock:
            queue = self.queues[client]
            if queue:
                return queue.popleft()
            try:
                return self._read_on(queue)
            except TraceFormatError as exc:
                self.failure = self.failure or str(exc)
                self.requests = iter(())
                return None

    def _read_on(self, queue: deque[Request]) -> Request | None:
        if self.origin is None:
            first = next(self.requests, None)
            if first is None:
                return None
            self.origin = first.time
            self.requests = itertools.chain((first,), self.requests)
        # Read on until this client has a request; the hot loop of every worker, which
        # reads the whole trace: `owner` inlined, names bound locally.
        queues, clients, crc32 = self.queues, self.all_clients, zlib.crc32
        for r in self.requests:
            mine = queues.get(crc32(r.key.encode()) % clients)
            if mine is not None:
                mine.append(r)
                if mine is queue:
                    return queue.popleft()
        return None

    def finish(self, client: int) -> None:
        with self.lock:
            self.finished.add(client)
            if len(self.finished) == len(self.queues) and not self.done.is_set():
                self.done.set()
                self.on_done()

    def key(self, r: Request) -> bytes:
        """The prefix, then the trace's key, padded with '_' to the recorded key size."""
        body = r.key.ljust(r.key_size, "_") if r.key_size > len(r.key) else r.key
        return (self.prefix + body).encode()

    def _code(self, r: Request) -> int | None:
        """The op to issue, or None when skipped (counted and named through on_skip)."""
        code = AS_RECORDED.get(r.op) if self.as_recorded else CACHE_ASIDE
        if code is None or OP_NEEDS[code] not in self.supported:
            self.on_skip(f"skipped {r.op}", f"trace op {r.op!r} is not replayed on this target")
            return None
        if r.value_size > MAX_TRACE_VALUE and code in (SET, CACHE_ASIDE):
            self.on_skip(
                "skipped value",
                f"trace value of {r.value_size} bytes is above the 4 MiB the engine sends",
            )
            return None
        return code

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
            if code is not None:
                return r, code

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
