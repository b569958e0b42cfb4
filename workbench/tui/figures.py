"""How the TUI writes numbers: compact forms of figures that come from `metrics` and `live`."""

from __future__ import annotations

import datetime as dt
import math

from workbench.results.metrics import format_us, hot_cold_rates

__all__ = [
    "axis_us",
    "format_bytes",
    "format_count",
    "format_pct",
    "format_rate",
    "format_us",
    "format_when",
    "hot_cold_rates",
    "nines_label",
    "percentile_x",
]


def format_rate(v: float) -> str:
    """Ops per second in few characters: 950, 12.3k, 1.25M."""
    if v < 1000:
        return f"{v:.0f}"
    if v < 1_000_000:
        return f"{v / 1000:.3g}k"
    if v < 1_000_000_000:
        return f"{v / 1e6:.3g}M"
    return f"{v / 1e9:.3g}G"


def format_count(n: int) -> str:
    return f"{n:,}"


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover


def format_pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def format_when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%b %d %H:%M")


def percentile_x(p: float) -> float:
    """Where percentile `p` sits on a 1/(1-p) log axis: 0 at 0%, 1 at 90%, 2 at 99%..."""
    if p >= 100.0:
        return math.inf
    return math.log10(100.0 / (100.0 - p))


def nines_label(x: float) -> str:
    """The percentile at `x` on that axis: 0%, 90%, 99%, 99.9%..."""
    n = round(x)
    if n <= 0:
        return "0%"
    if n == 1:
        return "90%"
    return "99" + ("." + "9" * (n - 2) if n > 2 else "") + "%"


def axis_us(us: float) -> str:
    """A latency tick: short, since axis labels take columns from the plot."""
    for unit, scale in (("s", 1e6), ("ms", 1e3), ("µs", 1.0), ("ns", 1e-3)):
        if us >= scale or unit == "ns":
            v = us / scale
            return f"{v:.0f}{unit}" if v >= 10 or v == int(v) else f"{v:.1f}{unit}"
    return format_us(us)  # pragma: no cover
