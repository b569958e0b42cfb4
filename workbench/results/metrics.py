"""Every number the workbench shows comes from here: recording, merging and summarising.

Latencies are kept in nanoseconds. The hot path only appends an int to a list; once per
interval `fold` counts equal values and adds each distinct value's count to its bucket
(3 significant digits: the histogram's own precision). Histograms travel in the
standard HdrHistogram compressed encoding.
"""

from __future__ import annotations

import base64
import ctypes
import math
import weakref
import zlib
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from itertools import accumulate, compress, repeat
from operator import add, lshift, mul, sub
from typing import Any

from hdrh.codec import ext_header_size, payload_header_size
from hdrh.histogram import HdrHistogram
from pyhdrh import encode as encode_varints  # hdrh's own C encoder

from workbench.sdk.ops import RECEIVED

LOWEST_NS = 1
HIGHEST_NS = 3_600_000_000_000  # one hour
SIGNIFICANT_DIGITS = 3
# HdrHistogram with 3 significant digits keeps 2048 sub-buckets: 11 bits of each value.
_KEEP_BITS = 11

# The ticks the source documents print (50, 75, 87.5, ... halving the rest each time).
DOC_TICKS = (50.0, 75.0, 87.5, 93.75, 96.875, 98.4375, 99.21875)
SUMMARY_TICKS = tuple(sorted({*DOC_TICKS, 90.0, 99.0, 99.9, 99.99}))


def new_histogram() -> HdrHistogram:
    return _acyclic(HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS))


def _acyclic(hist: HdrHistogram) -> HdrHistogram:
    """`hist` with its encoder pointing back at it weakly.

    hdrh's histogram and its encoder reference each other, so a dropped histogram (and its
    ~130 KB of counts) waits for the cyclic garbage collector, which counts objects, not
    bytes: a long run's coordinator drops a few per interval and grew by about 100 MB
    before a collection came. With the back reference weak, the last reference frees it.
    """
    hist.encoder.histogram = weakref.proxy(hist)
    return hist


def quantise(values: Iterable[int]) -> dict[int, int]:
    """Values rounded down to the histogram's bucket, counted.

    Latencies of fast ops repeat a lot at nanosecond resolution: then counting first (in C)
    and rounding only the distinct values is cheapest. Widely spread latencies (network
    round trips) are rounded first, which collapses them into at most 2048 buckets per
    power of two.
    """
    values = values if isinstance(values, list) else list(values)
    counts = Counter(values)
    if len(counts) * 4 > len(values):
        return Counter(
            (v >> s) << s if (s := v.bit_length() - _KEEP_BITS) > 0 else v for v in values
        )
    out: dict[int, int] = {}
    get = out.get
    for v, n in counts.items():
        s = v.bit_length() - _KEEP_BITS
        q = (v >> s) << s if s > 0 else v
        out[q] = get(q, 0) + n
    return out


def fold(hist: HdrHistogram, values: Sequence[int]) -> None:
    """Record a batch of latencies (ns) into `hist`: equal values counted, then each distinct
    value's bucket computed here and its count added once.

    This is `record_value(v, n)` per distinct value without its per-call overhead: a
    worker folds every latency and send lag of an interval on its event loop, and at
    20,000 ops/s the library's call cost 7% of a core in slices that held paced sends back.
    A negative latency is a bug in whoever measured it: it is refused, never clamped.
    """
    counts = Counter(values)
    if not counts:
        return
    low, high = min(counts), max(counts)
    if low < 0:
        raise ValueError(f"negative latency {low} ns: the stopwatch is wrong")
    if high > hist.highest_trackable_value:  # beyond the range: dropped, as the library does
        record = hist.record_value
        for value, n in counts.items():
            record(value, n)
        return
    mask, unit = hist.sub_bucket_mask, hist.unit_magnitude
    half_mag, half = hist.sub_bucket_half_count_magnitude, hist.sub_bucket_half_count
    shift = unit + half_mag + 1
    by_index: dict[int, int] = {}
    get = by_index.get
    for value, n in counts.items():
        bucket = (value | mask).bit_length() - shift  # as the library's _counts_index_for
        i = ((bucket + 1) << half_mag) + (value >> (bucket + unit)) - half
        by_index[i] = get(i, 0) + n
    hist_counts = hist.counts
    for i, n in by_index.items():
        hist_counts[i] += n
    hist.total_count += len(values)
    hist.min_value = min(hist.min_value, low)
    hist.max_value = max(hist.max_value, high)


