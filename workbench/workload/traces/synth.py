"""Synthetic traces from the workbench's own distributions, for tests and demos."""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Iterator

from workbench.sdk.errors import SpecError
from workbench.workload.forms import parse_key_distribution, parse_value_size
from workbench.workload.generator import size_chooser
from workbench.workload.keys import key_chooser
from workbench.workload.traces.records import MAX_TIME, MAX_U32, Request

# One size is held per object (4 bytes each): 10^10 objects took the machine's memory.
MAX_OBJECTS = 100_000_000


def _check_numbers(requests: int, objects: int, rate: float, ttl: int) -> None:
    if objects > MAX_OBJECTS:
        raise SpecError(f"expected at most {MAX_OBJECTS:,} objects; got {objects:,}", "--objects")
    if not (math.isfinite(rate) and rate > 0):
        raise SpecError(f"expected a finite rate above 0; got {rate:g}", "--rate")
    if requests / rate > MAX_TIME:
        raise SpecError(
            f"expected a trace of at most {MAX_TIME:g} s; {requests} requests at {rate:g}/s "
            f"span {requests / rate:g} s",
            "--rate",
        )
    if not 0 <= ttl <= MAX_U32:
        raise SpecError(f"expected a TTL of 0 (none) to {MAX_U32} seconds; got {ttl}", "--ttl")


def synth(
    requests: int,
    objects: int,
    dist: str = "zipf(0.9)",
    sizes: str = "uniform(10,1000)",
    seed: int = 1,
    rate: float = 1000.0,
    ttl: int = 0,
) -> Iterator[Request]:
    """`requests` gets over `objects` objects, `rate` per second of trace time. Each object
    keeps one size drawn once from `sizes`, as in real traces where sizes follow keys."""
    if requests < 1:
        raise SpecError(f"expected at least 1 request; got {requests}", "--requests")
    if objects < 1:
        raise SpecError(f"expected at least 1 object; got {objects}", "--objects")
    _check_numbers(requests, objects, rate, ttl)
    rng = random.Random(seed)
    pick = key_chooser(parse_key_distribution(dist, "--dist"), objects, rng)
    draw = size_chooser(parse_value_size(sizes, "--sizes"), rng)
    try:
        object_sizes = array("I", (draw() for _ in range(objects)))
    except OverflowError:
        raise SpecError(
            f"expected sizes of at most {MAX_U32} bytes; got {sizes}", "--sizes"
        ) from None
    for i in range(requests):
        key = pick()
        text = str(key)
        yield Request(i / rate, text, len(text), object_sizes[key], "get", ttl)
