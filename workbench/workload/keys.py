"""Which key each operation uses: seeded key choosers over a distribution, the keys a
worker owns, how the key space is split between workers, and keys formatted from their
indexes (pre-formatted in a table on the hot path)."""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Callable

from workbench.workload.forms import Dist

DEFAULT_HOT_SHARE = 0.2

# A sequential stream starts client c at key c * SEQUENCE_STRIDE, so clients do not march
# over the same keys in step.
SEQUENCE_STRIDE = 7919


def _zipf_cdf(n: int, s: float) -> list[float]:
    weights = (1.0 / math.pow(i, s) for i in range(1, n + 1))
    cdf = list(itertools.accumulate(weights))
    total = cdf[-1]
    return [c / total for c in cdf]


_ZIPF_CACHE: dict[tuple[int, float], tuple[list[float], list[int]]] = {}


def key_chooser(dist: Dist, n: int, rng: random.Random, start: int = 0) -> Callable[[], int]:
    """A function giving key indexes in [0, n) under `dist`; index 0 is the hottest key."""
    rand = rng.random
    if dist.kind == "uniform":
        return lambda: int(rand() * n)
    if dist.kind == "sequential":
        counter = itertools.count(start)
        return lambda: next(counter) % n
    if dist.kind == "zipf":
        key = (n, dist.params[0])
        if key not in _ZIPF_CACHE:
            cdf = _zipf_cdf(n, dist.params[0])
            slots = 1 << 16
            starts = [bisect.bisect_left(cdf, j / slots) for j in range(slots + 1)]
            _ZIPF_CACHE[key] = (cdf, [min(x, n - 1) for x in starts])
        cdf, starts = _ZIPF_CACHE[key]
        last = n - 1
        pick = bisect.bisect_left
        slots = len(starts) - 1

        def zipf() -> int:
            # The slot of u bounds where u falls in the CDF, so bisect searches a few keys only.
            u = rand()
            j = int(u * slots)
            return min(pick(cdf, u, starts[j], starts[j + 1] + 1), last)

        return zipf
    if dist.kind == "gaussian":
        mean, sd = gaussian_keys(dist, n)
        gauss = rng.gauss

        def gaussian() -> int:
            for _ in range(64):  # rejection; a far tail sample is rare, and the loop is bounded
                i = int(gauss(mean, sd))
                if 0 <= i < n:
                    return i
            return min(max(int(mean), 0), n - 1)

        return gaussian
    access = dist.params[0]
    hot, cold = hot_cold_split(dist, n)

    def hotcold() -> int:
        if rand() < access:
            return int(rand() * hot)
        return min(hot + int(rand() * cold), n - 1)

    return hotcold


OWNED_TRIES = 64  # draws per worker count before the nearest owned key is taken instead


def owned_chooser(pick: Callable[[], int], n: int, worker: int, workers: int) -> Callable[[], int]:
    """`pick` restricted to the keys worker `worker` of `workers` owns (k % workers ==
    worker): the global popularity conditioned on them, by rejection, so N workers with
    their own caches see the key space as one cache would. Bounded: after OWNED_TRIES draws
    per worker (a distribution with nearly no mass on this worker's keys) the owned key
    nearest to the last draw is taken."""
    if workers <= 1:
        return pick
    tries = OWNED_TRIES * workers
    if worker >= n:  # more workers than keys: this one owns none, it shares the first
        return lambda: worker % n

    def owned() -> int:
        k = 0
        for _ in range(tries):
            k = pick()
            if k % workers == worker:
                return k
        k = k - k % workers + worker
        return k if k < n else k - workers

    return owned


def owned_keys(n: int, worker: int, workers: int) -> range:
    """The keys worker `worker` of `workers` owns when each holds its own cache."""
    return range(worker, n, workers) if workers > 1 else range(n)


def hot_cold_split(dist: Dist, n: int) -> tuple[int, int]:
    """hotcold(access, share) over n keys: how many keys are hot, how many cold."""
    hot = max(1, int(n * dist.params[1]))
    return hot, max(1, n - hot)


def gaussian_keys(dist: Dist, n: int) -> tuple[float, float]:
    """gaussian(mean, stddev) over n keys: its mean and deviation as key indexes."""
    return dist.params[0] * n, dist.params[1] * n


def hot_end(dist: Dist, keys: int, key_offset: int) -> int:
    """Keys below this index are the hot ones (index 0 is the hottest in every distribution)."""
    share = dist.params[1] if dist.kind == "hotcold" else DEFAULT_HOT_SHARE
    return key_offset + max(1, int(keys * share))


def format_key(prefix: str, index: int, length: int) -> bytes:
    """The key for an index: the prefix, then the index zero-padded to `length` characters."""
    return (key_template(prefix, length) % index).encode()


KEY_TABLE_LIMIT = 1 << 18  # keys pre-formatted per client stream up to this many


def key_template(prefix: str, length: int) -> str:
    return prefix.replace("%", "%%") + f"%0{max(length - len(prefix), 1)}d"


_KEY_TABLES: dict[tuple[str, int, int], list[bytes]] = {}


def key_table(fmt: str, offset: int, keys: int) -> list[bytes] | None:
    """Pre-formatted keys, shared by the streams of one process."""
    if keys > KEY_TABLE_LIMIT:
        return None
    cache_key = (fmt, offset, keys)
    if cache_key not in _KEY_TABLES:
        _KEY_TABLES[cache_key] = [(fmt % (offset + i)).encode() for i in range(keys)]
    return _KEY_TABLES[cache_key]


def partition(keys: int, workers: int, worker: int) -> tuple[int, int]:
    """The [offset, count) share of the key space that worker `worker` of `workers` owns."""
    base, extra = divmod(keys, workers)
    offset = worker * base + min(worker, extra)
    return offset, base + (1 if worker < extra else 0)
