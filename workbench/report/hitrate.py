"""Hit-rate tables, as in the memory-limited cache comparison (003): per step the key space
and its hot share, gets and hits overall, on hot keys and on cold keys, the bytes cached
against the working set and the limit, and the server's peak memory (VmHWM) when the
workbench managed the server.

Hot keys are the hot share of ``hotcold(access, keys)``, else the first 20% of the key
space (where zipf is hottest too), as the engine counts them.

A managed umem-cache step is headed, as in the document, by its commit and the
configuration compiled into it (umem-cache fixes its limit at build time); umem-cache
reports no statistics, so its block has no cached line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from workbench.report import repeats, simulated
from workbench.report.markdown import escape_cell, footer, header, step_sections
from workbench.report.model import (
    RunData,
    StepData,
    figure_name,
    system_facts,
    target_options,
)
from workbench.workload.forms import mean_value_size, parse_key_distribution, parse_value_size
from workbench.workload.keys import DEFAULT_HOT_SHARE

RULE = "=" * 55


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def hot_share(step: StepData) -> tuple[float, float | None]:
    """(share of keys that are hot, configured share of accesses on them or None)."""
    try:
        dist = parse_key_distribution(step.spec["workload"]["key_distribution"])
    except Exception:
        return DEFAULT_HOT_SHARE, None
    if dist.kind == "hotcold":
        return dist.params[1], dist.params[0]
    return DEFAULT_HOT_SHARE, None


def step_mean_value_size(step: StepData) -> float:
    """The mean value size the step's spec asked for (0 if it cannot be read)."""
    try:
        return mean_value_size(parse_value_size(step.spec["workload"]["value_size"]))
    except Exception:
        return 0.0


def _size(value: Any) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)i?[bB]?\s*", value)
        if m:
            scale = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2).lower()]
            return int(m.group(1)) * scale
    return None


def _figure(step: StepData, meaning: str) -> int | None:
    """The server's figure that means `meaning`, by the name its system declared."""
    key = figure_name(step, meaning)
    return _size(step.totals.server.get(key)) if key else None


def memory(step: StepData) -> tuple[int | None, int | None]:
    """(bytes cached, the cache's byte limit), from the server's figures (by the names its
    system declared) or the option its system sizes the cache with."""
    limit = _figure(step, "limit_bytes")
    declared = system_facts(step).get("cache_size") or {}
    if not limit and declared.get("option"):
        size = _size(target_options(step).get(declared["option"]))
        limit = size * int(declared.get("unit") or 1) if size else limit
    return _figure(step, "used_bytes"), limit


def mem(n: float) -> str:
    """Megabytes as the document writes them ("1816m"), kilobytes below 10 MiB."""
    if n >= 10 * 1024**2:
        return f"{n / 1024**2:.0f}m"
    return f"{n / 1024:.0f}k"


def _hits_line(name: str, gets: int, hits: int) -> str:
    return f"{name} {gets:>7}    hit: {hits:>7}    hit_rate: {_pct(hits, gets):6.2f}%"


def block(step: StepData) -> list[str]:
    s = step.summary
    t = step.totals
    keys = int(step.spec["workload"]["keys"])
    share, access = hot_share(step)
    hot_keys = int(keys * share)
    gets = s.hits + s.misses
    measured_access = _pct(t.hot_gets, gets)
    if access is not None:
        access_text = f"{access * 100:.0f}%"
    else:
        access_text = f"{measured_access:.0f}% (measured)"
    cold_gets, cold_hits = gets - t.hot_gets, s.hits - t.hot_hits
    lines = [
        RULE,
        f"case: {keys:>7}    hot: {hot_keys:>7}({share * 100:.0f}%)    hot_access: {access_text}",
        _hits_line("get: ", gets, s.hits),
        _hits_line("hot: ", t.hot_gets, t.hot_hits),
        _hits_line("cold:", cold_gets, cold_hits),
    ]
    used, limit = memory(step)
    if used is not None:
        working_set = keys * step_mean_value_size(step)
        text = f"cached: {mem(used):>5}({mem(working_set):>6} {_pct(used, working_set):3.0f}%"
        text += f"  - {mem(limit):>6} {_pct(used, limit):3.0f}%)" if limit else ")"
        lines.append(text)
    items = t.server.get(figure_name(step, "items") or "items")
    if isinstance(items, int):
        text = f"items: {items:>6}({keys:>6} {_pct(items, keys):3.0f}%"
        entries = (system_facts(step).get("cache_size") or {}).get("entries")
        most = target_options(step).get(entries) if entries else None
        if isinstance(most, int) and most < keys:
            text += f"  - {most:>6} {_pct(items, most):3.0f}%"
        lines.append(text + ")")
    lines.append(RULE)
    peak = t.server.get("peak_rss_bytes")
    if isinstance(peak, int | float) and peak:
        lines += ["", f"VmHWM:\t{int(peak) // 1024:>8} kB"]
    return lines


