"""Every number the workbench shows comes from here: recording, merging and summarising.

Latencies are kept in nanoseconds, in the histograms of `workbench.results.histograms` (named
here again for every reader: `new_histogram`, `fold`, `encode`, `Recorded`...).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from typing import Any

from hdrh.histogram import HdrHistogram

from workbench.results.hiccups import Hiccups
from workbench.results.histograms import HIGHEST_NS as HIGHEST_NS
from workbench.results.histograms import LOWEST_NS as LOWEST_NS
from workbench.results.histograms import SIGNIFICANT_DIGITS as SIGNIFICANT_DIGITS
from workbench.results.histograms import Recorded as Recorded
from workbench.results.histograms import decode as decode
from workbench.results.histograms import encode as encode
from workbench.results.histograms import fold as fold
from workbench.results.histograms import format_us as format_us
from workbench.results.histograms import new_histogram as new_histogram
from workbench.results.histograms import percentile_us as percentile_us
from workbench.results.histograms import quantise as quantise
from workbench.sdk.ops import RECEIVED

# The ticks the source documents print (50, 75, 87.5, ... halving the rest each time).
DOC_TICKS = (50.0, 75.0, 87.5, 93.75, 96.875, 98.4375, 99.21875)
SUMMARY_TICKS = tuple(sorted({*DOC_TICKS, 90.0, 99.0, 99.9, 99.99}))


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
    # The load machine's hiccups over the span (`workbench.results.hiccups.Hiccups`), added by the
    # coordinator from the hiccup meter; never sent by a worker. On the wire and in the
    # store only when measured.
    hiccups: Hiccups | None = None
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
        if other.hiccups is not None:
            if self.hiccups is None:
                self.hiccups = Hiccups()
            self.hiccups.merge(other.hiccups)
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
        if self.hiccups is not None:
            data["hiccups"] = self.hiccups.to_dict()
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
        if data.get("hiccups"):
            stats.hiccups = Hiccups.from_dict(data["hiccups"])
        return stats


_STATS_FIELDS = frozenset(f.name for f in dataclass_fields(Stats))


# The keys of an interval's STATS on the wire (docs/frames.md): every engine sends these.
STATS_KEYS = tuple(Stats().to_dict())
# Keys an interval's statistics hold only when they have something (a trace replay's).
OPTIONAL_STATS_KEYS = ("skipped", "hiccups", "outcomes")


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


def hot_cold_rates(stats: Stats) -> tuple[float | None, float | None]:
    """Hit rate on the hottest keys and on the rest, from the counters the engine keeps."""
    looked_up = stats.hits + stats.misses
    hot = stats.hot_hits / stats.hot_gets if stats.hot_gets else None
    cold_gets = looked_up - stats.hot_gets
    cold = (stats.hits - stats.hot_hits) / cold_gets if cold_gets > 0 else None
    return hot, cold
