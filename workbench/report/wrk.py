"""wrk-like blocks, as in the HTTP proxy and key-value store documents (001, 004).

Mapping: wrk's threads are the worker processes, its connections the virtual clients.
``Latency`` is over every operation; ``Req/Sec`` is per worker per measured interval (wrk
samples it per thread). ``Non-2xx or 3xx responses`` counts misses and errors other than
connection and timeout errors, which wrk reports as ``Socket errors``. ``read`` and
``Transfer/sec`` are the value bytes the clients received.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.report.markdown import footer, header
from workbench.report.model import (
    RunData,
    StepData,
    spread_within_stdev,
    target_address,
    within_stdev,
)
from workbench.report.units import wrk_binary, wrk_cell, wrk_metric, wrk_time_s, wrk_time_us

SOCKET_KINDS = ("connection", "timeout")


def _stats_line(name: str, values: tuple[str, str, str], within: float) -> str:
    mean, stdev, top = values
    return f"    {name:<10}{wrk_cell(mean, 8)}{wrk_cell(stdev, 10)}{wrk_cell(top, 9)}{within:8.2f}%"


def test_length(step: StepData) -> str:
    load = step.spec["load"]
    if not load.get("ops") and load.get("duration"):
        return wrk_time_s(float(load["duration"]))
    return wrk_time_s(step.summary.duration)


def block(step: StepData) -> list[str]:
    s = step.summary
    lines = [
        f"Running {test_length(step)} test @ {target_address(step)}",
        f"  {step.workers} threads and {step.clients} connections",
    ]
    if not s.ops:
        lines.append(f"  no requests completed ({step.status})")
        return lines
    hist = step.histogram
    lines.append(f"  Thread Stats{'Avg':>6}{'Stdev':>11}{'Max':>8}{'+/- Stdev':>12}")
    lines.append(
        _stats_line(
            "Latency",
            (wrk_time_us(s.mean_us), wrk_time_us(s.stdev_us), wrk_time_us(s.max_us)),
            within_stdev(hist, s.mean_us * 1000, s.stdev_us * 1000),
        )
    )
    per_thread = [p.ops_per_s / max(step.workers, 1) for p in step.points]
    mean, stdev, top, within = spread_within_stdev(per_thread)
    lines.append(
        _stats_line("Req/Sec", (wrk_metric(mean), wrk_metric(stdev), wrk_metric(top)), within)
    )
    lines.append("  Latency Distribution")
    for tick in (50.0, 75.0, 90.0, 99.0):
        lines.append(f"{tick:7.0f}%" + wrk_cell(wrk_time_us(s.p(tick)), 10).rstrip())
    t = step.totals
    lines.append(
        f"  {s.ops} requests in {wrk_time_us(s.duration * 1e6)}, {wrk_binary(t.bytes_in)}B read"
    )
    connect, timeout = t.errors.get("connection", 0), t.errors.get("timeout", 0)
    if connect or timeout:
        lines.append(f"  Socket errors: connect {connect}, read 0, write 0, timeout {timeout}")
    other = sum(n for k, n in t.errors.items() if k not in SOCKET_KINDS)
    if s.misses + other:
        lines.append(f"  Non-2xx or 3xx responses: {s.misses + other}")
    lines.append(f"Requests/sec: {s.ops_per_s:9.2f}")
    rate = t.bytes_in / s.duration if s.duration else 0.0
    lines.append(f"Transfer/sec: {wrk_binary(rate):>10}B")
    return lines


def render(runs: Sequence[RunData], **options: Any) -> str:
    several = len(runs) > 1
    lines = header(runs, options.get("title") or "Load test")
    for run in runs:
        for step in run.steps:
            name = step.name(with_run=several) if step.started else step.title
            status = "" if step.status == "completed" else f" ({step.status})"
            lines += [f"### {name}{status}", ""]
            if not step.started:
                lines += ["Not run.", ""]
                continue
            lines += ["```", *block(step), "```", ""]
    lines += footer(runs)
    return "\n".join(lines).rstrip("\n") + "\n"
