"""Number formats of the tools whose output the reports imitate (wrk, criterion)."""

from __future__ import annotations

# --- wrk (units.c): 2 decimals, switch unit past 85% of the next one ---------------------

_TIME_US = (1000, "us", ("ms", "s"))
_TIME_S = (60, "s", ("m", "h"))
_BINARY = (1024, "", ("K", "M", "G", "T", "P"))
_METRIC = (1000, "", ("k", "M", "G", "T", "P"))


def _wrk_units(n: float, units: tuple[int, str, tuple[str, ...]], precision: int) -> str:
    scale, unit, names = units
    amount = float(n)
    i = 0
    while i + 1 < len(names) and amount >= scale * 0.85:
        amount /= scale
        unit = names[i]
        i += 1
    return f"{amount:.{precision}f}{unit}"


def wrk_time_us(us: float) -> str:
    if us >= 1_000_000:
        return _wrk_units(us / 1_000_000, _TIME_S, 2)
    return _wrk_units(us, _TIME_US, 2)


def wrk_time_s(seconds: float) -> str:
    return _wrk_units(seconds, _TIME_S, 0)


def wrk_metric(n: float) -> str:
    return _wrk_units(n, _METRIC, 2)


def wrk_binary(n: float) -> str:
    return _wrk_units(n, _BINARY, 2)


def wrk_cell(text: str, width: int) -> str:
    """wrk's print_units: right-aligned, a unit-less number keeps two spaces for one."""
    pad = 2 - sum(1 for c in text[-2:] if c.isalpha())
    return f"{text:>{width - pad}}" + " " * pad


# --- criterion (format.rs): 5 significant digits ---------------------------------------


def short(n: float) -> str:
    if n < 10:
        return f"{n:.4f}"
    if n < 100:
        return f"{n:.3f}"
    if n < 1000:
        return f"{n:.2f}"
    if n < 10000:
        return f"{n:.1f}"
    return f"{n:.0f}"


def criterion_time(ns: float) -> str:
    if ns < 1:
        return f"{short(ns * 1e3):>6} ps"
    if ns < 1e3:
        return f"{short(ns):>6} ns"
    if ns < 1e6:
        return f"{short(ns / 1e3):>6} us"
    if ns < 1e9:
        return f"{short(ns / 1e6):>6} ms"
    return f"{short(ns / 1e9):>6} s"


def criterion_bytes_per_s(bps: float) -> str:
    if bps < 1024:
        return f"{short(bps):>6}   B/s"
    if bps < 1024**2:
        return f"{short(bps / 1024):>6} KiB/s"
    if bps < 1024**3:
        return f"{short(bps / 1024**2):>6} MiB/s"
    return f"{short(bps / 1024**3):>6} GiB/s"


def criterion_elements_per_s(eps: float) -> str:
    if eps < 1e3:
        return f"{short(eps):>6}  elem/s"
    if eps < 1e6:
        return f"{short(eps / 1e3):>6} Kelem/s"
    if eps < 1e9:
        return f"{short(eps / 1e6):>6} Melem/s"
    return f"{short(eps / 1e9):>6} Gelem/s"


# --- plain ------------------------------------------------------------------------------


def latency(us: float, unit: str) -> str:
    """A latency with three decimals in a unit chosen once per block, as 000 prints them."""
    if unit == "ms" or us >= 1000:
        return f"{us / 1000:.3f}ms"
    return f"{us:.3f}us"


def block_unit(p50_us: float) -> str:
    return "ms" if p50_us >= 100 else "us"


def ratio(value: float, base: float) -> str:
    if not base:
        return "-"
    return f"x{value / base:.2f}"
