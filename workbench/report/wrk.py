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

from workbench.report.markdown import footer, header, step_sections
from workbench.report.model import (
    RunData,
    StepData,
    kind_summary,
    spread_within_stdev,
    target_address,
    within_stdev,
)
from workbench.report.units import wrk_binary, wrk_cell, wrk_metric, wrk_time_s, wrk_time_us
from workbench.sdk.ops import MESSAGE, RECORDED, in_group

SOCKET_KINDS = ("connection", "timeout")
# The kinds a wrk block can stand for: a key's requests, not pub/sub messages.
KEY_KINDS = tuple(k for k in RECORDED if k not in in_group(MESSAGE))


def _stats_line(name: str, values: tuple[str, str, str], within: float) -> str:
    mean, stdev, top = values
    return f"    {name:<10}{wrk_cell(mean, 8)}{wrk_cell(stdev, 10)}{wrk_cell(top, 9)}{within:8.2f}%"


def test_length(step: StepData) -> str:
    load = step.spec["load"]
    if not load.get("ops") and load.get("duration"):
        return wrk_time_s(float(load["duration"]))
    return wrk_time_s(step.summary.duration)


def group_kinds(step: StepData) -> list[tuple[str, str, int]]:
    """(group name, op kind, clients) when every operation group issues one kind of its own.

    004 ran two wrk processes at once, one POSTing and one GETting; a run with such groups
    gets one wrk block per group, as the document shows them.
    """
    groups = step.spec["workload"].get("groups") or []
    out = []
    for g in groups:
        kinds = [k for k, w in g["mix"].items() if w > 0]
        if len(kinds) != 1 or kinds[0] not in KEY_KINDS:
            return []
        out.append((g["name"], kinds[0], int(g["concurrency"])))
    if len({k for _, k, _ in out}) != len(out):
        return []
    return out


def block(step: StepData, kind: str | None = None, clients: int | None = None) -> list[str]:
    """One wrk block: every operation of the step, or one op kind (one group's) of it."""
    s = step.summary if kind is None else kind_summary(step, kind)
    lines = [
        f"Running {test_length(step)} test @ {target_address(step)}",
        f"  {step.workers} threads and {clients or step.clients} connections",
    ]
    if not s.ops:
        lines.append(f"  no requests completed ({step.status})")
        return lines
    hist = step.histogram if kind is None else step.totals.hist[kind]
    lines.append(f"  Thread Stats{'Avg':>6}{'Stdev':>11}{'Max':>8}{'+/- Stdev':>12}")
    lines.append(
        _stats_line(
            "Latency",
            (wrk_time_us(s.mean_us), wrk_time_us(s.stdev_us), wrk_time_us(s.max_us)),
            within_stdev(hist, s.mean_us * 1000, s.stdev_us * 1000),
        )
    )
    workers = max(step.workers, 1)
    per_thread = [
        (p.ops_per_s if kind is None else p.per_op_ops.get(kind, 0.0)) / workers
        for p in step.points
    ]
    mean, stdev, top, within = spread_within_stdev(per_thread)
    lines.append(
        _stats_line("Req/Sec", (wrk_metric(mean), wrk_metric(stdev), wrk_metric(top)), within)
    )
    lines.append("  Latency Distribution")
    for tick in (50.0, 75.0, 90.0, 99.0):
        lines.append(f"{tick:7.0f}%" + wrk_cell(wrk_time_us(s.p(tick)), 10).rstrip())
    t = step.totals
    read = t.bytes_in if kind in (None, "get") else 0
    lines.append(f"  {s.ops} requests in {wrk_time_us(s.duration * 1e6)}, {wrk_binary(read)}B read")
    misses = step.summary.misses if kind in (None, "get") else 0
    if kind is None:  # errors are counted per run step, not per operation kind
        connect, timeout = t.errors.get("connection", 0), t.errors.get("timeout", 0)
        if connect or timeout:
            lines.append(f"  Socket errors: connect {connect}, read 0, write 0, timeout {timeout}")
        misses += sum(n for k, n in t.errors.items() if k not in SOCKET_KINDS)
    if misses:
        lines.append(f"  Non-2xx or 3xx responses: {misses}")
    lines.append(f"Requests/sec: {s.ops_per_s:9.2f}")
    rate = read / s.duration if s.duration else 0.0
    lines.append(f"Transfer/sec: {wrk_binary(rate):>10}B")
    return lines


def step_blocks(step: StepData) -> list[str]:
    groups = group_kinds(step)
    if not groups:
        return ["```", *block(step), "```", ""]
    lines: list[str] = []
    for name, kind, clients in groups:
        lines += [f"{name}", "```", *block(step, kind, clients), "```", ""]
    errors = step.totals.errors
    if errors:
        listed = ", ".join(f"{k} {n:,}" for k, n in errors.items())
        lines += [f"Errors (all groups): {listed}", ""]
    return lines


def render(runs: Sequence[RunData], **options: Any) -> str:
    lines = header(runs, options.get("title") or "Load test")
    lines += step_sections(runs, step_blocks)
    lines += footer(runs)
    return "\n".join(lines).rstrip("\n") + "\n"
