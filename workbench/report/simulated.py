"""Simulated hit rates beside measured ones, for every report that shows hit rates.

Each simulated figure is libCacheSim replaying the step's own captured trace at the step's
limit (`workbench.simulate`); the measured figure is what the server did. Every table says
which is which: the measured column is headed "measured", each policy "simulated: NAME".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.report.markdown import escape_cell
from workbench.report.model import RunData, StepData

EXPLAIN = (
    "Measured: the hit rate the server gave. Simulated: libCacheSim replaying the step's "
    "own requests (its captured trace) through each eviction policy at the step's limit; a "
    "reference, not a measurement. belady knows the future: an upper bound."
)


def steps_with(runs: Sequence[RunData]) -> list[StepData]:
    return [s for r in runs for s in r.started_steps if s.simulated]


def policies(steps: Sequence[StepData]) -> list[str]:
    names: list[str] = []
    for step in steps:
        for name in step.simulated.get("policies", {}):
            if name not in names:
                names.append(name)
    return names


def _pct(share: Any) -> str:
    return f"{100 * share:.2f}%" if isinstance(share, int | float) else "-"


def rates(figures: dict[str, Any]) -> str:
    """ "68.30% (hot 82.10%, cold 12.00%)" of one policy's (or the measured) figures."""
    text = _pct(figures.get("hit_rate"))
    if figures.get("hot") is not None:
        text += f" (hot {_pct(figures['hot'])}, cold {_pct(figures.get('cold'))})"
    return text


def measured(step: StepData) -> dict[str, Any]:
    """The measured hit rates of a step in the simulated figures' shape (shares)."""
    s, t = step.summary, step.totals
    gets = s.hits + s.misses
    cold = gets - t.hot_gets
    return {
        "hit_rate": s.hits / gets if gets else None,
        "hot": t.hot_hits / t.hot_gets if t.hot_gets else None,
        "cold": (s.hits - t.hot_hits) / cold if cold else None,
    }


def measured_text(step: StepData) -> str:
    return rates(measured(step))


def limit_text(sim: dict[str, Any]) -> str:
    size, unit = sim.get("limit"), sim.get("unit")
    if not isinstance(size, int):
        return "-"
    if unit == "objects":
        return f"{size:,} objects"
    return f"{size / 1024**2:,.0f} MiB" if size >= 1024**2 else f"{size:,} bytes"


def table(runs: Sequence[RunData]) -> list[str]:
    """Markdown: per simulated step, measured then each policy (hit rate, hot, cold)."""
    steps = steps_with(runs)
    if not steps:
        return []
    names = policies(steps)
    several = len(runs) > 1
    lines = [
        "### Measured and simulated hit rates",
        "",
        EXPLAIN,
        "",
        "| step | limit | requests | measured | "
        + " | ".join(f"simulated: {n}" for n in names)
        + " |",
        "| --- | ---: | ---: | ---: |" + " ---: |" * len(names),
    ]
    for step in steps:
        sim = step.simulated
        if "error" in sim:
            cells = [f"not simulated: {sim['error']}"] + [""] * (len(names) + 2)
        else:
            found = sim.get("policies", {})
            cells = [
                limit_text(sim),
                f"{sim.get('requests', 0):,}",
                rates(measured(step)),
                *(rates(found[n]) if n in found else "-" for n in names),
            ]
        lines.append("| " + " | ".join([escape_cell(step.name(with_run=several)), *cells]) + " |")
    return [*lines, ""]


def to_dict(step: StepData) -> dict[str, Any]:
    """The JSON report's view: the stored results, with the measured figures beside them."""
    return {"measured": measured(step), "simulated": step.simulated}
