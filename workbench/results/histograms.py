"""HdrHistogram as the workbench keeps it: its shape, folding batches of latencies in,
encoding, and reading percentiles fast.

Latencies are kept in nanoseconds. The hot path only appends an int to a list; once per
interval `fold` counts equal values and adds each distinct value's count to its bucket
(3 significant digits: the histogram's own precision). Histograms travel in the
standard HdrHistogram compressed encoding. `workbench.results.metrics` builds its statistics on
these (and names them again for its readers).
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
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, repeat
from operator import add, lshift, mul, sub
from typing import Literal

from hdrh.codec import ext_header_size, payload_header_size
from hdrh.histogram import HdrHistogram
from pyhdrh import encode as encode_varints  # hdrh's own C encoder

LOWEST_NS = 1
HIGHEST_NS = 3_600_000_000_000  # one hour
SIGNIFICANT_DIGITS = 3
# HdrHistogram with 3 significant digits keeps 2048 sub-buckets: 11 bits of each value.
_KEEP_BITS = 11


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


# memoryview formats by counter width
_UNSIGNED: dict[int, Literal["B", "H", "I", "Q"]] = {1: "B", 2: "H", 4: "I", 8: "Q"}


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


def format_us(us: float) -> str:
    """A latency for people: 812ns, 12.3µs, 4.56ms, 1.20s."""
    if us < 1:
        return f"{us * 1000:.0f}ns"
    if us < 1000:
        return f"{us:.1f}µs" if us < 100 else f"{us:.0f}µs"
    if us < 1_000_000:
        return f"{us / 1000:.2f}ms"
    return f"{us / 1e6:.2f}s"