def build_lines(step: StepData) -> list[str]:
    """How a managed server was built, as it said when started (umem-cache's commit and
    compiled-in configuration: the document's "commit:" and "BUILT CONFIG"); nothing for
    a server that says nothing."""
    lines = step.server.get("build")
    return [*map(str, lines), ""] if isinstance(lines, list) and lines else []


def _section(step: StepData) -> list[str]:
    lines = build_lines(step)
    if lines:
        lines = ["```", *lines[:-1], "```", ""]
    return [*lines, "```", *block(step), "```", ""]


def summary_table(runs: Sequence[RunData]) -> list[str]:
    several = len(runs) > 1
    lines = [
        "| step | status | gets | hit rate | hot keys | cold keys | cached | limit | VmHWM |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        for step in run.started_steps:
            s, t = step.summary, step.totals
            gets = s.hits + s.misses
            used, limit = memory(step)
            peak = t.server.get("peak_rss_bytes")
            cells = [
                escape_cell(step.name(with_run=several)),
                step.status,
                f"{gets:,}",
                f"{_pct(s.hits, gets):.2f}%" if gets else "n/a",
                f"{_pct(t.hot_hits, t.hot_gets):.2f}%" if t.hot_gets else "n/a",
                f"{_pct(s.hits - t.hot_hits, gets - t.hot_gets):.2f}%"
                if gets - t.hot_gets
                else "n/a",
                mem(used) if used is not None else "-",
                mem(limit) if limit else "-",
                f"{int(peak) // 1024:,} kB" if isinstance(peak, int | float) and peak else "-",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _hit_rate(step: StepData) -> float | None:
    gets = step.summary.hits + step.summary.misses
    return _pct(step.summary.hits, gets) if gets else None


def _hot_rate(step: StepData) -> float | None:
    t = step.totals
    return _pct(t.hot_hits, t.hot_gets) if t.hot_gets else None


def _cold_rate(step: StepData) -> float | None:
    gets = step.summary.hits + step.summary.misses
    cold = gets - step.totals.hot_gets
    return _pct(step.summary.hits - step.totals.hot_hits, cold) if cold else None


def _peak_kb(step: StepData) -> float | None:
    peak = step.totals.server.get("peak_rss_bytes")
    return peak / 1024 if isinstance(peak, int | float) and peak else None


# name, figure of one repeat (None: not known), text of one figure
REPEAT_FIGURES = [
    ("hit rate", _hit_rate, lambda v: f"{v:.2f}%"),
    ("hot keys", _hot_rate, lambda v: f"{v:.2f}%"),
    ("cold keys", _cold_rate, lambda v: f"{v:.2f}%"),
    ("VmHWM", _peak_kb, lambda v: f"{v:,.0f} kB"),
]


def repeats_table(runs: Sequence[RunData]) -> list[str]:
    """The hit rates of repeated steps: median [min max] across the repeats."""
    several = len(runs) > 1
    found = [g for r in runs for g in repeats.groups(r)]
    if not found:
        return []
    lines = [
        "### Repeats: median [min max]",
        "",
        "| step | repeats | " + " | ".join(name for name, _, _ in REPEAT_FIGURES) + " |",
        "| --- | ---: |" + " ---: |" * len(REPEAT_FIGURES),
    ]
    for group in found:
        cells = [
            escape_cell(group.name(with_run=several)),
            f"{len(group.measured)}/{len(group.steps)}",
        ]
        for _, get, fmt in REPEAT_FIGURES:
            values = [v for s in group.measured if (v := get(s)) is not None]
            spread = repeats.spread_of(values)
            cells.append(spread.text(fmt) if spread else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def render(runs: Sequence[RunData], **options: Any) -> str:
    lines = header(runs, options.get("title") or "Cache hit rates")
    lines += ["## Hit rates", "", *summary_table(runs), *repeats_table(runs)]
    lines += simulated.table(runs)
    in_workers = [
        s
        for r in runs
        for s in r.started_steps
        if system_facts(s).get("in_process") and s.workers > 1
    ]
    if in_workers:
        lines += [
            f"The {in_workers[0].system} cache lives in each worker, each with its share of "
            "the keys: its cached bytes and items are those of the first worker's cache.",
            "",
        ]
    lines += step_sections(runs, _section)
    lines += footer(runs)
    return "\n".join(lines).rstrip("\n") + "\n"
