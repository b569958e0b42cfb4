"""What a trace holds, in one streaming pass: memory grows with the distinct objects,
sizes and TTLs, never with the requests."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from workbench.workload.traces.records import Request

WINDOW_REQUESTS = 100_000  # requests per working-set sample


@dataclass
class TraceInfo:
    requests: int = 0
    objects: int = 0
    start: float = 0.0
    end: float = 0.0
    ops: dict[str, int] = field(default_factory=dict)
    size_percentiles: dict[str, int] = field(default_factory=dict)
    ttl_percentiles: dict[str, int] = field(default_factory=dict)
    one_hit_wonder_share: float = 0.0
    zipf_exponent: float | None = None
    working_set: list[dict[str, float]] = field(default_factory=list)

    @property
    def span(self) -> float:
        return self.end - self.start

    def as_json(self) -> dict[str, object]:
        return {**asdict(self), "span_s": self.span}


PERCENTILES = (0.0, 0.5, 0.9, 0.99, 1.0)


def _percentiles(counts: Counter[int]) -> dict[str, int]:
    total = sum(counts.values())
    if not total:
        return {}
    out: dict[str, int] = {}
    ordered = sorted(counts.items())
    for p in PERCENTILES:
        rank, seen = max(1, math.ceil(p * total)), 0
        for value, n in ordered:
            seen += n
            if seen >= rank:
                out[f"p{p * 100:g}"] = value
                break
    return out


def zipf_fit(frequencies: Iterable[int]) -> float | None:
    """The exponent s of frequency ~ rank^-s, by least squares on log-log over the ranks of
    objects requested more than once (the tail of singletons is flat and would bias it)."""
    ranked = sorted((f for f in frequencies if f > 1), reverse=True)
    if len(ranked) < 3:
        return None
    xs = [math.log(r) for r in range(1, len(ranked) + 1)]
    ys = [math.log(f) for f in ranked]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    return round(-sxy / sxx, 3) if sxx else None


def analyze(requests: Iterable[Request], window: int = WINDOW_REQUESTS) -> TraceInfo:
    """Stats of a trace. The working set over time is the distinct objects of each run of
    `window` requests, with the trace time it starts at (one pass, no total needed)."""
    info = TraceInfo()
    freq: Counter[str] = Counter()
    sizes: Counter[int] = Counter()
    ttls: Counter[int] = Counter()
    ops: Counter[str] = Counter()
    seen: set[str] = set()
    window_start = 0.0
    for i, r in enumerate(requests):
        if i == 0:
            info.start = window_start = r.time
        info.end = r.time
        freq[r.key] += 1
        sizes[r.value_size] += 1
        ttls[r.ttl] += 1
        ops[r.op] += 1
        seen.add(r.key)
        info.requests = i + 1
        if info.requests % window == 0:
            info.working_set.append({"from_s": window_start, "objects": len(seen)})
            seen = set()
            window_start = r.time
    if seen:
        info.working_set.append({"from_s": window_start, "objects": len(seen)})
    info.objects = len(freq)
    info.ops = dict(ops.most_common())
    info.size_percentiles = _percentiles(sizes)
    info.ttl_percentiles = _percentiles(ttls)
    once = sum(1 for n in freq.values() if n == 1)
    info.one_hit_wonder_share = round(once / info.objects, 4) if info.objects else 0.0
    info.zipf_exponent = zipf_fit(freq.values())
    return info
