"""A run listing's rows per swept value: a run that swept (or repeated) its steps is shown
as one row per swept value, each the median of its repeats, so both sides of an A/B are in
the list (the fastest step alone hides the other). Read from the stored step figures
(`Store.step_figures`), no histograms decoded."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from workbench.report.model import REPEAT
from workbench.results.store import StepFigures


@dataclass(frozen=True)
class GroupRow:
    """The repeats of one step of a run: their swept values and median figures."""

    title: str
    repeats: int  # measured repeats
    clients: int
    ops_per_s: float | None
    p50_us: float | None
    p99_us: float | None
    hit_rate: float | None
    errors: int


def _median(
    steps: Sequence[StepFigures], get: Callable[[StepFigures], float | None]
) -> float | None:
    values = [v for s in steps if (v := get(s)) is not None]
    return statistics.median(values) if values else None


def group_rows(steps: Sequence[StepFigures]) -> list[GroupRow]:
    """One run's steps gathered by swept values (the repeat left out), in plan order."""
    by_title: dict[str, list[StepFigures]] = {}
    for step in steps:
        label = {k: v for k, v in step.label.items() if k != REPEAT}
        title = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in label.items()) or "run"
        by_title.setdefault(title, []).append(step)
    out = []
    for title, members in by_title.items():
        measured = [s for s in members if s.ops_per_s and s.ops_per_s > 0]
        out.append(
            GroupRow(
                title,
                len(measured),
                members[0].clients,
                _median(measured, lambda s: s.ops_per_s),
                _median(measured, lambda s: s.p50_us),
                _median(measured, lambda s: s.p99_us),
                _median(measured, lambda s: s.hit_rate),
                int(_median(measured, lambda s: s.errors) or 0),
            )
        )
    return out
