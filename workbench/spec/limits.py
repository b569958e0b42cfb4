"""The largest numbers a spec may hold, refused at spec check (exit 2) rather than met
half-way through a run: an integer SQLite or the engines cannot hold, a sweep too long to
plan, more clients than a worker can start.

The limits (docs/reliability.md states them):

- every whole number: at most 2^63 - 1, what the store's INTEGER and the native engine's
  counters hold (a concurrency of 10^20 failed at the store's first write, a key space of
  2^64 in the native engine's order);
- `seed`: 0 to 2^63 - 1 (both engines draw from a 64-bit generator seeded with it);
- `load.duration`, `load.warmup`: at most 9.2e9 s, the nanoseconds a signed 64-bit clock
  reading holds;
- a step's virtual clients: at most `MAX_CLIENTS`;
- a run's steps (sweep combinations times `load.repeat`): at most `MAX_STEPS`, counted before
  any is planned (planning a million steps took minutes with nothing said).
"""

from __future__ import annotations

import math
from typing import Any

from workbench.sdk.errors import SpecError
from workbench.spec.model import Spec, spec_to_dict
from workbench.spec.resolve import total_clients

MAX_INT = 2**63 - 1
MAX_SECONDS = MAX_INT / 1e9
# A worker starts each client before the measured phase; a million took the embedded cache
# past 90 s without starting, and no system here serves that many connections.
MAX_CLIENTS = 100_000
# Each step is planned and checked before the run starts (some 2 ms each), and is at least
# one interval of load: a thousand are hours of runs; more belong in several runs.
MAX_STEPS = 1_000


def check_ranges(spec: Spec) -> None:
    """The numbers of one step within the limits above (and a key space of one key at least)."""
    check_whole_numbers(spec_to_dict(spec))
    if spec.workload.keys < 1:
        raise SpecError(f"expected at least 1 key; got {spec.workload.keys}", "workload.keys")
    check_seed(spec.seed)
    check_seconds(spec.load.duration, "load.duration")
    check_seconds(spec.load.warmup, "load.warmup")
    where = "workload.groups" if spec.workload.groups else "load.concurrency"
    check_clients(total_clients(spec), where)


def check_whole_numbers(data: Any, where: str = "") -> None:
    """Every int in the spec's data (a dict of dicts and lists) within 64 bits."""
    if isinstance(data, dict):
        for key, value in data.items():
            check_whole_numbers(value, f"{where}.{key}" if where else str(key))
    elif isinstance(data, list | tuple):
        for i, value in enumerate(data):
            check_whole_numbers(value, f"{where}[{i}]")
    elif isinstance(data, int) and not isinstance(data, bool) and abs(data) > MAX_INT:
        raise SpecError(
            f"expected a whole number of at most 2^63 - 1 ({MAX_INT}); got {data}", where
        )


def check_seed(seed: int) -> None:
    if not 0 <= seed <= MAX_INT:
        raise SpecError(f"expected a seed from 0 to 2^63 - 1 ({MAX_INT}); got {seed}", "seed")


def check_seconds(seconds: float | None, where: str) -> None:
    if seconds is not None and seconds > MAX_SECONDS:
        raise SpecError(
            f"expected at most {MAX_SECONDS:.3g} s (what a 64-bit count of nanoseconds "
            f"holds); got {seconds:g}",
            where,
        )


def check_clients(clients: int, where: str) -> None:
    if clients > MAX_CLIENTS:
        raise SpecError(
            f"expected at most {MAX_CLIENTS:,} virtual clients in a step; got {clients:,}", where
        )


def check_step_count(axis_lengths: list[int], repeat: int) -> None:
    """Refuse a run of more than MAX_STEPS steps before any is planned."""
    steps = math.prod(axis_lengths) * max(repeat, 1)
    if steps > MAX_STEPS:
        where = "load.repeat" if repeat > 1 and math.prod(axis_lengths) <= MAX_STEPS else "sweep"
        raise SpecError(
            f"expected at most {MAX_STEPS:,} steps in a run (sweep values combined, times "
            f"load.repeat); this one has {steps:,}: split it into several runs",
            where,
        )