def encode(hist: HdrHistogram) -> str:
    """`hist.encode()`, the same text (the standard V2 compressed encoding, base64), without
    a new ctypes type per call.

    hdrh encodes into `(c_byte * n)()` with n from the histogram's highest value, and
    ctypes makes (and keeps an entry in its type cache for) one array type per distinct n:
    each interval's histograms have their own maximum, so a long run made a new type of a
    few kilobytes almost every interval. They are reference cycles that only the full
    garbage collection frees, which a big heap of long-lived objects puts off for a long
    time: a soak run's coordinator grew by about 1 MB in 20 minutes at one-second
    intervals. Here the varints go into a bytearray, through the one `c_char` type.
    """
    payload = hist.encoder.payload
    limit = hist.get_counts_array_index(hist.max_value) + 1 if hist.total_count else 0
    room = limit * (payload.word_size + 1)  # the worst case of a varint per counter
    buf = bytearray(payload_header_size + room)
    base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    n = encode_varints(
        ctypes.addressof(payload.counts), limit, payload.word_size, base + payload_header_size, room
    )
    payload.payload.payload_len = n
    ctypes.memmove(base, ctypes.addressof(payload.payload), payload_header_size)
    packed = zlib.compress(memoryview(buf)[: payload_header_size + n])
    header = hist.encoder.header
    header.length = len(packed)
    head = ctypes.string_at(ctypes.addressof(header), ext_header_size)
    return base64.b64encode(head + packed).decode("ascii")


def decode(text: str | bytes) -> HdrHistogram:
    return _acyclic(HdrHistogram.decode(text.encode("ascii") if isinstance(text, str) else text))


