"""The words of a verdict: the CPU figures and the schedule in a line, the evidence for
the verdict first (`workbench.results.verdict`)."""

from __future__ import annotations

from collections.abc import Mapping

from workbench.results.cpu_usage import Usage
from workbench.results.metrics import Stats, format_us
from workbench.results.verdict_context import Context


def cpu_text(
    workers: Mapping[str, float],
    server_used: float | None,
    cores: float | None,
    share: float | None,
    context: Context,
    usage: Usage,
) -> str:
    parts = []
    if workers:
        shares = list(workers.values())
        if len(shares) <= 6:
            listed = " ".join(f"{s:.0%}" for s in shares)
            text = f"{'workers' if len(shares) > 1 else 'worker'} {listed} of a core"
            if polled := usage.polled_shares():
                text += f" (+{' '.join(f'{p:.0%}' for p in polled.values())} idle polling)"
            parts.append(text)
        else:
            mean = sum(shares) / len(shares)
            parts.append(
                f"{len(shares)} workers at {max(shares):.0%} (busiest) and {mean:.0%} (mean) "
                "of a core"
            )
    nodes = usage.node_shares()
    if server_used is not None and cores and nodes:
        per_node = context.server_cores or 1.0
        busiest, used = next(iter(nodes.items()))
        text = (
            f"server {len(nodes)} nodes {server_used:.2f} of {cores:g} cores: busiest node "
            f"{busiest} {used:.0%} of {per_node:g} core{'s' if per_node != 1 else ''}"
        )
        if context.single_threaded:
            text += " (single-threaded)"
        parts.append(text)
    elif server_used is not None and cores:
        n = f"{cores:g} core{'s' if cores != 1 else ''}"
        if cores == 1:
            text = f"server {server_used:.0%} of 1 core"
        else:
            text = f"server {server_used:.2f} of {n} ({share:.0%})"
        if context.single_threaded:
            text += " (single-threaded)"
        parts.append(text)
    elif server_used is not None:
        parts.append(f"server {server_used:.0%} of a core")
    elif not context.in_process:
        parts.append("server CPU not recorded")
    machine = usage.machine_share()
    if machine is not None and usage.host_cpus:
        ours = sum(workers.values()) + (server_used or 0.0)
        parts.append(
            f"machine {machine:.0%} busy on {usage.host_cpus} CPUs ({ours:.2f} of them ours)"
        )
    for name, (share, cpus, mine) in usage.host_shares().items():
        parts.append(f"host {name} {share:.0%} busy on {cpus} CPUs ({mine:.2f} of them ours)")
    return ", ".join(parts)


def schedule_text(totals: Stats, kept: float | None, lag_p99: int | None) -> str:
    d = totals.duration
    parts = []
    if totals.offered and d > 0:
        issued = (totals.ops + totals.error_count) / d
        parts.append(
            f"issued {issued:,.0f} of {totals.offered / d:,.0f} ops/s offered ({kept:.1%})"
        )
    if lag_p99 is not None:
        parts.append(f"send lag p99 {format_us(lag_p99 / 1000)}")
    return ", ".join(parts)


def lead(cpu: str, name: str, extra: str) -> str:
    """`cpu` with the part about `name` first: the evidence for the verdict leads."""
    parts = cpu.split(", ")
    first = [p for p in parts if p.startswith(name)]
    rest = [p for p in parts if not p.startswith(name)]
    return join_parts(", ".join(first + rest), extra)


def join_parts(a: str, b: str) -> str:
    return "; ".join(t for t in (a, b) if t)
