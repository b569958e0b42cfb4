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

import math
from array import array
from dataclasses import dataclass, field, replace

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


_SCALARS = 8  # per point: elapsed, ops/s, MiB/s, p50, p99, p99.9, hit rate, errors
_NONE = math.nan  # a point without a hit rate, or without ops of a kind


@dataclass(frozen=True, eq=False)
class Timeline:
    """Chart points of one step, downsampled as it grows; `add` returns a new timeline.

    `weights[i]` is how many intervals `points[i]` spans; every point but the last spans
    `stride` intervals, the last is filling up.

    The points are kept as machine words in one block of `limit` rows, taken whole at the
    first interval (a row: the point's 8 figures, then its ops/s of each op kind seen), not
    as `Point` objects: the step's memory is at its bound from its first interval instead
    of growing for the `limit` intervals it takes to fill (about 270 KB of objects against
    40 KB of words), and `points` makes the objects when a face asks for them.
    """

    stride: int = 1
    intervals: int = 0  # intervals added in all
    limit: int = MAX_POINTS
    kinds: tuple[str, ...] = ()  # op kinds, in the order first seen: the rows' last columns
    count: int = 0  # points kept
    rows: array[float] = field(default_factory=lambda: array("d"), repr=False)
    spans: array[int] = field(default_factory=lambda: array("q"), repr=False)

    def __len__(self) -> int:
        return self.count

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Timeline):
            return NotImplemented
        return (self.stride, self.intervals, self.limit, self.weights, self.points) == (
            other.stride,
            other.intervals,
            other.limit,
            other.weights,
            other.points,
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def weights(self) -> tuple[int, ...]:
        return tuple(self.spans[: self.count])

    @property
    def points(self) -> tuple[Point, ...]:
        return tuple(self._point(i) for i in range(self.count))

    def _point(self, i: int) -> Point:
        width = _SCALARS + len(self.kinds)
        row = self.rows[i * width : (i + 1) * width]
        return Point(
            elapsed=row[0],
            ops_per_s=row[1],
            mib_per_s=row[2],
            p50_us=row[3],
            p99_us=row[4],
            p999_us=row[5],
            per_op_ops={
                k: v for k, v in zip(self.kinds, row[_SCALARS:], strict=True) if not math.isnan(v)
            },
            hit_rate=None if math.isnan(row[6]) else row[6],
            errors=int(row[7]),
        )

    def _with_kinds(self, p: Point) -> Timeline:
        """This timeline with a column for each of `p`'s op kinds it has not seen yet."""
        new = [k for k in p.per_op_ops if k not in self.kinds]
        if not new and self.rows:
            return self
        kinds = (*self.kinds, *new)
        old, width = _SCALARS + len(self.kinds), _SCALARS + len(kinds)
        rows = array("d", [_NONE]) * (self.limit * width)  # every row, from the first interval
        for i in range(self.count):
            rows[i * width : i * width + old] = self.rows[i * old : (i + 1) * old]
        spans = self.spans if self.spans else array("q", [0]) * self.limit
        return replace(self, kinds=kinds, rows=rows, spans=spans)

    def _put(self, i: int, p: Point) -> None:
        width = _SCALARS + len(self.kinds)
        hit_rate = _NONE if p.hit_rate is None else p.hit_rate
        scalars = (p.elapsed, p.ops_per_s, p.mib_per_s, p.p50_us, p.p99_us, p.p999_us)
        row = [*scalars, hit_rate, float(p.errors)]
        row += [p.per_op_ops.get(k, _NONE) for k in self.kinds]
        self.rows[i * width : (i + 1) * width] = array("d", row)

    def add(self, p: Point) -> Timeline:
        out = self._with_kinds(p)
        out = replace(out, rows=array("d", out.rows), spans=array("q", out.spans))  # a copy
        n = out.count
        if n and out.spans[n - 1] < out.stride:
            out._put(n - 1, combine(out._point(n - 1), out.spans[n - 1], p, 1))
            out.spans[n - 1] += 1
        else:
            out._put(n, p)
            out.spans[n] = 1
            n += 1
        out = replace(out, count=n, intervals=out.intervals + 1)
        return out.halved() if n >= out.limit and out.spans[n - 1] >= out.stride else out

    def halved(self) -> Timeline:
        """Neighbours merged in pairs: half the points, each spanning twice the intervals."""
        out = replace(self, rows=array("d", self.rows), spans=array("q", self.spans))
        n, kept = self.count, 0
        for i in range(0, n - 1, 2):
            a, b = self._point(i), self._point(i + 1)
            out._put(kept, combine(a, self.spans[i], b, self.spans[i + 1]))
            out.spans[kept] = self.spans[i] + self.spans[i + 1]
            kept += 1
        if n % 2:
            out._put(kept, self._point(n - 1))
            out.spans[kept] = self.spans[n - 1]
            kept += 1
        return replace(out, count=kept, stride=self.stride * 2)
