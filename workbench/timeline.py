"""A step's figures over time in bounded form: at most `MAX_POINTS` chart points, however
long the run.

Each interval becomes a `Point`. Once a timeline holds `MAX_POINTS` points, neighbours are
merged in pairs and each later point spans twice as many intervals, so the whole run stays
on the chart at a resolution that halves as it doubles in length, and an hour of one-second
intervals costs what four minutes do. The per-interval detail stays in the store.

Merging a span: rates (ops/s, MiB/s, per-op ops/s, hit rate) are the mean of its intervals;
latency percentiles are the highest interval's, so a spike stays visible at any zoom;
errors are summed over the span.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

MAX_POINTS = 512  # above the widest chart's dots (160 columns x 2 braille dots per cell)


@dataclass(frozen=True, slots=True)
class Point:
    """One interval (or, downsampled, a span of intervals) on the time axis of a step."""

    elapsed: float  # the end of the span, seconds into the step
    ops_per_s: float
    mib_per_s: float
    p50_us: float
    p99_us: float
    p999_us: float
    per_op_ops: dict[str, float]
    hit_rate: float | None
    errors: int

    def to_dict(self) -> dict[str, object]:
        return {
            "elapsed": self.elapsed,
            "ops_per_s": self.ops_per_s,
            "mib_per_s": self.mib_per_s,
            "p50_us": self.p50_us,
            "p99_us": self.p99_us,
            "p999_us": self.p999_us,
            "per_op_ops": self.per_op_ops,
            "hit_rate": self.hit_rate,
            "errors": self.errors,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object], elapsed: float) -> Point:
        return cls(
            elapsed,
            float(data["ops_per_s"]),  # type: ignore[arg-type]
            float(data["mib_per_s"]),  # type: ignore[arg-type]
            float(data["p50_us"]),  # type: ignore[arg-type]
            float(data["p99_us"]),  # type: ignore[arg-type]
            float(data["p999_us"]),  # type: ignore[arg-type]
            {str(k): float(v) for k, v in dict(data["per_op_ops"]).items()},  # type: ignore[call-overload]
            None if data["hit_rate"] is None else float(data["hit_rate"]),  # type: ignore[arg-type]
            int(data["errors"]),  # type: ignore[call-overload]
        )


def combine(a: Point, wa: int, b: Point, wb: int) -> Point:
    """The span of `a` (wa intervals) followed by `b` (wb intervals) as one point."""

    def mean(x: float, y: float) -> float:
        return (x * wa + y * wb) / (wa + wb)

    kinds = dict.fromkeys([*a.per_op_ops, *b.per_op_ops])
    if a.hit_rate is None or b.hit_rate is None:
        hit_rate = a.hit_rate if b.hit_rate is None else b.hit_rate
    else:
        hit_rate = mean(a.hit_rate, b.hit_rate)
    return Point(
        elapsed=max(a.elapsed, b.elapsed),
        ops_per_s=mean(a.ops_per_s, b.ops_per_s),
        mib_per_s=mean(a.mib_per_s, b.mib_per_s),
        p50_us=max(a.p50_us, b.p50_us),
        p99_us=max(a.p99_us, b.p99_us),
        p999_us=max(a.p999_us, b.p999_us),
        per_op_ops={k: mean(a.per_op_ops.get(k, 0.0), b.per_op_ops.get(k, 0.0)) for k in kinds},
        hit_rate=hit_rate,
        errors=a.errors + b.errors,
    )


@dataclass(frozen=True)
class Timeline:
    """Chart points of one step, downsampled as it grows; `add` returns a new timeline.

    `weights[i]` is how many intervals `points[i]` spans; every point but the last spans
    `stride` intervals, the last is filling up.
    """

    points: tuple[Point, ...] = ()
    weights: tuple[int, ...] = ()
    stride: int = 1
    intervals: int = 0  # intervals added in all
    limit: int = MAX_POINTS

    def add(self, p: Point) -> Timeline:
        points, weights = self.points, self.weights
        if points and weights[-1] < self.stride:
            merged = combine(points[-1], weights[-1], p, 1)
            points, weights = (*points[:-1], merged), (*weights[:-1], weights[-1] + 1)
        else:
            points, weights = (*points, p), (*weights, 1)
        out = replace(self, points=points, weights=weights, intervals=self.intervals + 1)
        return out.halved() if len(points) >= self.limit and weights[-1] >= self.stride else out

    def halved(self) -> Timeline:
        """Neighbours merged in pairs: half the points, each spanning twice the intervals."""
        pts, ws = self.points, self.weights
        points, weights = [], []
        for i in range(0, len(pts) - 1, 2):
            points.append(combine(pts[i], ws[i], pts[i + 1], ws[i + 1]))
            weights.append(ws[i] + ws[i + 1])
        if len(pts) % 2:
            points.append(pts[-1])
            weights.append(ws[-1])
        return replace(self, points=tuple(points), weights=tuple(weights), stride=self.stride * 2)
