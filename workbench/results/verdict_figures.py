"""The figures a step's verdict is judged on, from its CPU usage and its totals: the
shares of a core its workers, server and machine used, and what an open loop offered
and issued (`workbench.results.verdict`; `verdict_rules` holds each verdict to them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.results.cpu_usage import Usage
from workbench.results.metrics import Recorded, Stats
from workbench.results.verdict_context import Context


@dataclass(frozen=True)
class Load:
    """What the verdict weighs: the shares of a core, and the open loop's schedule."""

    workers: dict[str, float]
    server_used: float | None
    cores: float | None
    server_share: float | None
    machine: float | None
    open_loop: bool
    kept: float | None
    lag_p99: int | None


def load_of(usage: Usage, totals: Stats, context: Context) -> tuple[Load, dict[str, Any]]:
    """The step's `Load`, and its figures as the verdict stores them."""
    workers = usage.worker_shares()
    server_used = usage.server_cores_used()
    cores = server_cores(context, usage)
    server_share = server_used / cores if server_used is not None and cores else None
    nodes = usage.node_shares()
    if nodes:  # a cluster is as busy as its busiest node; its cores are its nodes'
        per_node = context.server_cores or 1.0
        allowed = usage.server_cores or (float(usage.host_cpus) if usage.host_cpus else None)
        cores = min(per_node * len(nodes), allowed) if allowed else per_node * len(nodes)
        server_share = max(nodes.values()) / per_node
    machine = usage.machine_share()
    issued = totals.ops + totals.error_count
    open_loop = context.open_loop or totals.offered > 0
    kept = issued / totals.offered if totals.offered else None
    lag_p99 = _p99_ns(totals.send_lag) if totals.send_lag is not None else None
    figures: dict[str, Any] = {
        "workers_core_share": workers,
        "server_cores_used": server_used,
        "server_cores": cores,
        "server_share": server_share,
        "machine_busy": machine,
        "machine_cpus": usage.host_cpus,
    }
    if nodes:
        figures["nodes_core_share"] = nodes
        figures["busiest_node"] = next(iter(nodes))
    if usage.hosts:
        figures["hosts_busy"] = {h: share for h, (share, _, _) in usage.host_shares().items()}
    if open_loop:
        d = totals.duration
        figures |= {
            "offered_per_s": totals.offered / d if d > 0 else None,
            "issued_per_s": issued / d if d > 0 else None,
            "kept_share": kept,
            "send_lag_p99_us": lag_p99 / 1000 if lag_p99 is not None else None,
        }
    load = Load(workers, server_used, cores, server_share, machine, open_loop, kept, lag_p99)
    return load, figures


def open_loop_figures(
    totals: Stats,
    context: Context,
    usage: Usage,
    latency: tuple[int, int, int] | None,
    waits: tuple[int, float | None],
) -> dict[str, Any]:
    """The figures an open loop's verdict is judged on (`workbench.results.verdict_rules`);
    `waits`: the ops unanswered, and the server's utilization its stalls are judged at."""
    unanswered, load = waits
    p50, p99, longest = latency if latency else (0, 0, 0)
    rate = totals.offered / totals.duration if totals.duration > 0 else 0.0
    machine = usage.machine
    threshold = totals.hiccups.threshold_ns if totals.hiccups is not None else 0
    starved = machine.starved_ns(threshold)
    return {
        "latency_p50_us": p50 / 1000,
        "latency_p99_us": p99 / 1000,
        "latency_max_us": longest / 1000,
        "in_flight_needed": rate * p50 / 1e9,
        "clients": context.clients,
        "unanswered": unanswered,
        "machine_stalls": machine.count + (1 if starved else 0),
        "unexplained_wait_us": (
            machine.unexplained_ns(load) if machine.measured else longest
        ) / 1000,
    }


def server_cores(context: Context, usage: Usage) -> float | None:
    """The server's usable cores: what its threads can use, capped by what it may run on.

    The coordinator reports the cores a managed server may run on (its CPU affinity); a
    single-threaded Redis still uses one of them, memcached its threads.
    """
    threads = context.server_cores or usage.server_threads
    allowed = usage.server_cores or (float(usage.host_cpus) if usage.host_cpus else None)
    if threads and allowed:
        return min(threads, allowed)
    return threads or allowed


def _p99_ns(hist: Any) -> int | None:
    if not hist.get_total_count():
        return None
    return Recorded(hist).values_at((99.0,))[99.0]
