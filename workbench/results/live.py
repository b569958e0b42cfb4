"""RunView: a pure reducer over run events, the live figures both faces show.

``view = view.apply(event)`` never mutates the old view, so a face can hold a snapshot
while the next is built. Every figure comes from `metrics.summarise`, as in reports.

A view stays the same size however long the run: per step, running totals (one
cumulative histogram per op kind), the last interval's summary and a `Timeline` of at most
`timeline.MAX_POINTS` chart points; notices beyond `MAX_NOTICES` are counted, not kept.
The per-interval detail is the store's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, cast

from workbench.results.events import (
    Event,
    Interval,
    Notice,
    RunFinished,
    RunStarted,
    StepFinished,
    StepSimulated,
    StepStarted,
)
from workbench.results.metrics import (
    Stats,
    Summary,
    all_ops_histogram,
    merged,
    percentile_curve,
    summarise,
)
from workbench.results.self_checks import SelfCheck, checks
from workbench.results.timeline import Point, Timeline
from workbench.results.verdict import Context, Usage, Verdict, context_for, judge

__all__ = ["MAX_NOTICES", "Point", "RunView", "StepView", "point"]

MAX_NOTICES = 200  # the newest notices a view keeps; the rest are counted


class _Unread:
    """A running step's summary not yet taken: `summarise(totals)` when first read."""

    __slots__ = ("totals",)

    def __init__(self, totals: Stats) -> None:
        self.totals = totals


class _TotalsSummary:
    """StepView.summary, taken lazily. Each interval used to summarise the step's growing
    totals whether or not anyone looked (~1-3 ms of the coordinator's CPU per interval
    while the workers and server are busiest); now a face that reads it pays once per
    view it reads, and a search that reads only the finished step's pays nothing. The
    summary given (StepFinished, `replayed`, a test) is kept as given."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    def __get__(self, view: Any, owner: type | None = None) -> Summary | None:
        if view is None:  # the dataclass asks for the field's default
            return None
        value = view.__dict__.get(self.slot)
        if isinstance(value, _Unread):
            value = summarise(value.totals)
            view.__dict__[self.slot] = value  # the same figure every later read
        return cast("Summary | None", value)

    def __set__(self, view: Any, value: Summary | _Unread | None) -> None:
        view.__dict__[self.slot] = value


@dataclass(frozen=True)
class StepView:
    index: int
    title: str
    status: str = "pending"
    workers: int = 0
    clients: int = 0
    server: dict[str, str] = field(default_factory=dict)
    timeline: Timeline = field(default_factory=Timeline)
    totals: Stats = field(default_factory=Stats)
    # Of `totals`; while running, taken when read (a descriptor: the dataclass's default).
    summary: Summary | None = _TotalsSummary()  # type: ignore[assignment]
    latest: Summary | None = None  # of the last interval
    usage: Usage = field(default_factory=Usage)  # CPU figures of the intervals so far
    context: Context = field(default_factory=Context)  # what the verdict knows of the step
    simulated: dict[str, Any] = field(default_factory=dict)  # StepSimulated.results
    reason: str = ""  # why the step failed, in one line
    connections: str = ""  # how its clients map to connections (workbench.engine.connections)
    facts: dict[str, Any] = field(default_factory=dict)  # what its system declared (StepStarted)

    @property
    def points(self) -> tuple[Point, ...]:
        """The step's chart points: one per interval, downsampled as the step grows."""
        return self.timeline.points

    @property
    def verdict(self) -> Verdict:
        """What limited this step's figure (`workbench.results.verdict`), from what was measured."""
        return judge(self.usage, self.totals, self.context)

    @property
    def self_checks(self) -> list[SelfCheck]:
        """The step's self-checks (`workbench.results.self_checks`): schedule, stationarity,
        samples."""
        return checks(self.totals, self.points, self.context)

    def curve(self) -> list[tuple[float, float]]:
        """(percentile, µs) of everything measured so far in this step."""
        return percentile_curve(all_ops_histogram(self.totals))


