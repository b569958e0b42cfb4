"""Did it change? Each step of a new run against the same step of a base run (or, within
one run, each swept value against the first): for throughput, p50, p99, p99.9, error
share and hit rate, the change with its 95% interval and a verdict
(`workbench.stats.change`), from every sample the runs hold.

Steps are matched by their swept values, a step's repeats counting as one step; a step
that matches nothing on the other side is named. The estimate is:

- with at least 3 measured repeats a side, a bootstrap over the repeats and, within each
  drawn repeat, over blocks of its intervals: what differs from run to run is in it;
- else, with at least 10 intervals a side, a block bootstrap over the intervals: it sees
  only what varies within a run, and says so;
- else no verdict: "too few samples", never a guess.

The interval is Student's t times the bootstrap's standard error (`stats.change`), since
three repeats are too few pieces for the bootstrap's own percentiles. Percentiles come
from the intervals' histograms added up, never from averaged figures.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.report.evidence import Evidence, evidence
from workbench.report.machine_share import machine_note
from workbench.report.model import CONCURRENCY, RunData
from workbench.report.repeats import RepeatGroup, groups
from workbench.stats import NOISE, bootstrap, estimate
from workbench.stats.change import Change, Side, compare

MIN_REPEATS = 3
MIN_INTERVALS = 10


@dataclass(frozen=True)
class Metric:
    """A figure a comparison judges: its name in thresholds and JSON, its label in text."""

    key: str
    label: str
    higher_better: bool
    points: bool  # a share, compared in points
    quantile: float | None = None  # a latency percentile

    def figure(self, ev: Evidence, w: np.ndarray) -> np.ndarray:
        """Per row of weights `w`: this figure of `ev`'s intervals so weighted."""
        if self.quantile is not None:
            return estimate.percentile(w, ev.running, ev.values, self.quantile)
        if self.key == "ops_per_s":
            return estimate.ratio(w, ev.ops, ev.duration)
        if self.key == "error_share":
            return estimate.ratio(w, ev.errors, ev.ops + ev.errors)
        return estimate.ratio(w, ev.hits, ev.hits + ev.misses)

    def shortage(self, ev: Evidence) -> str:
        """Why `ev` is too little for this figure ("" when it is enough)."""
        if self.quantile is not None:
            need = estimate.tail_count_needed(self.quantile)
            if ev.total_ops < need:
                return f"{ev.total_ops:,} ops, {self.label} needs {need:,}"
        if self.key == "hit_rate" and not (ev.hits.sum() + ev.misses.sum()):
            return "no gets"
        return ""


METRICS: tuple[Metric, ...] = (
    Metric("ops_per_s", "thrpt", higher_better=True, points=False),
    Metric("p50", "p50", higher_better=False, points=False, quantile=50.0),
    Metric("p99", "p99", higher_better=False, points=False, quantile=99.0),
    Metric("p99.9", "p99.9", higher_better=False, points=False, quantile=99.9),
    Metric("error_share", "errors", higher_better=False, points=True),
    Metric("hit_rate", "hit rate", higher_better=True, points=True),
)
BY_KEY = {m.key: m for m in METRICS}


@dataclass(frozen=True)
class Figure:
    """One metric of one matched step: both sides' figures and the change, or why none."""

    metric: Metric
    base: float | None
    new: float | None
    change: Change | None
    refused: str = ""  # why there is no verdict ("too few samples: ...", "no gets")

    @property
    def verdict(self) -> str:
        return self.change.verdict if self.change is not None else ""


@dataclass(frozen=True)
class Estimate:
    """How a matched step's changes were estimated: the scheme and the samples it used."""

    method: str  # "repeats", "intervals", or "" when refused
    base: Evidence
    new: Evidence
    refused: str = ""

    def describe(self) -> str:
        if self.method == "repeats":
            return f"bootstrap over repeats: base {_repeats(self.base)}, new {_repeats(self.new)}"
        if self.method == "intervals":
            return (
                f"block bootstrap over intervals: base {_intervals(self.base)}, new "
                f"{_intervals(self.new)} (within a run only: repeat the runs to include "
                "what varies between runs)"
            )
        return self.refused


def _repeats(ev: Evidence) -> str:
    return f"{ev.repeats} repeats ({ev.intervals} intervals)"


