"""Miss-ratio curves as hit-rate curves: the table and the chart of `workbench mrc`.

Simulated lines (one per policy, libCacheSim) and measured points (the real servers at
chosen limits) on one chart, hit rate against cache size; the table says which is which.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from workbench.report.charts import Chart, svg


@dataclass
class Curves:
    """Hit rates (shares, 0..1) by size: simulated per policy, measured per server."""

    profile: str
    unit: str  # "bytes" or "objects"
    sizes: list[int]
    requests: int
    simulated: dict[str, list[float | None]] = field(default_factory=dict)
    measured: dict[str, dict[int, float]] = field(default_factory=dict)
    seconds: float = 0.0


def size_text(size: float, unit: str) -> str:
    if unit == "objects":
        return f"{size:,.0f}"
    for name, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:g}{name}"
    return f"{size:g}B"


def _pct(v: float | None) -> str:
    return f"{100 * v:.2f}%" if v is not None else "-"


def table(c: Curves) -> list[str]:
    """Markdown: a row per size, a column per simulated policy and per measured server."""
    head = ["size"] + [f"simulated: {p}" for p in c.simulated]
    head += [f"measured: {m}" for m in c.measured]
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    for i, size in enumerate(c.sizes):
        cells = [size_text(size, c.unit)]
        cells += [_pct(rates[i]) for rates in c.simulated.values()]
        cells += [_pct(points.get(size)) for points in c.measured.values()]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def chart(c: Curves) -> Chart:
    def draw(ax: Any) -> None:
        for policy, rates in c.simulated.items():
            xs = [s for s, r in zip(c.sizes, rates, strict=True) if r is not None]
            ys = [100 * r for r in rates if r is not None]
            style = {"color": "black", "linestyle": "--"} if policy == "belady" else {}
            ax.plot(xs, ys, marker=".", linewidth=1.2, label=f"simulated: {policy}", **style)
        for n, (server, points) in enumerate(c.measured.items()):
            xs = sorted(points)
            ax.plot(
                xs,
                [100 * points[x] for x in xs],
                linestyle="none",
                marker="osD^v"[n % 5],  # a shape per server, apart from the lines' dots
                markersize=7,
                markeredgecolor="black",
                label=f"measured: {server}",
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(c.sizes, [size_text(s, c.unit) for s in c.sizes])
        ax.set_xlabel("cache size" + (" (objects)" if c.unit == "objects" else ""))
        ax.set_ylabel("hit rate (%)")
        ax.set_ylim(0, 100)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)

    return Chart(
        "mrc",
        f"Hit rate against cache size: {c.profile}",
        "Lines: libCacheSim replaying the same requests through each eviction policy "
        "(simulated). Points: the real servers at that limit (measured).",
        draw,
    )


def _html_table(c: Curves) -> str:
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table(c)]
    head = "".join(f"<th>{escape(cell)}</th>" for cell in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows[2:]
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def html(c: Curves) -> str:
    drawn = chart(c)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(drawn.title)}</title>"
        "<style>body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em}"
        "svg{max-width:100%;height:auto}table{border-collapse:collapse;font-size:12px}"
        "td,th{border-bottom:1px solid #ddd;padding:.2em .5em;text-align:right}</style>"
        "</head><body>"
        f"<h1>{escape(drawn.title)}</h1>"
        f'<figure id="mrc">{svg(drawn)}<figcaption>{escape(drawn.caption)}</figcaption></figure>'
        f"{_html_table(c)}</body></html>\n"
    )


def is_monotone(rates: Sequence[float | None], slack: float = 0.0) -> bool:
    """Whether hit rates never fall as the size grows (LRU's inclusion property)."""
    known = [r for r in rates if r is not None and not math.isnan(r)]
    return all(b >= a - slack for a, b in itertools.pairwise(known))
