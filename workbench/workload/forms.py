"""The workload's written forms, parsed once: key distributions (``zipf(0.99)``,
``hotcold(0.8,0.2)``), value sizes (``uniform(8,3000)``), TTLs and the operation mix, at
load time for validation and in each worker for generation."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
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
