"""Seeded workload generation: operations, keys, value sizes and TTLs for one virtual client.

Distributions are written as text (``zipf(0.99)``, ``hotcold(0.8,0.2)``, ``uniform(8,3000)``)
and parsed here once, at load time for validation and in each worker for generation.
Values are slices of one pre-generated random buffer, so no op allocates a value.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from workbench.sdk.errors import SpecError
from workbench.sdk.ops import MIX_CODES
from workbench.sdk.options import parse_duration, parse_size

# The written forms of each distribution, with the names of their parameters: parsed
# below, and shown as one input per parameter in the TUI form.
KEY_DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "uniform": (),
    "zipf": ("s",),
    "gaussian": ("mean", "stddev"),
    "sequential": (),
    "hotcold": ("hot access share", "hot key share"),
}
VALUE_SIZE_FORMS: dict[str, tuple[str, ...]] = {
    "fixed": ("size",),
    "uniform": ("min", "max"),
    "weighted": ("size:weight, ...",),
}
TTL_FORMS: dict[str, tuple[str, ...]] = {"none": (), "fixed": ("seconds",), "range": ("min", "max")}
# Each form's parameters when a form is picked without them (the TUI fills them in): the key
# patterns take memtier's defaults (`--key-pattern` uses them too): the middle of the range
# with a sixth of it as deviation, zipf 0.99, and 80% of gets on 20% of the keys.
KEY_DEFAULTS: dict[str, tuple[str, ...]] = {
    "zipf": ("0.99",),
    "gaussian": ("0.5", "0.1667"),
    "hotcold": ("0.8", "0.2"),
}
VALUE_SIZE_DEFAULTS: dict[str, tuple[str, ...]] = {
    "fixed": ("100",),
    "uniform": ("8", "3000"),
    "weighted": ("100:9, 4KiB:1",),
}
TTL_DEFAULTS: dict[str, tuple[str, ...]] = {"fixed": ("60",), "range": ("1", "5")}

DEFAULT_HOT_SHARE = 0.2
# A sequential stream starts client c at key c * SEQUENCE_STRIDE, so clients do not march
# over the same keys in step.
SEQUENCE_STRIDE = 7919
_CALL = re.compile(r"\s*([a-z_]+)\s*(?:\((.*)\))?\s*$")


@dataclass(frozen=True)
class Dist:
    """A parsed distribution: its name and numeric parameters."""

    kind: str
    params: tuple[float, ...] = ()


def _parse_call(
    text: str, where: str, forms: Mapping[str, tuple[str, ...]], example: str
) -> tuple[str, list[str]]:
    m = _CALL.match(str(text))
    expected = f"expected one of {', '.join(forms)} (e.g. {example})"
    if not m or m.group(1) not in forms:
        raise SpecError(f"{expected}; got {text!r}", where)
    args = [a.strip() for a in m.group(2).split(",")] if m.group(2) else []
    return m.group(1), [a for a in args if a]


def _numbers(args: list[str], count: int, where: str, what: str) -> tuple[float, ...]:
    if len(args) != count:
        raise SpecError(f"expected {what}; got {len(args)} argument(s)", where)
    try:
        numbers = tuple(float(a) for a in args)
    except ValueError:
        raise SpecError(f"expected {what}; got {', '.join(args)}", where) from None
    if not all(math.isfinite(n) for n in numbers):
        raise SpecError(f"expected {what} as finite numbers; got {', '.join(args)}", where)
    return numbers


# Past this exponent nearly every draw is the hottest key already, and the weights 1/i**s
# would overflow a float for large key spaces.
MAX_ZIPF = 20.0


def parse_key_distribution(text: str, where: str = "workload.key_distribution") -> Dist:
    kind, args = _parse_call(text, where, KEY_DISTRIBUTIONS, "zipf(0.99) or hotcold(0.8,0.2)")
    if kind in ("uniform", "sequential"):
        _numbers(args, 0, where, f"{kind} without arguments")
        return Dist(kind)
    if kind == "zipf":
        (s,) = _numbers(args, 1, where, f"zipf(s) with 0 < s <= {MAX_ZIPF:g}")
        if not 0 < s <= MAX_ZIPF:
            raise SpecError(f"expected zipf(s) with 0 < s <= {MAX_ZIPF:g}; got {s:g}", where)
        return Dist(kind, (s,))
    if kind == "gaussian":
        mean, sd = _numbers(args, 2, where, "gaussian(mean, stddev) as shares of the key space")
        if not 0 <= mean <= 1 or sd <= 0:
            raise SpecError(
                "expected gaussian(mean, stddev) with 0 <= mean <= 1 and stddev > 0; "
                f"got gaussian({mean:g}, {sd:g})",
                where,
            )
        return Dist(kind, (mean, sd))
    access, keys = _numbers(
        args, 2, where, "hotcold(access share, key share), e.g. hotcold(0.8,0.2)"
    )
    if not (0 < access < 1 and 0 < keys < 1):
        raise SpecError(
            "expected hotcold(access share, key share) with both between 0 and 1; "
            f"got hotcold({access:g}, {keys:g})",
            where,
        )
    return Dist(kind, (access, keys))


def parse_value_size(text: str, where: str = "workload.value_size") -> Dist:
    """fixed(N), uniform(MIN,MAX) or weighted(SIZE:WEIGHT, ...); sizes take units (4KiB, 1MB).

    A bare size (100, 4KiB) means fixed(size)."""
    if "(" not in text and text.strip() and text.strip()[0].isdigit():
        text = f"fixed({text.strip()})"
    kind, args = _parse_call(text, where, VALUE_SIZE_FORMS, "uniform(8,3000)")
    if kind == "fixed":
        if len(args) != 1:
            raise SpecError("expected fixed(SIZE), e.g. fixed(100)", where)
        return Dist(kind, (float(parse_size(args[0], where)),))
    if kind == "uniform":
        if len(args) != 2:
            raise SpecError("expected uniform(MIN,MAX), e.g. uniform(8,3000)", where)
        lo, hi = parse_size(args[0], where), parse_size(args[1], where)
        if lo > hi:
            raise SpecError(f"expected MIN <= MAX in uniform(MIN,MAX); got {lo} > {hi}", where)
        return Dist(kind, (float(lo), float(hi)))
    pairs: list[float] = []
    for arg in args:
        size, _, weight = arg.partition(":")
        try:
            w = float(weight)
        except ValueError:
            raise SpecError(f"expected weighted(SIZE:WEIGHT, ...); got {arg!r}", where) from None
        if not w > 0 or not math.isfinite(w):
            raise SpecError(f"expected positive finite weights; got {arg!r}", where)
        pairs += [float(parse_size(size, where)), w]
    if not pairs:
        raise SpecError("expected weighted(SIZE:WEIGHT, ...), e.g. weighted(100:9,10KiB:1)", where)
    return Dist(kind, tuple(pairs))


def parse_ttl(text: str, where: str = "workload.ttl") -> Dist:
    """none, fixed(SECONDS) or range(MIN,MAX); a bare duration (60, 2s) means fixed."""
    if "(" not in text and text.strip() and text.strip()[0].isdigit():
        text = f"fixed({text.strip()})"
    kind, args = _parse_call(text, where, TTL_FORMS, "fixed(2s) or range(1,5)")
    if kind == "none":
        return Dist(kind)
    if kind == "fixed":
        if len(args) != 1:
            raise SpecError("expected fixed(SECONDS), e.g. fixed(2s)", where)
        return Dist(kind, (parse_duration(args[0], where),))
    if len(args) != 2:
        raise SpecError("expected range(MIN,MAX) in seconds, e.g. range(1,5)", where)
    lo, hi = parse_duration(args[0], where), parse_duration(args[1], where)
    if lo > hi:
        raise SpecError(f"expected MIN <= MAX in range(MIN,MAX); got {lo:g} > {hi:g}", where)
    return Dist(kind, (lo, hi))


def parse_mix(mix: Mapping[str, float], where: str = "workload.mix") -> dict[int, float]:
    if not mix:
        raise SpecError(f"expected at least one operation of {', '.join(MIX_CODES)}", where)
    out: dict[int, float] = {}
    for name, weight in mix.items():
        if name not in MIX_CODES:
            raise SpecError(
                f"expected one of {', '.join(MIX_CODES)}; got {name!r}", f"{where}.{name}"
            )
        if not weight >= 0 or not math.isfinite(weight):
            raise SpecError(
                f"expected a finite weight of 0 or more; got {weight}", f"{where}.{name}"
            )
        if weight > 0:
            out[MIX_CODES[name]] = float(weight)
    if not out:
        raise SpecError("expected at least one operation with a positive weight", where)
    return out


def max_value_size(dist: Dist) -> int:
    if dist.kind == "weighted":
        return int(max(dist.params[0::2]))
    return int(dist.params[-1])


def mean_value_size(dist: Dist) -> float:
    """The mean of a value-size distribution (fixed, uniform or weighted), in bytes."""
    if dist.kind == "fixed":
        return dist.params[0]
    if dist.kind == "uniform":
        return (dist.params[0] + dist.params[1]) / 2
    sizes, weights = dist.params[0::2], dist.params[1::2]
    return sum(s * w for s, w in zip(sizes, weights, strict=True)) / sum(weights)


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


def size_chooser(dist: Dist, rng: random.Random) -> Callable[[], int]:
    if dist.kind == "fixed":
        size = int(dist.params[0])
        return lambda: size
    if dist.kind == "uniform":
        lo, hi = int(dist.params[0]), int(dist.params[1])
        return lambda: rng.randint(lo, hi)
    sizes = [int(s) for s in dist.params[0::2]]
    cum = list(itertools.accumulate(dist.params[1::2]))
    choices = rng.choices
    return lambda: choices(sizes, cum_weights=cum)[0]


def ttl_chooser(dist: Dist, rng: random.Random) -> Callable[[], float | None]:
    if dist.kind == "none":
        return lambda: None
    if dist.kind == "fixed":
        ttl = dist.params[0]
        return lambda: ttl
    lo, hi = dist.params
    return lambda: rng.uniform(lo, hi)


def format_key(prefix: str, index: int, length: int) -> bytes:
    """The key for an index: the prefix, then the index zero-padded to `length` characters."""
    return (key_template(prefix, length) % index).encode()


class ValueBuffer:
    """One random buffer; values are memoryview slices of it, so none is allocated per op."""

    SPREAD = 4096

    def __init__(self, max_size: int, seed: int) -> None:
        self.data = random.Random(seed).randbytes(max_size + self.SPREAD)
        self.view = memoryview(self.data)

    def value(self, key_index: int, size: int) -> memoryview:
        # The offset depends on the key only, so a value can be checked against its key.
        off = key_index % self.SPREAD
        return self.view[off : off + size]


@dataclass
class Op:
    code: int
    key_index: int
    key: bytes
    size: int
    ttl: float | None


class OpStream:
    """The seeded operation sequence of one virtual client; same seed, same sequence.

    `next` is on the hot path of every op: it avoids `random.choices` and f-string
    formatting (each about 1 µs) in favour of bisect on cumulative weights and a key table.
    """

    def __init__(
        self,
        *,
        mix: Mapping[int, float],
        key_dist: Dist,
        keys: int,
        key_offset: int,
        key_prefix: str,
        key_length: int,
        value_size: Dist,
        ttl: Dist,
        seed: int,
        client_id: int,
        owner: tuple[int, int] = (0, 1),
    ) -> None:
        """`owner` = (worker, workers): draw only the keys that worker owns (`owned_chooser`),
        for systems whose every worker holds its own cache."""
        self.rng = random.Random(f"{seed}:{client_id}")
        self.codes = list(mix)
        total = sum(mix.values())
        self.cum = [c / total for c in itertools.accumulate(mix.values())]
        self.cum[-1] = 1.0
        self.key_offset = key_offset
        self.hot_end = hot_end(key_dist, keys, key_offset)
        self.prefix, self.key_length = key_prefix, key_length
        self.key_format = key_template(key_prefix, key_length)
        self.key_table = _key_table(self.key_format, key_offset, keys)
        self.next_key = owned_chooser(
            key_chooser(key_dist, keys, self.rng, start=client_id * SEQUENCE_STRIDE), keys, *owner
        )
        self.next_size = size_chooser(value_size, self.rng)
        self.next_ttl = ttl_chooser(ttl, self.rng)
        self.next = self._make_next()

    def _make_next(self) -> Callable[[], tuple[int, int, bytes, int, float | None]]:
        """(op code, key index, key, value size, ttl), as one closure over local names."""
        codes, cum, rand = self.codes, self.cum, self.rng.random
        single = codes[0] if len(codes) == 1 else None
        next_key, next_size, next_ttl = self.next_key, self.next_size, self.next_ttl
        offset, table, fmt = self.key_offset, self.key_table, self.key_format
        pick = bisect.bisect_right

        def nxt() -> tuple[int, int, bytes, int, float | None]:
            code = single if single is not None else codes[pick(cum, rand())]
            local = next_key()
            key = table[local] if table is not None else (fmt % (offset + local)).encode()
            return code, offset + local, key, next_size(), next_ttl()

        return nxt


KEY_TABLE_LIMIT = 1 << 18  # keys pre-formatted per client stream up to this many


def key_template(prefix: str, length: int) -> str:
    return prefix.replace("%", "%%") + f"%0{max(length - len(prefix), 1)}d"


_KEY_TABLES: dict[tuple[str, int, int], list[bytes]] = {}


def _key_table(fmt: str, offset: int, keys: int) -> list[bytes] | None:
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


def share(total: int | None, plans: int, all_clients: int) -> int | None:
    """A worker's part of an op budget: `total` split by its share of the clients
    (rounded half to even, at least 1), 0 for a worker without clients; None: no budget."""
    if total is None:
        return None
    return max(1, round(total * plans / max(all_clients, 1))) if plans else 0