@dataclass(frozen=True)
class RunView:
    run_id: str = ""
    name: str = ""
    status: str = "idle"
    error: str | None = None
    steps: tuple[StepView, ...] = ()
    current: int | None = None
    notices: tuple[str, ...] = ()  # the newest MAX_NOTICES
    notices_dropped: int = 0  # older notices not kept
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def step(self) -> StepView | None:
        return self.steps[self.current] if self.current is not None else None

    @property
    def finished_steps(self) -> list[StepView]:
        return [s for s in self.steps if s.status not in ("pending", "running")]

    @property
    def remaining(self) -> int:
        return sum(1 for s in self.steps if s.status == "pending")

    def apply(self, event: Event) -> RunView:
        if isinstance(event, RunStarted):
            steps = tuple(StepView(s["index"], s["title"]) for s in event.steps)
            return RunView(event.run_id, event.name, "running", steps=steps, spec=event.spec)
        if isinstance(event, StepStarted):
            steps = self.steps
            if event.step >= len(steps):  # a step chosen as the run goes (a search's probe)
                steps = (*steps, *(StepView(i, "") for i in range(len(steps), event.step + 1)))
            step = replace(
                steps[event.step],
                title=event.title,
                status="running",
                workers=event.workers,
                clients=event.clients,
                server=dict(event.server),
                context=context_for(event.spec, event.facts, *_engine_of(event)),
                connections=event.connections,
                facts=dict(event.facts),
            )
            return replace(self, steps=_put(steps, step), current=event.step)
        if isinstance(event, Interval):
            old = self.steps[event.step]
            totals = merged((old.totals, event.stats), concurrent=False)
            latest = event.summary
            step = replace(
                old,
                timeline=old.timeline.add(point(event, latest)),
                totals=totals,
                summary=_Unread(totals),  # type: ignore[arg-type]
                latest=latest,
                usage=old.usage.plus(event.stats),
            )
            return replace(self, steps=_put(self.steps, step))
        if isinstance(event, StepFinished):
            step = replace(
                self.steps[event.step],
                status=event.status,
                totals=event.stats,
                summary=summarise(event.stats),
                reason=event.reason,
            )
            return replace(self, steps=_put(self.steps, step))
        if isinstance(event, StepSimulated):
            step = replace(self.steps[event.step], simulated=event.results)
            return replace(self, steps=_put(self.steps, step))
        if isinstance(event, Notice):
            notices = (*self.notices, f"[{event.level}] {event.message}")
            dropped = max(0, len(notices) - MAX_NOTICES)
            return replace(
                self,
                notices=notices[dropped:],
                notices_dropped=self.notices_dropped + dropped,
            )
        if isinstance(event, RunFinished):
            return replace(self, status=event.status, error=event.error)
        return self

    def replayed(
        self,
        index: int,
        samples: Iterable[tuple[Point, Stats]],
        totals: Stats,
        last: Stats | None,
    ) -> RunView:
        """A stored step's intervals applied without their histograms: what `apply` of
        each Interval gives, from each one's stored point and counters (`samples`), the
        step's stored totals, and its last interval (for `latest`)."""
        old = self.steps[index]
        timeline, usage = old.timeline, old.usage
        for p, stats in samples:
            timeline = timeline.add(p)
            usage = usage.plus(stats)
        step = replace(
            old,
            timeline=timeline,
            usage=usage,
            totals=totals,
            summary=summarise(totals) if timeline.intervals else old.summary,
            latest=summarise(last) if last is not None else old.latest,
        )
        return replace(self, steps=_put(self.steps, step))


def point(event: Interval, summary: Summary | None = None) -> Point:
    """The chart point of one interval (from its summary, when already taken)."""
    s = summary if summary is not None else event.summary
    h = event.stats.hiccups
    at = h.percentiles_us() if h is not None else {}
    return Point(
        event.elapsed,
        s.ops_per_s,
        s.mib_per_s,
        s.p(50.0),
        s.p(99.0),
        s.p(99.9),
        {k: v[1] for k, v in s.per_op.items()},
        s.hit_rate,
        s.errors,
        at.get(99.0),
        at.get(99.9),
        h.max_us if h is not None else None,
    )


def _engine_of(event: StepStarted) -> tuple[str, bool | None]:
    """The engine a step's workers said they run, and whether its system has a native
    strategy (None in runs stored before it was said)."""
    engine = event.engine or {}
    return str(engine.get("name", "")), engine.get("native_available")


def _put(steps: tuple[StepView, ...], step: StepView) -> tuple[StepView, ...]:
    # From a list, never `tuple(<generator>)`: CPython sizes that tuple at a guess of 10
    # and shrinks it in place, and each one then went to the free list of its final size
    # when dropped. One more block kept per interval, up to 2,000 per size, in a long run.
    return tuple([step if s.index == step.index else s for s in steps])
