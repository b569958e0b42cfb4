"""One side of a comparison as the statistics read it: for every interval of every repeat,
its operations, seconds, errors, hits and misses, and its latency histogram's buckets.

The figures are the ones `metrics.summarise` reads (issued ops of every kind but
deliveries, errors / (ops + errors), hits / (hits + misses)), so the comparison's point
figures are the report's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import numpy as np
from hdrh.histogram import HdrHistogram

from workbench.report.model import StepData
from workbench.results.metrics import Recorded, Stats, new_histogram


@dataclass(frozen=True, eq=False)
class Evidence:
    """Per-interval sums as arrays, repeat after repeat (`lengths` intervals each)."""

    lengths: tuple[int, ...]
    duration: np.ndarray
    ops: np.ndarray
    errors: np.ndarray
    hits: np.ndarray
    misses: np.ndarray
    running: np.ndarray  # intervals x buckets: each interval's histogram, counts running
    values: np.ndarray  # each bucket's value (µs), as a percentile reads it

    @property
    def repeats(self) -> int:
        return len(self.lengths)

    @property
    def intervals(self) -> int:
        return int(sum(self.lengths))

    @property
    def total_ops(self) -> int:
        return int(self.ops.sum())


def evidence(steps: Iterable[StepData]) -> Evidence:
    """The measured intervals of `steps` (the repeats of one step, or one step alone); a
    step without a measured interval is left out."""
    rows: list[tuple[float, int, int, int, int, dict[int, int]]] = []
    lengths: list[int] = []
    for step in steps:
        mine = [_row(i.stats) for i in step.intervals if i.stats.duration > 0]
        if mine:
            rows += mine
            lengths.append(len(mine))
    indices = np.unique(np.fromiter((i for r in rows for i in r[5]), dtype=np.int64))
    counts = np.zeros((len(rows), len(indices)))
    for n, row in enumerate(rows):
        if row[5]:
            at = np.searchsorted(indices, np.fromiter(row[5], dtype=np.int64))
            counts[n, at] = np.fromiter(row[5].values(), dtype=np.float64)
    columns = np.array([r[:5] for r in rows], dtype=np.float64).reshape(-1, 5).T
    values = np.array([_value_us(int(i)) for i in indices])
    duration, ops, errors, hits, misses = columns
    running = np.cumsum(counts, axis=1)
    return Evidence(tuple(lengths), duration, ops, errors, hits, misses, running, values)


def _row(stats: Stats) -> tuple[float, int, int, int, int, dict[int, int]]:
    """An interval's sums and its issued ops' histogram buckets ({counts index: count})."""
    buckets: dict[int, int] = {}
    for kind, hist in stats.hist.items():
        if kind == "deliver":
            continue
        recorded = Recorded(hist)
        for index, count in zip(recorded.indices, recorded.counts, strict=True):
            buckets[index] = buckets.get(index, 0) + count
    return (stats.duration, stats.ops, stats.error_count, stats.hits, stats.misses, buckets)


@cache
def _value_us(index: int) -> float:
    """What a percentile landing in bucket `index` reads, in µs (every histogram the
    workbench records has `new_histogram`'s layout)."""
    hist = _reference()
    value_ns: int = hist.get_highest_equivalent_value(hist.get_value_from_index(index))
    return value_ns / 1000


@cache
def _reference() -> HdrHistogram:
    return new_histogram()