def _intervals(ev: Evidence) -> str:
    blocks = ", ".join(sorted({str(bootstrap.block_length(n)) for n in ev.lengths}))
    return f"{ev.intervals} intervals (blocks of {blocks})"


@dataclass(frozen=True)
class StepChange:
    """A matched step: its base and new repeats, the estimate and each metric's change."""

    title: str
    base: RepeatGroup
    new: RepeatGroup
    estimate: Estimate
    figures: tuple[Figure, ...]
    machine: str = ""  # other work on the machine differed between the sides

    def figure(self, key: str) -> Figure:
        return next(f for f in self.figures if f.metric.key == key)


@dataclass(frozen=True)
class Comparison:
    """A new run against a base run (the same run, for swept values against the first)."""

    base: RunData
    new: RunData
    steps: tuple[StepChange, ...]
    only_base: tuple[str, ...]
    only_new: tuple[str, ...]
    noise: float
    axis: str = ""  # within one run: the swept path whose values are compared


def choose_estimate(base: Evidence, new: Evidence) -> Estimate:
    """Repeats when both sides have enough, else intervals when both have enough, else a
    refusal that says what each side has and what is needed."""
    if min(base.repeats, new.repeats) >= MIN_REPEATS:
        return Estimate("repeats", base, new)
    if min(base.intervals, new.intervals) >= MIN_INTERVALS:
        return Estimate("intervals", base, new)
    refused = (
        f"too few samples: base {_have(base)}, new {_have(new)}; a verdict needs "
        f"{MIN_REPEATS} repeats or {MIN_INTERVALS} intervals a side"
    )
    return Estimate("", base, new, refused)


def _have(ev: Evidence) -> str:
    runs = f"{ev.repeats} repeat{'s' if ev.repeats != 1 else ''}"
    return f"{runs} of {ev.intervals} interval{'s' if ev.intervals != 1 else ''}"


def compare_groups(
    title: str,
    base: RepeatGroup,
    new: RepeatGroup,
    noise: float = NOISE,
    read: dict[int, Evidence] | None = None,
) -> StepChange:
    """Every metric of `new` against `base` (`read`: the evidence already read, by group,
    as a sweep compares one base with several)."""
    known = {} if read is None else read
    for group in (base, new):
        if id(group) not in known:
            known[id(group)] = evidence(group.steps)
    how = choose_estimate(known[id(base)], known[id(new)])
    sides = (how.base, how.new)
    draws = _draws(how)
    figures = []
    for metric in METRICS:
        base_point, new_point = (_point(metric, ev) for ev in sides)
        short = metric.shortage(how.base) or metric.shortage(how.new)
        if short or not draws:
            refused = f"too few samples: {short}" if short and short != "no gets" else short
            figures.append(Figure(metric, base_point, new_point, None, refused or how.refused))
            continue
        base_side, new_side = (
            Side(math.nan if p is None else p, metric.figure(ev, w), units)
            for ev, p, (w, units) in zip(sides, (base_point, new_point), draws, strict=True)
        )
        change = compare(
            base_side, new_side, points=metric.points, higher_better=metric.higher_better,
            noise=noise,
        )  # fmt: skip
        verdict = "" if change else "nothing to compare"
        figures.append(Figure(metric, base_point, new_point, change, verdict))
    machine = machine_note(base.measured, new.measured)
    return StepChange(title, base, new, how, tuple(figures), machine)


def _draws(how: Estimate) -> list[tuple[np.ndarray, int]]:
    """Each side's resampling weights and the pieces they were drawn from; each side with
    its own seed, so that the two are drawn independently ([] when refused)."""
    if not how.method:
        return []
    over = how.method == "repeats"
    return [
        (
            bootstrap.weights(ev.lengths, over_repeats=over, seed=seed),
            bootstrap.units(ev.lengths, over_repeats=over),
        )
        for ev, seed in ((how.base, bootstrap.SEED), (how.new, bootstrap.SEED + 1))
    ]


def _point(metric: Metric, ev: Evidence) -> float | None:
    if not ev.intervals:
        return None
    value = float(metric.figure(ev, bootstrap.whole(ev.lengths))[0])
    return None if np.isnan(value) else value


