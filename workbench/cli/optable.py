"""The per-op table under a step's percentile ladder, as compact as memtier's Sets / Gets /
Totals: ops/s, hits/s, misses/s, avg, p50, p99, p99.9 and MiB/s per op kind.

A hit or a miss belongs to a get (a cache-aside op is timed and counted as its get), the
bytes in to the gets and the bytes out to the sets; every figure comes from the step's
totals, so the table and the reports never disagree.
"""

from __future__ import annotations

from workbench.results.metrics import Recorded, Stats, all_ops_histogram, format_us

COLUMNS = ("", "ops/s", "hits/s", "misses/s", "avg", "p50", "p99", "p99.9", "MiB/s")
MIB = 1048576


def _latencies(recorded: Recorded) -> list[str]:
    if not recorded.total:
        return ["-"] * 4
    mean, _ = recorded.mean_and_stddev()
    at = recorded.values_at((50.0, 99.0, 99.9))
    return [format_us(mean / 1000), *(format_us(at[q] / 1000) for q in (50.0, 99.0, 99.9))]


def _row(name: str, recorded: Recorded, seconds: float, hits: int | None, misses: int | None,
         moved: int) -> list[str]:  # fmt: skip

    def per_s(n: int) -> str:
        return f"{n / seconds:,.0f}" if seconds > 0 else "-"

    return [
        name,
        per_s(recorded.total),
        per_s(hits) if hits is not None else "-",
        per_s(misses) if misses is not None else "-",
        *_latencies(recorded),
        f"{moved / MIB / seconds:.2f}" if seconds > 0 else "-",
    ]


def op_rows(totals: Stats) -> list[list[str]]:
    """One row per op kind issued (deliveries too), then the totals of the issued ones."""
    seconds = totals.duration
    rows = []
    for kind, hist in sorted(totals.hist.items()):
        gets = kind == "get"
        moved = totals.bytes_in if gets else totals.bytes_out if kind == "set" else 0
        rows.append(
            _row(kind.capitalize() + "s", Recorded(hist), seconds,
                 totals.hits if gets else None, totals.misses if gets else None, moved)
        )  # fmt: skip
    issued = [k for k in totals.hist if k != "deliver"]
    if len(issued) > 1 or len(totals.hist) > len(issued):
        rows.append(
            _row("Totals", Recorded(all_ops_histogram(totals)), seconds, totals.hits,
                 totals.misses, totals.bytes_in + totals.bytes_out)
        )  # fmt: skip
    return rows


def op_table(totals: Stats) -> list[str]:
    """The table's lines, columns right-aligned under their heads ("" without ops)."""
    rows = op_rows(totals)
    if not rows:
        return []
    table = [list(COLUMNS), *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(COLUMNS))]
    return [
        "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(r)
        ).rstrip()
        for r in table
    ]
