"""What one worker records during an interval, and how it becomes the interval's Stats.

The hot path only appends ints to arrays of machine words (`record`); at the interval's
end the buffer is swapped out whole and folded into histograms in small chunks
(`to_stats`), so folding never stalls the operations in flight for long.

Arrays, not lists: a list keeps an int object per latency (about 40 bytes, against 8). When
the server stalls in an open-loop run, the interval after it holds several intervals' worth
of late ops, and lists of them left the worker's small-object arenas at that high-water
mark for the rest of the run (+0.6 MB in both workers of a soak run at its first stall).
"""

from __future__ import annotations

import asyncio
import time
from array import array

from hdrh.histogram import HdrHistogram

from workbench.results.metrics import Stats, fold, new_histogram
from workbench.sdk.adapter import error_kind
from workbench.sdk.ops import BY_NAME, CACHE_ASIDE, DELIVER, GET, PUBLISH, READS, RECORDED

# The recorded kinds' names by code (a pub/sub message received is DELIVER's).
KIND_NAMES = {BY_NAME[name].code: name for name in RECORDED}
FOLD_CHUNK = 4096
FOLD_SLICE = 0.002  # seconds of folding between loop turns
# Open loop: a paced send is due every few tens of µs at 20,000 ops/s, and a send due
# during a slice waits for it. Fold one small chunk (tens of µs) per loop turn instead.
PACED_CHUNK = 64
ABANDONED = "abandoned"  # error kind of ops still unanswered when the wait after the end ran out


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
        "outcomes",
        "published",
        "send_lag",
        "skipped",
    )

    def __init__(self) -> None:
        # Latencies (ns) by op code; a cache_aside op records a get and maybe a set.
        self.lat: dict[int, array[int]] = {code: array("q") for code in KIND_NAMES}
        self.send_lag = array("q")  # open loop only: actual send minus intended start
        self.hits = self.misses = self.bytes_in = self.bytes_out = 0
        self.published = self.delivered = self.expected = 0
        self.hot_gets = self.hot_hits = 0
        self.errors: dict[str, int] = {}
        self.first_errors: dict[str, str] = {}
        self.skipped: dict[str, int] = {}  # a trace replay's requests not sent, by op
        # What the conditional writes did: op kind -> outcome -> count.
        self.outcomes: dict[str, dict[str, int]] = {}

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def outcome(self, code: int, outcome: str) -> None:
        """One conditional write's outcome (`workbench.sdk.ops.OUTCOMES`)."""
        counts = self.outcomes.setdefault(KIND_NAMES[code], {})
        counts[outcome] = counts.get(outcome, 0) + 1

    def error(self, exc: BaseException) -> None:
        self.count_error(error_kind(exc), f"{type(exc).__name__}: {exc}")

    def count_error(self, kind: str, message: str, n: int = 1) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + n
        if kind not in self.first_errors:
            self.first_errors[kind] = message[:300]


def record(
    buf: Buffers,
    code: int,
    ns: int,
    got: bytes | str | None,
    hot: bool,
    sent: int,
    expected: int,
) -> None:
    """One completed op: its latency and what it moved. The one recording path of every loop.

    `got` is the reply: a read's value (None: a miss), a conditional write's outcome
    (`workbench.sdk.ops.OUTCOMES`); `sent` the bytes written; `expected` the deliveries a
    publish should cause.
    """
    buf.lat[GET if code == CACHE_ASIDE else code].append(ns)
    if code in READS:
        buf.hot_gets += hot
        if got is None:
            buf.misses += 1
        else:
            buf.hits += 1
            buf.hot_hits += hot
            buf.bytes_in += len(got)
        return
    buf.bytes_out += sent
    if code == PUBLISH:
        buf.published += 1
        buf.expected += expected
    elif got is not None:  # a conditional write's outcome
        buf.outcome(code, got if isinstance(got, str) else got.decode())


def record_delivery(buf: Buffers, ns: int, size: int) -> None:
    buf.lat[DELIVER].append(ns)
    buf.delivered += 1
    buf.bytes_in += size


async def _histogram(values: array[int], paced: bool) -> HdrHistogram:
    """Fold latencies into a histogram in slices, letting the clients run between slices.

    A slice lasts FOLD_SLICE, or half a loop turn when turns are long (thousands of
    busy clients): folding then needs a few turns, not hundreds. Paced (open-loop)
    clients get a turn after every PACED_CHUNK values, so no send waits long for a slice.
    """
    hist = new_histogram()
    chunk, budget = (PACED_CHUNK, 0.0) if paced else (FOLD_CHUNK, FOLD_SLICE)
    i, n = 0, len(values)
    while i < n:
        begin = time.perf_counter()
        while True:  # at least one chunk per slice
            fold(hist, values[i : i + chunk])
            i += chunk
            if i >= n or time.perf_counter() - begin >= budget:
                break
        if i < n:
            before = time.perf_counter()
            await asyncio.sleep(0)
            if not paced:
                budget = max(FOLD_SLICE, (time.perf_counter() - before) / 2)
    return hist


async def to_stats(buf: Buffers, duration: float, *, paced: bool = False) -> Stats:
    """Fold a swapped-out buffer into Stats, yielding to the loop between chunks (after
    every small chunk when `paced`: open-loop clients are waiting for their instants)."""
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
        skipped=buf.skipped,
        outcomes=buf.outcomes,
    )
    for code, values in buf.lat.items():
        if values:
            stats.hist[KIND_NAMES[code]] = await _histogram(values, paced)
    if buf.send_lag:
        stats.send_lag = await _histogram(buf.send_lag, paced)
    return stats
