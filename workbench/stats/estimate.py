"""Figures of weighted samples: each replicate's rate, share or percentile.

Samples are per-interval sums (operations, seconds, errors, hits, misses) and per-interval
latency histograms; a replicate weighs each interval (`bootstrap.weights`). Sums are
weighted and only then divided, and histograms are added and only then read, never
averaged: the figure of a replicate is the figure its intervals would give as one run.
"""

from __future__ import annotations

import numpy as np

CHUNK = 256  # replicates summed at a time: a (CHUNK, buckets) matrix stays a few MB


def ratio(w: np.ndarray, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Per replicate: the weighted sum of `numerator` over that of `denominator` (NaN where
    the denominator sums to nothing)."""
    top, bottom = w @ numerator, w @ denominator
    out = np.full(top.shape, np.nan)
    np.divide(top, bottom, out=out, where=bottom > 0)
    return out


def percentile(w: np.ndarray, running: np.ndarray, values: np.ndarray, q: float) -> np.ndarray:
    """Per replicate: the value at percentile `q` of the weighted sum of the intervals'
    histograms, read as `workbench.results.metrics.Recorded.values_at` reads one: the first bucket
    whose running count reaches q% of the total, rounded half up (NaN of an empty sum).

    `running` is each interval's running count over the buckets (intervals x buckets) and
    `values` each bucket's value. A sum of histograms has its percentile between the
    lowest and highest of its parts' (give or take the rounding, hence the +-1 below), so
    only the buckets in that span are summed: a few dozen of thousands."""
    totals = running[:, -1] if running.size else np.zeros(len(running))
    out = np.full(w.shape[0], np.nan)
    parts = totals > 0
    if not parts.any():
        return out
    share = min(q, 100.0) / 100.0
    first = min(_first_reaching(running, parts, share * totals - 1))
    last = max(_first_reaching(running, parts, share * totals + 1))
    span = running[:, first : last + 1]
    for start in range(0, w.shape[0], CHUNK):
        rows = w[start : start + CHUNK]
        total = rows @ totals
        target = np.maximum(np.floor(share * total + 0.5), 1.0)
        below = ((rows @ span) < target[:, None]).sum(axis=1)
        picked = values[np.minimum(first + below, last)]
        out[start : start + CHUNK] = np.where(total > 0, picked, np.nan)
    return out


def _first_reaching(running: np.ndarray, parts: np.ndarray, counts: np.ndarray) -> list[int]:
    """For each interval in `parts`: the first bucket whose running count reaches its count
    in `counts` (the last bucket when none does)."""
    last = running.shape[1] - 1
    return [
        min(int(np.searchsorted(running[i], counts[i], side="left")), last)
        for i in np.flatnonzero(parts)
    ]


def tail_count_needed(q: float, beyond: int = 10) -> int:
    """Operations a percentile needs before it rests on more than a handful of values:
    `beyond` of them above it (p99.9: 10,000)."""
    return int(np.ceil(beyond / max(1.0 - q / 100.0, 1e-9) - 1e-6))
