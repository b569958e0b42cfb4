"""`workbench doctor`'s look at the machine itself: its hiccups over a few seconds (the
hiccup meter, `workbench.engine.hiccup_meter`), how idle CPUs sleep, and which latency
targets this machine cannot judge.

A target pq<L cannot be judged here when the machine alone delays more than (100 - q)% of
moments by L/2 or more: the meter's histogram is corrected for coordinated omission, so
its pq is the wait for a CPU that q% of events arriving at any moment stay within. At
half the budget, whatever the server does is lost in what the machine does.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from workbench.engine.hiccup_meter import MeterProcess
from workbench.results.hiccups import Hiccups, meter_text
from workbench.results.metrics import format_us

CPUIDLE = Path("/sys/devices/system/cpu/cpuidle")
HALTPOLL = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
BUDGET_SHARE = 0.5  # the machine may take at most this share of a target's latency
TICKS = (99.0, 99.9)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def idle_states() -> tuple[bool, str]:
    """How idle CPUs sleep: the cpuidle governor and driver, and a guest's halt-polling.
    ok: a driver that polls a little before it halts (a VM's wake-up from halt goes
    through the hypervisor and costs tens of µs)."""
    governor = _read(CPUIDLE / "current_governor") or _read(CPUIDLE / "current_governor_ro")
    driver = _read(CPUIDLE / "current_driver")
    if not governor and not driver:
        return True, "not exposed (no cpuidle: a container, or idle=poll)"
    found = f"governor {governor or '?'}, driver {driver or '?'}"
    poll = _read(HALTPOLL) if driver == "haltpoll" else ""  # it polls only as the driver
    if poll:
        found += f", guest halt-poll {int(poll) / 1000:g} µs"
    ok = driver not in ("", "none", "haltpoll") or bool(poll and int(poll) > 0)
    if not ok:
        found += " (idle CPUs halt at once: each wake-up costs the VM's exit and entry)"
    return ok, found


async def measure(seconds: float) -> Hiccups | None:
    """The machine's hiccups over `seconds`, or None when no meter would start."""
    meter = await MeterProcess.start()
    if meter is None:
        return None
    try:
        start = time.time()
        await asyncio.sleep(seconds)
        end = time.time()
        for _ in range(50):
            if meter.book.through(end, now=end + 0.1):
                break
            await asyncio.sleep(0.02)
        return meter.book.take(start, end, start)
    finally:
        await meter.close()


def hiccup_text(h: Hiccups | None, seconds: float) -> tuple[bool, str]:
    """p99, p99.9 and max, and per CPU the hiccups over the threshold and the longest."""
    if h is None or not h.hist.get_total_count():
        return False, "no hiccup meter would start here"
    at = h.percentiles_us(TICKS)
    over = format_us(h.threshold_ns / 1000)
    cpus = "; ".join(
        f"CPU {cpu}: {n:,} over {over}, longest {format_us(longest / 1000)}"
        for cpu, (_, longest, n, _) in sorted(h.cpus.items(), key=lambda kv: int(kv[0]))
    )
    rate = h.count / seconds if seconds > 0 else 0.0
    text = (
        f"over {seconds:g} s ({meter_text(h)}): p99 {format_us(at[99.0])}, p99.9 "
        f"{format_us(at[99.9])}, max {format_us(h.max_us)}; {rate:.1f} hiccups/s over {over} "
        f"({cpus})"
    )
    return h.count == 0, text


def cannot_judge(h: Hiccups | None, targets: list[tuple[float, float]]) -> list[str]:
    """The targets (percentile, limit µs) this machine cannot judge, each in one line."""
    if h is None or not h.hist.get_total_count():
        return []
    out = []
    at = h.percentiles_us(tuple(sorted({p for p, _ in targets})))
    for p, limit in targets:
        if at[p] >= BUDGET_SHARE * limit:
            out.append(
                f"p{p:g}<{format_us(limit)}: {100 - p:g}% of moments wait {format_us(at[p])} "
                "or more for a CPU here, half the target or more"
            )
    return out


def judgeable(h: Hiccups | None) -> str:
    """The lowest p99 and p99.9 targets this machine can judge."""
    if h is None or not h.hist.get_total_count():
        return "unknown (no meter)"
    at = h.percentiles_us(TICKS)
    return ", ".join(f"p{p:g} down to {format_us(at[p] / BUDGET_SHARE)}" for p in TICKS)
