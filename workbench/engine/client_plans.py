"""What each virtual client of a worker does: its op mix, its key stream and its pace.

Parsed once per step from the spec, next to `workload.py` which makes the op streams.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from workbench.engine.arrivals import OfferedCounter, Schedule, client_seed
from workbench.spec.model import Spec
from workbench.workload.forms import parse_key_distribution, parse_mix, parse_ttl, parse_value_size
from workbench.workload.generator import OpStream, ValueBuffer


@dataclass
class ClientPlan:
    """One virtual client of this worker: its global id, its op mix, its pace."""

    client_id: int
    mix: dict[int, float]
    period_ns: int | None = None  # open loop: time between this client's intended starts
    offset_ns: int = 0  # open loop: where in the period its schedule starts
    arrivals: str = "uniform"  # open loop: constant gaps, or exponential ones (arrivals.py)
    seed: int = 0  # open loop: the seed of its poisson gaps
    _counter: OfferedCounter | None = field(default=None, repr=False, compare=False)

    def schedule(self, start_ns: int) -> Schedule:
        """Its intended starts, its schedule starting at `start` (open loop only)."""
        assert self.period_ns is not None
        return Schedule(start_ns, self.period_ns, self.offset_ns, self.arrivals, self.seed)

    def offered(self, start_ns: int, begin_ns: int, end_ns: int) -> int:
        """Intended starts of this client in [begin, end), its schedule starting at `start`."""
        if self.period_ns is None:
            return 0
        first = start_ns + self.offset_ns
        if self.arrivals == "uniform":
            return _starts_before(first, self.period_ns, end_ns) - _starts_before(
                first, self.period_ns, begin_ns
            )
        c = self._counter
        if c is None or c.args[0] != start_ns:
            c = self._counter = OfferedCounter(
                start_ns, self.period_ns, self.offset_ns, self.arrivals, self.seed
            )
        return -c.before(begin_ns) + c.before(end_ns)


def _starts_before(first: int, period: int, t: int) -> int:
    """How many of first + n*period (n >= 0) lie before t."""
    return 0 if t <= first else -(-(t - first) // period)


@dataclass
class Workload:
    """Everything a client needs to make its op stream, parsed once per step."""

    spec: Spec
    worker: int
    workers: int
    shared: bool
    values: ValueBuffer

    def stream(self, plan: ClientPlan) -> OpStream:
        wl = self.spec.workload
        # A system in each worker (the embedded cache): the worker owns every N-th key and
        # draws from the global popularity restricted to them, so N caches act as one.
        owner = (0, 1) if self.shared else (self.worker, self.workers)
        return OpStream(
            mix=plan.mix,
            key_dist=parse_key_distribution(wl.key_distribution),
            keys=max(wl.keys, 1),
            key_offset=0,
            owner=owner,
            key_prefix=wl.key_prefix,
            key_length=wl.key_length,
            value_size=parse_value_size(wl.value_size),
            ttl=parse_ttl(wl.ttl),
            seed=self.spec.seed,
            client_id=plan.client_id,
        )


def client_plans(spec: Spec, worker: int, workers: int) -> list[ClientPlan]:
    """This worker's share of the virtual clients (global ids dealt round-robin).

    In open loop, load.rate is the total across all clients: each client issues every
    `period` on average and the clients' schedules are spread evenly over the period, so
    that the offered load is smooth rather than a burst of every client at once; the gaps
    follow load.arrivals (`engine.arrivals`).
    """
    entries: list[dict[int, float]] = []
    if spec.workload.groups:
        for g in spec.workload.groups:
            entries += [parse_mix(g.mix)] * g.concurrency
    else:
        entries = [parse_mix(spec.workload.mix)] * spec.load.concurrency
    period = int(1e9 * len(entries) / spec.load.rate) if spec.load.rate else None
    return [
        ClientPlan(
            i,
            mix,
            period,
            (period * i) // len(entries) if period else 0,
            spec.load.arrivals,
            client_seed(spec.seed, i),
        )
        for i, mix in enumerate(entries)
        if i % workers == worker
    ]


def mixes(spec: Spec) -> list[Mapping[str, float]]:
    """Every op mix of the spec (one per group, or the workload's own)."""
    return [g.mix for g in spec.workload.groups] or [spec.workload.mix]
