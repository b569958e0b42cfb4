"""Repeated steps (load.repeat, --repeat N) seen together: the median with [min max] across
the repeats of each step, for ops/s and the percentiles, the way criterion gives
``[lo mid hi]``. A run without repeats has no groups, and its reports are unchanged."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.report.model import REPEAT, RunData, StepData
from workbench.results.metrics import format_us, hot_cold_rates

Figure = tuple[str, Callable[[StepData], float | None], Callable[[float], str]]

# name, figure of one repeat (None: not measured), text of one figure
FIGURES: list[Figure] = [
    ("ops/s", lambda s: s.summary.ops_per_s, lambda v: f"{v:,.0f}"),
    ("p50", lambda s: s.summary.p(50.0), format_us),
    ("p90", lambda s: s.summary.p(90.0), format_us),
    ("p99", lambda s: s.summary.p(99.0), format_us),
    ("p99.9", lambda s: s.summary.p(99.9), format_us),
    ("max", lambda s: s.summary.max_us, format_us),
]


def _share(value: float) -> str:
    return f"{value:.2%}"


# Of steps that looked keys up: the hit rate, and on the hottest keys and the rest.
HIT_FIGURES: list[Figure] = [
    ("hit rate", lambda s: s.summary.hit_rate, _share),
    ("hot", lambda s: hot_cold_rates(s.totals)[0], _share),
    ("cold", lambda s: hot_cold_rates(s.totals)[1], _share),
]


def figures_for(found: Sequence[RepeatGroup]) -> list[Figure]:
    """The figures a set of groups has: hit rates (and hot and cold) once any looked up."""
    out = list(FIGURES)
    for figure in HIT_FIGURES:
        if any(figure[1](s) is not None for g in found for s in g.measured):
            out.append(figure)
    return out


@dataclass(frozen=True)
class Spread:
    lo: float
    mid: float  # the median
    hi: float

    def text(self, fmt: Callable[[float], str]) -> str:
        return f"{fmt(self.mid)} [{fmt(self.lo)} {fmt(self.hi)}]"

    def to_dict(self) -> dict[str, float]:
        return {"median": self.mid, "min": self.lo, "max": self.hi}


def spread_of(values: Sequence[float]) -> Spread | None:
    """Median [min max] of some figures; None of none."""
    if not values:
        return None
    return Spread(min(values), statistics.median(values), max(values))


@dataclass(frozen=True)
class RepeatGroup:
    """The repeats of one step of one run."""

    run: RunData
    title: str  # the step's title without its repeat
    label: dict[str, str]
    steps: list[StepData]  # every planned repeat, in order

    @property
    def measured(self) -> list[StepData]:
        return [s for s in self.steps if s.has_data]

    def spread(self, get: Callable[[StepData], float | None]) -> Spread | None:
        return spread_of([v for s in self.measured if (v := get(s)) is not None])

    def verdicts(self) -> str:
        """What limited the repeats (`workbench.results.verdict`): one badge when they agree, else
        each with its count, most frequent first; "" when none was judged."""
        badges = [s.view.verdict.badge for s in self.measured if s.view.verdict.known]
        counts = Counter(badges).most_common()
        if len(counts) <= 1:
            return counts[0][0] if counts else ""
        return ", ".join(f"{badge} {n}/{len(badges)}" for badge, n in counts)

    def name(self, *, with_run: bool) -> str:
        first = self.steps[0]
        parts = [f"{first.system}/{first.strategy}"]
        parts += [f"{p.split('.')[-1]}={v}" for p, v in self.label.items()]
        name = ", ".join(parts)
        return f"{self.run.name}: {name}" if with_run else name


def is_repeated(step: StepData) -> bool:
    return REPEAT in step.label


def groups(run: RunData, *, every: bool = False) -> list[RepeatGroup]:
    """The run's repeated steps gathered per step, in plan order; [] without repeats. With
    `every`, each step without repeats is a group of its own, so every step is in one."""
    by_title: dict[str, RepeatGroup] = {}
    for step in run.steps:
        if not (every or is_repeated(step)):
            continue
        label = {k: v for k, v in step.label.items() if k != REPEAT}
        title = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in label.items()) or "run"
        if title not in by_title:
            by_title[title] = RepeatGroup(run, title, label, [])
        by_title[title].steps.append(step)
    return list(by_title.values())


def median_steps(run: RunData) -> list[StepData] | None:
    """One started step per repeated step: the repeat of median ops/s (of an even count, the
    lower of the middle two), so that its figures are one real measurement; None when the
    run has no repeats."""
    found = groups(run)
    if not found:
        return None
    out = []
    for group in found:
        measured = sorted(group.measured, key=lambda s: s.summary.ops_per_s)
        started = [s for s in group.steps if s.started]
        if measured:
            out.append(measured[(len(measured) - 1) // 2])
        elif started:
            out.append(started[0])
    return out


def table(runs: Sequence[RunData]) -> list[str]:
    """A markdown table: one row per repeated step, median [min max] per figure."""
    several = len(runs) > 1
    rows = [(g, g.name(with_run=several)) for r in runs for g in groups(r)]
    if not rows:
        return []
    # As in the results table: the verdict column once any repeat was judged.
    judged = any(group.verdicts() for group, _ in rows)
    figures = figures_for([group for group, _ in rows])
    head = ["step", "repeats", *[name for name, _, _ in figures]]
    lines = [
        "### Repeats: median [min max]",
        "",
        "| " + " | ".join(head + (["verdict"] if judged else [])) + " |",
        "| --- |" + " ---: |" * (len(head) - 1) + (" --- |" if judged else ""),
    ]
    for group, name in rows:
        cells = [name.replace("|", "\\|"), f"{len(group.measured)}/{len(group.steps)}"]
        for _, get, fmt in figures:
            spread = group.spread(get)
            cells.append(spread.text(fmt) if spread else "-")
        if judged:
            cells.append(group.verdicts() or "-")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Each figure is the median of the repeats with the lowest and highest in brackets; "
        "repeats ran interleaved (A B A B), so a drift of the machine spreads over every step.",
        "",
    ]
    return lines


def to_dicts(run: RunData) -> list[dict[str, Any]]:
    """The groups as plain data (for JSON)."""
    out = []
    found = groups(run)
    for group in found:
        figures: dict[str, Any] = {}
        for name, get, _ in figures_for(found):
            spread = group.spread(get)
            figures[_json_key(name)] = spread.to_dict() if spread else None
        out.append(
            {
                "title": group.title,
                "label": group.label,
                "steps": [s.index for s in group.steps],
                "measured": len(group.measured),
                "verdicts": [s.view.verdict.kind for s in group.measured],
                **figures,
            }
        )
    return out


def _json_key(name: str) -> str:
    if name == "ops/s":
        return "ops_per_s"
    if name in ("hit rate", "hot", "cold"):
        return {"hit rate": "hit_rate", "hot": "hot_hit_rate", "cold": "cold_hit_rate"}[name]
    return f"{name}_us".replace(".", "_")


def criterion_blocks(
    runs: Sequence[RunData], changes: Mapping[tuple[str, tuple[int, ...]], list[str]] = {}
) -> list[str]:
    """Criterion-like blocks per repeated step: [lo mid hi] are the lowest, median and highest
    across the repeats (time per op, throughput, then each percentile); then the step's
    ``change:`` lines, when `changes` has them (keyed by run id and the repeats' indices)."""
    from workbench.report.units import criterion_elements_per_s, criterion_time

    several = len(runs) > 1
    all_groups = [g for r in runs for g in groups(r)]
    if not all_groups:
        return []
    figures = figures_for(all_groups)
    lines = ["### ========== REPEATS: [min median max] across the repeats ============", "", "```"]
    for group in all_groups:
        n = len(group.measured)
        lines.append(f"{group.name(with_run=several)} ({n} of {len(group.steps)} repeats)")
        ops = group.spread(lambda s: s.summary.ops_per_s)
        if ops is None or ops.lo <= 0:
            lines += [f"{' ' * 24}nothing measured", ""]
            continue
        times = " ".join(criterion_time(1e9 / v).strip() for v in (ops.hi, ops.mid, ops.lo))
        rates = " ".join(criterion_elements_per_s(v).strip() for v in (ops.lo, ops.mid, ops.hi))
        lines += [f"{' ' * 24}time:   [{times}]", f"{' ' * 24}thrpt:  [{rates}]"]
        for name, get, fmt in figures[1:]:
            spread = group.spread(get)
            if spread is not None:
                text = " ".join(fmt(v) for v in (spread.lo, spread.mid, spread.hi))
                label = f"{name}:".ljust(8) if len(name) < 8 else f"{name}: "
                lines.append(f"{' ' * 24}{label}[{text}]")
        lines += changes.get((group.run.id, tuple(s.index for s in group.steps)), [])
        lines.append("")
    while lines[-1] == "":
        lines.pop()
    return [*lines, "```", ""]
