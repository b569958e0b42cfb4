"""Stored runs as reports see them: read through the same reducer the faces use.

A report never recomputes a figure its own way: every step's totals and summary come from
`RunView` (so `workbench runs show`, the live line and a report agree), and every number
from `metrics.summarise`. This module only arranges them: names, series, lookups.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from hdrh.histogram import HdrHistogram

from workbench.results.events import Interval
from workbench.results.live import Point, RunView, StepView
from workbench.results.metrics import Stats, Summary, all_ops_histogram, summarise
from workbench.results.store import StoredRun, StoredStep

CONCURRENCY = "load.concurrency"
REPEAT = "load.repeat"
STATUS_WORDS = {
    "completed": "completed",
    "degraded": "degraded: workers were lost during the run; figures cover what the others "
    "measured (see the notices)",
    "interrupted": "interrupted: stopped before the end; figures cover what was measured",
    "failed": "failed",
    "running": "unfinished: the run never recorded its end (crashed?); figures are partial",
    "abandoned": "abandoned: the process running it ended without finishing it (killed, or "
    "its terminal closed); figures are partial",
}


@dataclass(eq=False)
class StepData:
    """One planned step of one run: its stored record (when it started) and its view."""

    run: RunData
    index: int
    title: str
    label: dict[str, str]
    view: StepView
    stored: StoredStep | None

    @property
    def status(self) -> str:
        if self.stored is None:
            return "not run"
        if self.view.status == "running":  # no StepFinished stored: live, or crashed
            return "unfinished"
        return self.view.status

    @property
    def started(self) -> bool:
        return self.stored is not None

    @property
    def spec(self) -> dict[str, Any]:
        return self.stored.spec if self.stored is not None else self.run.spec

    @property
    def totals(self) -> Stats:
        return self.view.totals

    @cached_property
    def summary(self) -> Summary:
        return self.view.summary or summarise(self.view.totals)

    @cached_property
    def points(self) -> tuple[Point, ...]:
        """One point per interval, as stored (the live view's chart points are downsampled
        in a long run; a report plots and counts every interval)."""
        if self.stored is not None:
            return tuple(self.stored.points)
        return self.view.points

    @property
    def intervals(self) -> Sequence[Interval]:
        return self.stored.intervals if self.stored is not None else []

    @property
    def clients(self) -> int:
        if self.view.clients:
            return self.view.clients
        try:  # a step that never started: its planned concurrency
            return int(self.label.get(CONCURRENCY) or self.spec["load"]["concurrency"])
        except (KeyError, TypeError, ValueError):
            return 0

    @property
    def workers(self) -> int:
        return self.view.workers

    @property
    def server(self) -> dict[str, Any]:
        return dict(self.view.server)

    @property
    def simulated(self) -> dict[str, Any]:
        """The step's simulated hit rates (StepSimulated.results), {} when not simulated."""
        return dict(self.view.simulated)

    @cached_property
    def histogram(self) -> HdrHistogram:
        """Every issued op kind together, as `summarise` reads it."""
        return all_ops_histogram(self.totals)

    @property
    def system(self) -> str:
        if self.stored is not None:
            return self.stored.system
        return str(self.spec["target"]["system"])

    @property
    def strategy(self) -> str:
        if self.stored is not None and self.stored.strategy:
            return self.stored.strategy
        return strategy_name(self.spec)

    @property
    def has_data(self) -> bool:
        return self.summary.ops > 0

    def series(self, *, with_run: bool, with_repeat: bool = True) -> str:
        """The step's name without its concurrency: what it is compared across levels
        (without its repeat too, where one repeat stands for them all)."""
        parts = [f"{self.system}/{self.strategy}"]
        for path, value in self.label.items():
            if path in (CONCURRENCY, "strategy.name", "target.system", "target"):
                continue
            if path == REPEAT and not with_repeat:
                continue
            parts.append(f"{path.split('.')[-1]}={value}")
        name = ", ".join(parts)
        return f"{self.run.name}: {name}" if with_run else name

    def name(self, *, with_run: bool) -> str:
        """The step's full name: its series and its concurrency."""
        return f"{self.series(with_run=with_run)}/concurrency = {self.clients}"


@dataclass(eq=False)
class RunData:
    stored: StoredRun
    view: RunView
    steps: list[StepData]

    @property
    def id(self) -> str:
        return self.stored.id

    @property
    def name(self) -> str:
        return self.stored.name

    @property
    def status(self) -> str:
        return self.stored.status

    @property
    def spec(self) -> dict[str, Any]:
        return self.stored.spec

    @property
    def environment(self) -> dict[str, Any]:
        return self.stored.environment

    @property
    def started_steps(self) -> list[StepData]:
        return [s for s in self.steps if s.started]


def read_run(stored: StoredRun) -> RunData:
    """A stored run replayed through the reducer the faces use."""
    view = stored.view()
    run = RunData(stored, view, [])
    by_index = {s.index: s for s in stored.steps}
    plan = {p["index"]: p for p in stored.plan}
    for sv in view.steps:
        st = by_index.get(sv.index)
        label = st.label if st is not None else dict(plan.get(sv.index, {}).get("label", {}))
        run.steps.append(StepData(run, sv.index, sv.title, label, sv, st))
    return run


