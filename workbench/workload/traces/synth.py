"""Synthetic traces from the workbench's own distributions, for tests and demos."""

from __future__ import annotations

import random
from array import array
from collections.abc import Iterator

from workbench.sdk.errors import SpecError
from workbench.workload.forms import parse_key_distribution, parse_value_size
from workbench.workload.generator import size_chooser
from workbench.workload.keys import key_chooser
from workbench.workload.traces.records import Request


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
    if rate <= 0:
        raise SpecError(f"expected a rate above 0; got {rate:g}", "--rate")
    if ttl < 0:
        raise SpecError(f"expected a TTL of 0 (none) or more seconds; got {ttl}", "--ttl")
    rng = random.Random(seed)
    pick = key_chooser(parse_key_distribution(dist, "--dist"), objects, rng)
    draw = size_chooser(parse_value_size(sizes, "--sizes"), rng)
    object_sizes = array("I", (draw() for _ in range(objects)))
    for i in range(requests):
        key = pick()
        text = str(key)
        yield Request(i / rate, text, len(text), object_sizes[key], "get", ttl)