@dataclass
class Stats:
    """Counters and latency histograms for a span of time (an interval, a step, a run)."""

    duration: float = 0.0  # seconds of measured time
    hist: dict[str, HdrHistogram] = field(default_factory=dict)  # op kind -> latencies (ns)
    hits: int = 0
    misses: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    first_errors: dict[str, str] = field(default_factory=dict)
    bytes_in: int = 0
    bytes_out: int = 0
    published: int = 0
    delivered: int = 0
    expected_deliveries: int = 0
    # Gets on the hottest keys (the hot share of hotcold(), else the first 20% of the key
    # space, where zipf is hottest too): hit rate on hot and on cold keys.
    hot_gets: int = 0
    hot_hits: int = 0
    server: dict[str, Any] = field(default_factory=dict)  # latest server figures (memory...)
    # CPU seconds (user+sys) each worker process used in the span, by worker index.
    cpu: dict[str, float] = field(default_factory=dict)
    offered: int = 0  # open loop: ops whose intended start fell in the span
    send_lag: HdrHistogram | None = None  # open loop: actual send minus intended start (ns)
    # Redis Cluster: ops redirected by -MOVED (slot map refreshed) and -ASK, then retried.
    moved: int = 0
    ask: int = 0
    # A trace replay's requests not sent, by what they were: an op the target does not do
    # ("incr", "cas") or a value too large to send ("value over 4 MiB"). Not errors:
    # nothing was tried. On the wire and in the store only when there are any.
    skipped: dict[str, int] = field(default_factory=dict)
    # What conditional writes did, by op then outcome (`ops.OUTCOMES`), as `skipped` is kept.
    outcomes: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def ops(self) -> int:
        """Completed operations (not deliveries, which are measured but not issued)."""
        return sum(h.get_total_count() for k, h in self.hist.items() if k not in RECEIVED)

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def merge(self, other: Stats, *, concurrent: bool) -> None:
        """Add `other` in. Concurrent spans (workers) keep the duration; consecutive ones add."""
        self.duration = (
            max(self.duration, other.duration) if concurrent else (self.duration + other.duration)
        )
        for kind, h in other.hist.items():
            if kind not in self.hist:
                self.hist[kind] = new_histogram()
            self.hist[kind].add(h)
        self.hits += other.hits
        self.misses += other.misses
        for kind, n in other.errors.items():
            self.errors[kind] = self.errors.get(kind, 0) + n
        for kind, msg in other.first_errors.items():
            self.first_errors.setdefault(kind, msg)
        self.bytes_in += other.bytes_in
        self.bytes_out += other.bytes_out
        self.published += other.published
        self.delivered += other.delivered
        self.expected_deliveries += other.expected_deliveries
        self.hot_gets += other.hot_gets
        self.hot_hits += other.hot_hits
        for worker, seconds in other.cpu.items():
            self.cpu[worker] = self.cpu.get(worker, 0.0) + seconds
        self.offered += other.offered
        self.moved += other.moved
        self.ask += other.ask
        for what, n in other.skipped.items():
            self.skipped[what] = self.skipped.get(what, 0) + n
        for kind, counts in other.outcomes.items():
            self.outcomes[kind] = dict(Counter(self.outcomes.get(kind, {})) + Counter(counts))
        if other.send_lag is not None:
            if self.send_lag is None:
                self.send_lag = new_histogram()
            self.send_lag.add(other.send_lag)
        if other.server:
            self.server = {**self.server, **other.server}
            for k, v in other.server.items():
                if k.startswith("peak_") and isinstance(v, int | float):
                    self.server[k] = max(v, self.server.get(k, v))

    @property
    def skipped_count(self) -> int:
        return sum(self.skipped.values())

    def to_dict(self) -> dict[str, Any]:
        data = self._fields()
        if self.skipped:
            data["skipped"] = dict(self.skipped)
        if self.outcomes:
            data["outcomes"] = {kind: dict(counts) for kind, counts in self.outcomes.items()}
        return data

    def _fields(self) -> dict[str, Any]:
        return {
            "duration": self.duration,
            "hist": {k: encode(h) for k, h in self.hist.items()},
            "hits": self.hits,
            "misses": self.misses,
            "errors": self.errors,
            "first_errors": self.first_errors,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "published": self.published,
            "delivered": self.delivered,
            "expected_deliveries": self.expected_deliveries,
            "hot_gets": self.hot_gets,
            "hot_hits": self.hot_hits,
            "server": self.server,
            "cpu": self.cpu,
            "offered": self.offered,
            "send_lag": encode(self.send_lag) if self.send_lag is not None else "",
            "moved": self.moved,
            "ask": self.ask,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Stats:
        """Stats from `to_dict`'s form (a frame's, the store's); a key Stats has no field
        for is refused (TypeError), one it lacks keeps its default.

        Field by field on a default Stats, never `cls(**fields)`: with every field given
        that call makes a 20-item tuple of keyword names, and CPython 3.11 puts freed
        20-item tuples on a free list it never takes from (it reuses those of 1 to 19
        items only). A coordinator reads one interval per worker each interval: it kept one
        more block every time, up to 2,000 of them.
        """
        unknown = data.keys() - _STATS_FIELDS
        if unknown:
            raise TypeError(f"Stats has no field {min(unknown)!r}")
        stats = cls()
        for key, value in data.items():
            setattr(stats, key, value)
        stats.hist = {k: decode(v) for k, v in data.get("hist", {}).items()}
        stats.errors = dict(data.get("errors", {}))
        stats.first_errors = dict(data.get("first_errors", {}))
        stats.server = dict(data.get("server", {}))
        stats.cpu = dict(data.get("cpu", {}))
        stats.skipped = dict(data.get("skipped", {}))
        stats.outcomes = {k: dict(v) for k, v in data.get("outcomes", {}).items()}
        lag = data.get("send_lag")
        stats.send_lag = decode(lag) if lag else None
        return stats


_STATS_FIELDS = frozenset(f.name for f in dataclass_fields(Stats))


# The keys of an interval's STATS on the wire (docs/frames.md): every engine sends these.
STATS_KEYS = tuple(Stats().to_dict())
# Keys an interval's statistics hold only when they have something (a trace replay's).
OPTIONAL_STATS_KEYS = ("skipped", "outcomes")


def merged(parts: Iterable[Stats], *, concurrent: bool) -> Stats:
    total = Stats()
    for p in parts:
        total.merge(p, concurrent=concurrent)
    return total


def all_ops_histogram(stats: Stats) -> HdrHistogram:
    """Latencies of every issued op kind together (deliveries excluded)."""
    h = new_histogram()
    for kind, hk in stats.hist.items():
        if kind not in RECEIVED:
            h.add(hk)
    return h


def _shape(hist: HdrHistogram) -> tuple[int, ...]:
    """What decides where hdrh's `add` puts each count: equal shapes add bucket by bucket."""
    return (
        hist.bucket_count,
        hist.sub_bucket_count,
        hist.unit_magnitude,
        hist.word_size,
        hist.counts_len,
    )


_NEW_SHAPE = _shape(new_histogram())


def _all_ops_for_reading(stats: Stats) -> HdrHistogram:
    """`all_ops_histogram(stats)` to be read, not kept or changed: with one issued op kind
    in a histogram of `new_histogram`'s shape, that histogram itself. Its copy would hold
    the same counts in the same buckets with the same min and max buckets, so every figure
    read from it is the same; the copy (~130 KB allocated and added) and a second
    `Recorded` walk of the same buckets are saved on every summary."""
    issued = [h for kind, h in stats.hist.items() if kind not in RECEIVED]
    if len(issued) == 1 and _shape(issued[0]) == _NEW_SHAPE:
        return issued[0]
    return all_ops_histogram(stats)


@dataclass(frozen=True)
class Summary:
    """The figures of one Stats, as every face shows them. Latencies in microseconds."""

    duration: float
    ops: int
    ops_per_s: float
    mib_per_s: float
    hits: int
    misses: int
    hit_rate: float | None
    errors: int
    mean_us: float
    stdev_us: float
    min_us: float
    max_us: float
    percentiles_us: dict[float, float]
    per_op: dict[str, tuple[int, float, float, float]]  # kind -> (count, ops/s, p50, p99) µs
    lost: int

    def p(self, tick: float) -> float:
        return self.percentiles_us.get(tick, 0.0)

    @classmethod
    def deferring_mean(cls, recorded: Recorded, **fields: Any) -> Summary:
        """A Summary whose `mean_us` and `stdev_us` are taken from `recorded` when first
        read: a chart point and the live view's figures need neither, and the walk that
        gives them is most of a summary's CPU, taken every interval while the workers and
        server are busiest. Read, they are the numbers `summarise` always gave."""
        summary = object.__new__(cls)
        summary.__dict__.update(fields, _recorded=recorded)
        return summary

    def __getattr__(self, name: str) -> Any:  # only for fields not yet in __dict__
        if name not in ("mean_us", "stdev_us"):
            raise AttributeError(name)
        recorded = self.__dict__.get("_recorded")
        if recorded is None:  # another thread took them meanwhile (set before it let go)
            if name in self.__dict__:
                return self.__dict__[name]
            raise AttributeError(name)
        mean, stddev = recorded.mean_and_stddev()
        self.__dict__.update(mean_us=mean / 1000, stdev_us=stddev / 1000)
        self.__dict__.pop("_recorded", None)  # its buckets and histogram are not kept
        return self.__dict__[name]

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its figures, not the histogram they are taken from."""
        return {f: getattr(self, f) for f in self.__dataclass_fields__}


_UNSIGNED = {1: "B", 2: "H", 4: "I", 8: "Q"}  # memoryview formats by counter width


def _counts(hist: HdrHistogram, start: int, stop: int) -> memoryview:
    """hist's counts[start:stop], seen through a memoryview (no copy): many times faster
    than slicing the ctypes array, which converts element by element."""
    counts = hist.counts
    fmt = _UNSIGNED[ctypes.sizeof(counts._type_)]
    return memoryview(counts).cast("B").cast(fmt)[start:stop]


class Recorded:
    """The non-empty buckets of a histogram, read once, answering as HdrHistogram would.

    hdrh's own `get_value_at_percentile`, `get_mean_value` and `get_stddev` walk all
    ~80k buckets in Python on every call (about 0.7 s for a mean and a deviation);
    summaries are taken every interval, so the walk is done once, between the lowest
    and highest recorded bucket, and every figure is computed from that short list.
    The answers are the same numbers hdrh gives.

    The lists are machine-word arrays, not lists of Python ints: a long run's totals have
    some 15,000 non-empty buckets, and three lists of int objects (about 1 MB, more as the
    run meets rarer latencies) taken every interval left the process's small-object arenas
    at a high-water mark that rose for the first minutes of every long run.
    """

    def __init__(self, hist: HdrHistogram) -> None:
        self.hist = hist
        self.total = hist.get_total_count()
        self.indices = array("q")  # counts indices of the non-empty buckets
        self.counts = array("Q")  # and their counts
        self.cumulative = array("Q")  # running sums of `counts`
        if not self.total:
            return
        usable = min(hist.counts_len, hist.encoder.payload.counts_len)
        lo = 0 if hist.counts[0] else hist._counts_index_for(min(hist.min_value, hist.max_value))
        hi = min(usable - 1, hist._counts_index_for(hist.max_value))
        lo = max(0, min(lo, hi))
        counts = _counts(hist, lo, hi + 1)
        # The non-empty buckets picked out by C-level iterators: a wide histogram has tens
        # of thousands of buckets, and summaries are taken every interval. The check sums
        # the short list of non-empty counts, not the whole range again.
        self.counts = array("Q", filter(None, counts))
        if sum(self.counts) != self.total:  # min/max not tracked (never seen, but be exact)
            lo, counts = 0, _counts(hist, 0, usable)
            self.counts = array("Q", filter(None, counts))
        self.indices = array("q", compress(range(lo, lo + len(counts)), counts))
        self.cumulative = array("Q", accumulate(self.counts))

    @property
    def buckets(self) -> list[tuple[int, int]]:
        """(counts index, count) of each non-empty bucket."""
        return list(zip(self.indices, self.counts, strict=True))

    def values_at(self, percentiles: Iterable[float]) -> dict[float, int]:
        """Values (ns) at each percentile, by bisecting the running counts."""
        h, out = self.hist, {}
        wanted = sorted(set(percentiles))
        if not self.total:
            return dict.fromkeys(wanted, 0)
        last = len(self.indices) - 1
        for p in wanted:
            target = max(int(min(p, 100.0) * self.total / 100 + 0.5), 1)
            # The first bucket whose running count reaches the target.
            i = min(bisect_left(self.cumulative, target), last)
            value = h.get_value_from_index(self.indices[i])
            out[p] = (
                h.get_highest_equivalent_value(value) if p else h.get_lowest_equivalent_value(value)
            )
        return out

    def mean_and_stddev(self) -> tuple[float, float]:
        """hdrh's mean and standard deviation, each bucket counted at its median equivalent
        value, with C-level maps and sums over the buckets (the same arithmetic, in the same
        order, as a Python loop over them)."""
        if not self.total:
            return 0.0, 0.0
        n = self.total
        mids = self._middles()
        mean = sum(map(mul, mids, self.counts)) / n
        deviations = map(pow, map(sub, mids, repeat(mean)), repeat(2))
        var = sum(map(mul, deviations, self.counts)) / n
        return mean, math.sqrt(var)

    def _middles(self) -> array[int]:
        """The median equivalent value of each non-empty bucket, one HdrHistogram bucket
        (a power of two) at a time: indices below 2 x half are bucket 0, then `half` per
        bucket; in bucket b, index i's middle is ((i - b x half) << (b + unit)) plus half
        a step."""
        h, idx = self.hist, self.indices
        shift, half, unit = (
            h.sub_bucket_half_count_magnitude,
            h.sub_bucket_half_count,
            h.unit_magnitude,
        )
        out = array("q")
        start = 0
        while start < len(idx):
            b = max((idx[start] >> shift) - 1, 0)
            end = bisect_left(idx, (b + 2) << shift, start)
            step = b + unit
            offset = ((1 << step) >> 1) - ((b * half) << step)
            out.extend(map(add, map(lshift, idx[start:end], repeat(step)), repeat(offset)))
            start = end
        return out


def percentile_us(hist: HdrHistogram, p: float) -> float:
    return Recorded(hist).values_at((p,))[p] / 1000.0


def summarise(stats: Stats, ticks: Iterable[float] = (*SUMMARY_TICKS,)) -> Summary:
    h = _all_ops_for_reading(stats)
    n = h.get_total_count()
    dur = stats.duration or 0.0
    rate = n / dur if dur > 0 else 0.0
    moved = stats.bytes_in + stats.bytes_out
    recorded = Recorded(h)
    per_op = {}
    for kind, hk in sorted(stats.hist.items()):
        c = hk.get_total_count()
        at = (recorded if hk is h else Recorded(hk)).values_at((50.0, 99.0))
        per_op[kind] = (c, c / dur if dur > 0 else 0.0, at[50.0] / 1000, at[99.0] / 1000)
    at = recorded.values_at((*ticks, 100.0))
    looked_up = stats.hits + stats.misses
    return Summary.deferring_mean(
        recorded,
        duration=dur,
        ops=n,
        ops_per_s=rate,
        mib_per_s=moved / dur / 1048576 if dur > 0 else 0.0,
        hits=stats.hits,
        misses=stats.misses,
        hit_rate=stats.hits / looked_up if looked_up else None,
        errors=stats.error_count,
        min_us=h.get_min_value() / 1000 if n else 0.0,
        max_us=h.get_max_value() / 1000 if n else 0.0,
        percentiles_us={t: v / 1000 for t, v in at.items()},
        per_op=per_op,
        lost=max(0, stats.expected_deliveries - stats.delivered),
    )


def percentile_curve(hist: HdrHistogram, max_nines: int = 6) -> list[tuple[float, float]]:
    """(percentile, latency µs) points evenly spaced in 1/(1-p), HdrHistogram-plot style."""
    if not hist.get_total_count():
        return []
    ps = []
    steps_per_half = 4
    for i in range(max_nines * 10 * steps_per_half // 3 + 1):
        p = 100.0 * (1 - 0.5 ** (i / steps_per_half))
        ps.append(p)
        if p >= 100 - 10 ** (2 - max_nines):
            break
    at = Recorded(hist).values_at(ps)
    return [*((p, at[p] / 1000) for p in ps), (100.0, hist.get_max_value() / 1000)]


def format_us(us: float) -> str:
    """A latency for people: 812ns, 12.3µs, 4.56ms, 1.20s."""
    if us < 1:
        return f"{us * 1000:.0f}ns"
    if us < 1000:
        return f"{us:.1f}µs" if us < 100 else f"{us:.0f}µs"
    if us < 1_000_000:
        return f"{us / 1000:.2f}ms"
    return f"{us / 1e6:.2f}s"


def hot_cold_rates(stats: Stats) -> tuple[float | None, float | None]:
    """Hit rate on the hottest keys and on the rest, from the counters the engine keeps."""
    looked_up = stats.hits + stats.misses
    hot = stats.hot_hits / stats.hot_gets if stats.hot_gets else None
    cold_gets = looked_up - stats.hot_gets
    cold = (stats.hits - stats.hot_hits) / cold_gets if cold_gets > 0 else None
    return hot, cold
