"""Resampling weights: which samples, and how often, each bootstrap replicate takes.

A replicate is a row of weights over one side's intervals, laid out repeat after repeat.
Two schemes (`weights`):

- over repeats: the repeats drawn with replacement, then within each drawn repeat its
  intervals drawn in blocks (a two-level bootstrap). The repeats carry what changes from
  one run to the next (a warmer machine, a neighbour's load), which a run's intervals
  alone cannot show; the intervals keep a spread where three repeats happen to agree
  (counts that come in whole batches can make them equal), so no interval is ever
  narrower than the measurement.
- over intervals: every repeat kept once, its intervals drawn in blocks. Blocks rather
  than single intervals, because an interval's figures lean on its neighbours' (a slow
  second tends to follow a slow second): the circular moving-block bootstrap (Politis and
  Romano, 1992) keeps that dependence, with blocks of about n^(1/3) intervals (Hall,
  Horowitz and Jing, 1995).

`units` says how many independent pieces a scheme resamples (repeats, or blocks): the
spread of so few needs Student's t, not the normal, to become an interval (`change`).

Every draw comes from a generator seeded with a fixed number, so the same runs give the
same interval every time: a comparison in CI, or in a test, never flickers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

REPLICATES = 1000  # enough for a standard error (Efron and Tibshirani suggest 200)
SEED = 20_240_601


def block_length(n: int) -> int:
    """Intervals per block for a repeat of `n` intervals: about the cube root of n."""
    return max(1, round(math.pow(n, 1 / 3)))


def block_weights(rng: np.random.Generator, n: int, replicates: int) -> np.ndarray:
    """(replicates, n): how often each of `n` intervals is drawn when ceil(n / l) blocks of
    l consecutive intervals (wrapping round the end) are drawn and cut to n draws."""
    length = block_length(n)
    blocks = -(-n // length)
    starts = rng.integers(0, n, size=(replicates, blocks))
    picks = ((starts[:, :, None] + np.arange(length)) % n).reshape(replicates, -1)[:, :n]
    flat = (np.arange(replicates)[:, None] * n + picks).ravel()
    counts = np.bincount(flat, minlength=replicates * n)
    return counts.reshape(replicates, n).astype(np.float64)


def repeat_copies(rng: np.random.Generator, repeats: int, replicates: int) -> np.ndarray:
    """(replicates, repeats): how often each repeat is drawn when `repeats` are drawn with
    replacement."""
    drawn = rng.integers(0, repeats, size=(replicates, repeats))
    flat = (np.arange(replicates)[:, None] * repeats + drawn).ravel()
    return np.bincount(flat, minlength=replicates * repeats).reshape(replicates, repeats)


def weights(
    lengths: Sequence[int],
    *,
    over_repeats: bool,
    replicates: int = REPLICATES,
    seed: int = SEED,
) -> np.ndarray:
    """(replicates, sum(lengths)) weights over the intervals of repeats of `lengths`
    intervals each: the repeats drawn with replacement when `over_repeats`, else each kept
    once; within every drawn copy of a repeat, its intervals drawn in blocks."""
    if not lengths or min(lengths) < 1:
        raise ValueError(f"every repeat needs an interval; got lengths {list(lengths)}")
    rng = np.random.default_rng(seed)
    if over_repeats:
        copies = repeat_copies(rng, len(lengths), replicates)
    else:
        copies = np.ones((replicates, len(lengths)), dtype=np.int64)
    parts = []
    for r, n in enumerate(lengths):
        part = np.zeros((replicates, n))
        for copy in range(int(copies[:, r].max())):
            drawn = copies[:, r] > copy  # the replicates that drew this repeat again
            part += block_weights(rng, n, replicates) * drawn[:, None]
        parts.append(part)
    return np.concatenate(parts, axis=1)


def units(lengths: Sequence[int], *, over_repeats: bool) -> int:
    """The independent pieces a scheme resamples: the repeats, or every repeat's blocks."""
    if over_repeats:
        return len(lengths)
    return sum(-(-n // block_length(n)) for n in lengths)


def whole(lengths: Sequence[int]) -> np.ndarray:
    """(1, sum(lengths)): every interval once, the figures of the data as it is."""
    return np.ones((1, int(sum(lengths))))
