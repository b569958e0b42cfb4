"""When each open-loop op is due: one schedule, computed the same way by both engines.

A client's schedule starts at ``start + offset`` (the clients' offsets spread evenly over
the period, `plans.client_plans`). Then, by ``load.arrivals``:

- ``uniform``: a constant gap of ``period`` ns, as wrk2 does;
- ``poisson``: exponential gaps of mean ``period`` ns, an open system of many independent
  users. Gap k is ``int(period * -ln(1 - u_k))`` with ``u_k`` the k-th draw of the client's
  splitmix64 stream (`SplitMix64`), seeded by `client_seed`.

The native engine implements exactly this (`native/src/pacing/schedule.rs`, `Schedule`), from the
period, offset and seed the compiled step order carries, so the same seed gives the same
intended times, to the ns, in both engines (tests/native/test_schedule.py).
"""

from __future__ import annotations

import math

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


class SplitMix64:
    """Steele, Lea and Flood's splitmix64: a 64-bit state advanced by a constant, mixed."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK

    def next_u64(self) -> int:
        self.state = (self.state + _GOLDEN) & _MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def random(self) -> float:
        """Uniform in [0, 1): the top 53 bits."""
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))


def client_seed(seed: int, client_id: int) -> int:
    """The arrival stream's seed of one client: the spec's seed and the client, mixed."""
    return SplitMix64((seed & _MASK) ^ ((client_id * _GOLDEN) & _MASK)).next_u64()


def exponential_gap(period_ns: int, u: float) -> int:
    """An exponential gap of mean `period_ns` from a uniform draw `u` in [0, 1)."""
    return int(period_ns * -math.log(1.0 - u))


class Schedule:
    """One client's intended starts (perf_counter_ns), in order: `take` gives the next."""

    __slots__ = ("next_ns", "period", "rng")

    def __init__(self, start_ns: int, period_ns: int, offset_ns: int, arrivals: str, seed: int):
        self.period = period_ns
        self.next_ns = start_ns + offset_ns
        self.rng = SplitMix64(seed) if arrivals == "poisson" else None

    def take(self) -> int:
        due = self.next_ns
        if self.rng is None:
            self.next_ns += self.period
        else:
            self.next_ns += exponential_gap(self.period, self.rng.random())
        return due


class OfferedCounter:
    """How many of a schedule's intended starts lie before t, for t that only grow."""

    __slots__ = ("args", "count", "schedule", "upto")

    def __init__(self, start_ns: int, period_ns: int, offset_ns: int, arrivals: str, seed: int):
        self.args = (start_ns, period_ns, offset_ns, arrivals, seed)
        self.schedule = Schedule(*self.args)
        self.count = 0
        self.upto = start_ns + offset_ns - 1  # the last t asked about

    def before(self, t: int) -> int:
        if t < self.upto:  # asked about the past: count again from the start
            self.schedule, self.count = Schedule(*self.args), 0
        self.upto = t
        while self.schedule.next_ns < t:
            self.schedule.take()
            self.count += 1
        return self.count
