"""A step's CPU figures summed over its intervals, each weighted by its measured time: its
workers', its server's, the load machines' busy shares and the machine's stalls; and the
shares at which each counts as busy."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.results.metrics import Stats
from workbench.results.stalls import MachineUsage
from workbench.results.verdict_context import positive

WORKER_BUSY = 0.85  # share of one core at which a worker process counts as saturated
SERVER_BUSY = 0.85  # share of its usable cores at which the server counts as saturated
MACHINE_BUSY = 0.90  # busy share of all the load machine's CPUs at which it counts as full
MACHINE_OURS = 0.50  # ...provided our workers and server used at least this share of them


@dataclass(frozen=True)
class Usage:
    """CPU figures summed over a step's intervals, each weighted by its measured time.

    Worker CPU travels in ``stats.cpu`` and merges by adding; the server's CPU and the
    machine's busy share travel in ``stats.server``, which keeps only the latest figures,
    so they are summed here as the intervals arrive (`plus`).
    """

    worker_cpu: Mapping[str, float] = field(default_factory=dict)  # worker -> CPU seconds
    worker_span: float = 0.0  # measured seconds that reported worker CPU
    # Of that CPU, idle polling (``stats.server["idle_poll"]``: a native worker polling
    # rather than sleeping to a send or reply nearer than a wake-up costs): not work, so
    # left out of the worker's busy share and of the machine's.
    worker_polled: Mapping[str, float] = field(default_factory=dict)
    host_polled: float = 0.0  # idle-polling seconds within the machine's busy time
    server_cpu: float = 0.0
    server_span: float = 0.0
    server_cores: float | None = None  # the cores it may run on, as the coordinator reported
    server_threads: float | None = None  # as the server reported them
    host_busy: float = 0.0  # busy share x seconds
    host_span: float = 0.0
    host_cpus: int | None = None
    # Load machines other than the coordinator's: host -> (busy x seconds, seconds, CPUs,
    # its workers), from ``stats.server["hosts"]``.
    hosts: Mapping[str, tuple[float, float, int, tuple[str, ...]]] = field(default_factory=dict)
    # A cluster's CPU seconds by node address (``stats.server["node_cpu"]``), summed.
    node_cpu: Mapping[str, float] = field(default_factory=dict)
    # The machine's stalls against each interval's longest wait (`workbench.results.stalls`).
    machine: MachineUsage = field(default_factory=MachineUsage)

    def plus(self, stats: Stats) -> Usage:
        """This usage with one more interval added."""
        d = stats.duration
        if d <= 0:
            return self
        out = self
        if stats.cpu:
            cpu = dict(self.worker_cpu)
            for worker, seconds in stats.cpu.items():
                cpu[worker] = cpu.get(worker, 0.0) + float(seconds)
            out = replace(out, worker_cpu=cpu, worker_span=out.worker_span + d)
        server = stats.server
        if _number(server.get("cpu_seconds")):
            out = replace(
                out,
                server_cpu=out.server_cpu + float(server["cpu_seconds"]),
                server_span=out.server_span + d,
            )
        if positive(server.get("cpu_cores")):
            out = replace(out, server_cores=float(server["cpu_cores"]))
        if positive(server.get("threads")):
            out = replace(out, server_threads=float(server["threads"]))
        polled = server.get("idle_poll")
        if isinstance(polled, Mapping) and polled:
            polled_s = {w: float(v) for w, v in polled.items() if _number(v)}
            merged_polled = dict(out.worker_polled)
            for worker, v in polled_s.items():
                merged_polled[worker] = merged_polled.get(worker, 0.0) + v
            out = replace(out, worker_polled=merged_polled)
            if _number(server.get("host_busy")):
                out = replace(out, host_polled=out.host_polled + sum(polled_s.values()))
        if _number(server.get("host_busy")):
            out = replace(
                out,
                host_busy=out.host_busy + float(server["host_busy"]) * d,
                host_span=out.host_span + d,
            )
        if isinstance(server.get("node_cpu"), Mapping) and server["node_cpu"]:
            nodes = dict(out.node_cpu)
            for name, seconds in server["node_cpu"].items():
                if _number(seconds):
                    nodes[name] = nodes.get(name, 0.0) + float(seconds)
            out = replace(out, node_cpu=nodes)
        if positive(server.get("host_cpus")):
            out = replace(out, host_cpus=int(server["host_cpus"]))
        if isinstance(server.get("hosts"), Mapping) and server["hosts"]:
            hosts = dict(out.hosts)
            for name, figure in server["hosts"].items():
                if not (isinstance(figure, Mapping) and _number(figure.get("busy"))):
                    continue
                busy, span, _, _ = hosts.get(name, (0.0, 0.0, 0, ()))
                workers = tuple(str(w) for w in figure.get("workers", ()))
                cpus = int(figure.get("cpus") or 0)
                hosts[name] = (busy + float(figure["busy"]) * d, span + d, cpus, workers)
            out = replace(out, hosts=hosts)
        return replace(out, machine=out.machine.plus(stats.hiccups, d, _busy(stats, polled)))

    @classmethod
    def of(cls, intervals: Iterable[Stats]) -> Usage:
        usage = cls()
        for stats in intervals:
            usage = usage.plus(stats)
        return usage

    @property
    def recorded(self) -> bool:
        return bool(self.worker_span or self.server_span or self.host_span)

    def worker_shares(self) -> dict[str, float]:
        """Each worker's CPU at work (idle polling left out) as a share of one core, in
        worker order."""
        if not self.worker_span:
            return {}
        keys = sorted(self.worker_cpu, key=lambda k: (len(k), k))
        return {
            k: max(0.0, self.worker_cpu[k] - self.worker_polled.get(k, 0.0)) / self.worker_span
            for k in keys
        }

    def polled_shares(self) -> dict[str, float]:
        """Each worker's idle polling as a share of one core (workers that polled only)."""
        if not self.worker_span:
            return {}
        return {k: v / self.worker_span for k, v in self.worker_polled.items() if v > 0}

    def server_cores_used(self) -> float | None:
        return self.server_cpu / self.server_span if self.server_span else None

    def node_shares(self) -> dict[str, float]:
        """A cluster's nodes' CPU, each as a share of one core, busiest first."""
        if not self.server_span:
            return {}
        out = {name: cpu / self.server_span for name, cpu in self.node_cpu.items()}
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def machine_share(self) -> float | None:
        """The machine's busy share, our workers' idle polling counted as idle."""
        if not self.host_span:
            return None
        polled = self.host_polled / self.host_cpus if self.host_cpus else 0.0
        return max(0.0, self.host_busy - polled) / self.host_span

    def host_shares(self) -> dict[str, tuple[float, int, float]]:
        """Each load machine's (busy share, CPUs, our workers' CPUs on it), busiest first."""
        workers = self.worker_shares()
        out = {
            name: (busy / span, cpus, sum(workers.get(w, 0.0) for w in ws))
            for name, (busy, span, cpus, ws) in self.hosts.items()
            if span > 0
        }
        return dict(sorted(out.items(), key=lambda kv: -kv[1][0]))

    def full_host(self, ours_needed: bool) -> str | None:
        """The busiest load machine that was full (with our workers using at least
        `MACHINE_OURS` of it, if `ours_needed`), or None."""
        for name, (share, cpus, ours) in self.host_shares().items():
            if share >= MACHINE_BUSY and cpus and (not ours_needed or ours >= MACHINE_OURS * cpus):
                return name
        return None


def _busy(stats: Stats, polled: Any) -> bool:
    """Whether a worker used a full core in this interval (its idle polling left out)."""
    polls = polled if isinstance(polled, Mapping) else {}
    d = stats.duration
    return any(
        (float(v) - float(polls.get(w, 0.0))) / d >= WORKER_BUSY for w, v in stats.cpu.items()
    )


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