def read_runs(runs: StoredRun | Iterable[StoredRun]) -> list[RunData]:
    if isinstance(runs, StoredRun):
        runs = [runs]
    return [read_run(r) for r in runs]


def all_steps(runs: Sequence[RunData], *, started: bool = True) -> list[StepData]:
    return [s for r in runs for s in r.steps if s.started or not started]


def strategy_name(spec: dict[str, Any]) -> str:
    """The strategy a spec names; "default" when it names none (the steps a run started
    record the strategy they really ran, which `StepData.strategy` prefers)."""
    return str(spec.get("strategy", {}).get("name") or "default")


def target_options(step: StepData) -> dict[str, Any]:
    """The system's and managed server's options as the step ran them: the resolved
    options it recorded (defaults filled in), else, for runs stored before those were
    kept, what its spec wrote. Never from the plugin, which may have changed or gone."""
    target = step.spec["target"]
    out: dict[str, Any] = {**target.get("server", {}), **target.get("options", {})}
    if step.stored is not None and step.stored.resolved:
        facts = step.stored.resolved
        out = {**out, **facts.get("server_options", {}), **facts.get("system_options", {})}
    return out


def system_facts(step: StepData) -> dict[str, Any]:
    """What the step's system declared that a reader needs (`CacheSystem.facts`), as stored
    with the step; {} for runs stored before it was kept."""
    if step.stored is not None and step.stored.resolved:
        return dict(step.stored.resolved.get("facts") or {})
    return {}


def figure_name(step: StepData, meaning: str) -> str:
    """The name of the server figure that means `meaning` (used_bytes, limit_bytes, items,
    version) for the step's system, as it declared (`ServerFigures`); "" for none."""
    return str((system_facts(step).get("figures") or {}).get(meaning) or "")


def server_options(step: StepData) -> dict[str, Any]:
    """The managed server's options as the step ran them (defaults filled in, as recorded),
    else, for runs stored before those were kept, what its spec wrote."""
    out = dict(step.spec["target"].get("server", {}))
    if step.stored is not None and step.stored.resolved:
        out.update(step.stored.resolved.get("server_options", {}))
    return out


def target_version(step: StepData) -> str:
    """The version of the system measured, when anything recorded it."""
    if step.server.get("version"):  # a managed server's, as the workbench started it
        return str(step.server["version"])
    if (key := figure_name(step, "version")) and step.totals.server.get(key):
        return str(step.totals.server[key])
    if system_facts(step).get("in_process"):
        return f"in-process, workbench {step.run.environment.get('workbench', '?')}"
    return ""


def target_address(step: StepData) -> str:
    """Where the load went: a URL, host:port, or the in-process system's name."""
    options = {**step.spec["target"].get("options", {}), **step.server}
    for key in ("url", "base_url", "address"):
        if options.get(key):
            return str(options[key])
    if options.get("host") and options.get("port"):
        return f"{options['host']}:{options['port']}"
    if options.get("port"):
        return f"127.0.0.1:{options['port']}"
    return f"{step.system}://{step.strategy}"


def cumulative_share(hist: HdrHistogram, value_ns: int) -> float:
    """Percent of recorded values at or below `value_ns` (at the histogram's precision)."""
    total: int = hist.get_total_count()
    if not total:
        return 0.0
    return 100.0 * _count_between(hist, 0, value_ns) / total


def _count_between(hist: HdrHistogram, lo_ns: float, hi_ns: float) -> int:
    """Recorded values in the buckets from the one holding `lo_ns` to the one holding `hi_ns`
    (one C-speed slice of the counts, not hdrh's per-bucket Python iteration)."""
    last = hist.counts_len - 1
    lo = min(hist.get_counts_array_index(max(int(lo_ns), 0)), last)
    hi = min(hist.get_counts_array_index(max(int(hi_ns), 0)), last)
    return sum(hist.counts[lo : hi + 1]) if hi >= lo else 0


def within_stdev(hist: HdrHistogram, mean_ns: float, stdev_ns: float) -> float:
    """Percent of recorded values within one standard deviation of the mean (wrk's +/- Stdev)."""
    total: int = hist.get_total_count()
    if not total:
        return 0.0
    return 100.0 * _count_between(hist, mean_ns - stdev_ns, mean_ns + stdev_ns) / total


def spread_within_stdev(values: Sequence[float]) -> tuple[float, float, float, float]:
    """Mean, standard deviation, max and percent within one stdev of a list of samples."""
    if not values:
        return 0.0, 0.0, 0.0, 0.0
    n = len(values)
    mean = sum(values) / n
    stdev = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5 if n > 1 else 0.0
    inside = sum(1 for v in values if mean - stdev <= v <= mean + stdev)
    return mean, stdev, max(values), 100.0 * inside / n


def kind_summary(step: StepData, kind: str) -> Summary:
    """The summary of one op kind of a step, from the same `summarise` as the rest."""
    stats = Stats(duration=step.totals.duration, hist={kind: step.totals.hist[kind]})
    return summarise(stats)