def match(
    base: Sequence[RepeatGroup], new: Sequence[RepeatGroup]
) -> tuple[list[tuple[RepeatGroup, RepeatGroup]], list[RepeatGroup], list[RepeatGroup]]:
    """Steps matched by their swept values: one step each matches whatever it is; else the
    same values of every swept setting; else of the settings both runs sweep, where that
    names one step on each side. Returns the pairs and what is left on each side."""
    if len(base) == 1 and len(new) == 1:
        return [(base[0], new[0])], [], []
    pairs = _pairs(base, new, lambda g: tuple(sorted(g.label.items())))
    if not pairs:
        common = _paths(base) & _paths(new)
        pairs = _pairs(base, new, lambda g: tuple(sorted((k, g.label.get(k)) for k in common)))
    matched_base = {id(b) for b, _ in pairs}
    matched_new = {id(n) for _, n in pairs}
    return (
        pairs,
        [g for g in base if id(g) not in matched_base],
        [g for g in new if id(g) not in matched_new],
    )


def _paths(found: Sequence[RepeatGroup]) -> set[str]:
    return {path for g in found for path in g.label}


def _pairs(
    base: Sequence[RepeatGroup], new: Sequence[RepeatGroup], key: Callable[[RepeatGroup], Any]
) -> list[tuple[RepeatGroup, RepeatGroup]]:
    """Pairs whose key names exactly one step on each side."""
    keys_base = [key(g) for g in base]
    keys_new = [key(g) for g in new]
    return [
        (base[keys_base.index(k)], n)
        for n, k in zip(new, keys_new, strict=True)
        if keys_base.count(k) == 1 and keys_new.count(k) == 1
    ]


def compare_runs(base: RunData, new: RunData, noise: float = NOISE) -> Comparison:
    """Every step of `new` against its match in `base`."""
    pairs, only_base, only_new = match(
        [g for g in groups(base, every=True) if g.measured],
        [g for g in groups(new, every=True) if g.measured],
    )
    read: dict[int, Evidence] = {}
    steps = tuple(
        compare_groups(n.title if n.label else n.name(with_run=False), b, n, noise, read)
        for b, n in pairs
    )
    return Comparison(
        base,
        new,
        steps,
        tuple(g.title for g in only_base),
        tuple(g.title for g in only_new),
        noise,
    )


def ab_axis(found: Sequence[RepeatGroup]) -> str | None:
    """The swept setting a run's A/B runs along: of the settings whose value differs between
    its steps, the one with the fewest values (an A/B sweeps two), the concurrency last."""
    paths = list(dict.fromkeys(p for g in found for p in g.label))
    values = {p: {g.label.get(p) for g in found} for p in paths}
    varying = [p for p in paths if len(values[p]) > 1]
    if not varying:
        return None
    return min(varying, key=lambda p: (len(values[p]), p == CONCURRENCY))


def within_run(run: RunData, noise: float = NOISE) -> Comparison | None:
    """Of a sweep, each swept value's steps against the first value's at the same other
    settings (allkeys-lfu against allkeys-lru); None when the run sweeps nothing."""
    found = [g for g in groups(run, every=True) if g.measured]
    axis = ab_axis(found)
    if axis is None:
        return None
    first = next(g.label.get(axis) for g in found)
    name = axis.split(".")[-1]

    def rest(group: RepeatGroup) -> dict[str, str]:
        return {k: v for k, v in group.label.items() if k != axis}

    read: dict[int, Evidence] = {}  # a base is read once for all the values against it

    steps = []
    for group in found:
        if group.label.get(axis) == first:
            continue
        bases = [b for b in found if b.label.get(axis) == first and rest(b) == rest(group)]
        if not bases:
            continue
        base = bases[0]
        others = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in rest(group).items())
        title = f"{name}={group.label.get(axis)} against {name}={first}"
        full = f"{title}, {others}" if others else title
        steps.append(compare_groups(full, base, group, noise, read))
    return Comparison(run, run, tuple(steps), (), (), noise, axis)


def comparisons_for(runs: Sequence[RunData], noise: float = NOISE) -> list[Comparison]:
    """What a report of `runs` compares: every run against the first; one run alone, its
    swept values against the first (none when it sweeps nothing)."""
    if len(runs) > 1:
        return [compare_runs(runs[0], run, noise) for run in runs[1:]]
    found = within_run(runs[0], noise) if runs else None
    return [found] if found is not None and found.steps else []
