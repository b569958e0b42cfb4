"""A stored run read back: its steps, and each step's intervals read lazily
(`StoredIntervals`, decoded one at a time as they are iterated), its chart points and CPU
figures from small per-interval rows (`StoredStep.samples`), never from decoding every
interval's histograms. `workbench.results.store` reads the rows and writes them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from workbench.results.events import (
    Event,
    Interval,
    Notice,
    RunFinished,
    RunStarted,
    RunStatus,
    StepFinished,
    StepSimulated,
    StepStarted,
)
from workbench.results.hiccups import Hiccups
from workbench.results.live import RunView, point
from workbench.results.metrics import Stats
from workbench.results.timeline import Point
from workbench.spec.model import DEFAULT_SYSTEM

if TYPE_CHECKING:
    from workbench.results.store import Store

_INTERVAL_COLUMNS = "idx, elapsed, stats, {hiccups}"
# What a view needs of an interval without its histograms: the chart point, and the
# duration, worker CPU, server figures and hiccups its verdict sums (`cpu_usage.Usage.plus`).
_SAMPLE_COLUMNS = (
    "idx, elapsed, point, json_extract(stats, '$.duration'), json_extract(stats, '$.cpu'), "
    "json_extract(stats, '$.server'), {hiccups}"
)


class StoredIntervals(Sequence[Interval]):
    """A step's stored intervals, read from the store as they are used: `len` counts
    rows, iterating decodes one interval at a time, an index reads one row."""

    def __init__(self, store: Store, run_id: str, step: int) -> None:
        self.store, self.run_id, self.step = store, run_id, step

    def _where(self) -> tuple[str, tuple[Any, ...]]:
        return "FROM intervals WHERE run_id=? AND step=?", (self.run_id, self.step)

    def _columns(self, columns: str) -> str:
        return columns.format(hiccups=self.store.column("intervals", "hiccups"))

    def __len__(self) -> int:
        where, args = self._where()
        (n,) = self.store.db.execute(f"SELECT COUNT(*) {where}", args).fetchone()
        return int(n)

    def __iter__(self) -> Iterator[Interval]:
        where, args = self._where()
        columns = self._columns(_INTERVAL_COLUMNS)
        rows = self.store.db.execute(f"SELECT {columns} {where} ORDER BY idx", args)
        for row in rows:
            yield self._interval(row)

    def __getitem__(self, i: int) -> Interval:  # type: ignore[override]
        if not isinstance(i, int):
            raise TypeError("stored intervals are read one index at a time, or iterated")
        where, args = self._where()
        order, offset = ("DESC", -i - 1) if i < 0 else ("", i)  # the last: no counting
        row = self.store.db.execute(
            f"SELECT {self._columns(_INTERVAL_COLUMNS)} {where} ORDER BY idx {order} LIMIT 1 "
            "OFFSET ?",
            (*args, offset),
        ).fetchone()
        if row is None:
            raise IndexError(f"no interval {i} in step {self.step} of run {self.run_id}")
        return self._interval(row)

    def _interval(self, row: tuple[Any, ...]) -> Interval:
        i, elapsed, stats, hiccups = row
        return Interval(self.run_id, self.step, i, elapsed, _stats(stats, hiccups))

    def samples(self) -> Iterator[tuple[Point, Stats]]:
        """Per interval: its chart point and its counters without histograms (duration,
        worker CPU, server figures). Rows stored before points were kept are decoded."""
        where, args = self._where()
        for i, elapsed, pt, duration, cpu, server, hiccups in self.store.db.execute(
            f"SELECT {self._columns(_SAMPLE_COLUMNS)} {where} ORDER BY idx", args
        ):
            if pt is None:
                (old,) = self.store.db.execute(
                    f"SELECT stats {where} AND idx=?", (*args, i)
                ).fetchone()
                stats = _stats(old, hiccups)
                yield point(Interval(self.run_id, self.step, i, elapsed, stats)), stats
                continue
            light = Stats(
                duration=float(duration or 0.0),
                cpu=json.loads(cpu) if cpu else {},
                server=json.loads(server) if server else {},
                hiccups=Hiccups.from_dict(json.loads(hiccups)) if hiccups else None,
            )
            yield Point.from_dict(json.loads(pt), elapsed), light


@dataclass
class StoredStep:
    index: int
    title: str
    label: dict[str, str]
    spec: dict[str, Any]
    workers: int
    clients: int
    server: dict[str, Any]
    status: str
    stats: Stats
    intervals: Sequence[Interval] = field(default_factory=list)  # StoredIntervals when read
    # StepStarted.resolved(); in runs stored before it was kept, what the spec says.
    resolved: dict[str, Any] = field(default_factory=dict)
    simulated: dict[str, Any] = field(default_factory=dict)  # StepSimulated.results, if any

    def samples(self) -> Iterator[tuple[Point, Stats]]:
        """Each interval's chart point and histogram-free counters (`StoredIntervals`)."""
        if isinstance(self.intervals, StoredIntervals):
            yield from self.intervals.samples()
            return
        for interval in self.intervals:
            yield point(interval), interval.stats

    @property
    def points(self) -> list[Point]:
        """One chart point per interval, as stored: the detail a report plots."""
        return [p for p, _ in self.samples()]

    @property
    def system(self) -> str:
        return str(self.resolved.get("system") or self.spec.get("target", {}).get("system", ""))

    @property
    def strategy(self) -> str:
        """The strategy the step ran ("" only in old runs that named none)."""
        return str(self.resolved.get("strategy") or self.spec.get("strategy", {}).get("name") or "")

    def started_event(self, run_id: str) -> StepStarted:
        r = self.resolved
        return StepStarted(
            run_id,
            self.index,
            self.title,
            self.label,
            self.spec,
            self.workers,
            self.clients,
            self.server,
            system=self.system,
            strategy=self.strategy,
            system_options=dict(r.get("system_options") or {}),
            strategy_options=dict(r.get("strategy_options") or {}),
            server_options=dict(r.get("server_options") or {}),
            engine=dict(r.get("engine") or {}),
            allow_remote=bool(r.get("allow_remote", False)),
            nodes=list(r.get("nodes") or []),
            connections=str(r.get("connections") or ""),
            facts=dict(r.get("facts") or {}),
        )


@dataclass
class StoredRun:
    id: str
    name: str
    created_at: float
    finished_at: float | None
    status: str
    error: str | None
    spec: dict[str, Any]
    environment: dict[str, Any]
    plan: list[dict[str, Any]]
    steps: list[StoredStep]
    notices: list[Notice]
    runner: dict[str, Any] = field(default_factory=dict)

    def events(self, *, intervals: bool = True) -> Iterator[Event]:
        """The run again as the engine produced it (without its Interval events if not
        `intervals`)."""
        yield RunStarted(
            self.id,
            self.name,
            self.spec,
            self.plan,
            self.environment,
            self.created_at,
            dict(self.runner),
        )
        for s in self.steps:
            yield s.started_event(self.id)
            if intervals:
                yield from s.intervals
            for n in self.notices:
                if n.step == s.index:
                    yield n
            if self.status != "running" or s.status != "running":
                yield StepFinished(self.id, s.index, cast("RunStatus", s.status), s.stats)
            if s.simulated:
                yield StepSimulated(self.id, s.index, s.simulated)
        if self.status != "running":
            yield RunFinished(self.id, self.status, self.error)  # type: ignore[arg-type]

    def target(self) -> tuple[str, str]:
        """(systems, strategies) the run targets: `target_and_strategy`."""
        return target_and_strategy(self.spec, [s.strategy for s in self.steps if s.strategy])

    def view(self) -> RunView:
        """The run replayed through the reducer every face uses, as `events()` would
        replay it, without decoding every interval: each step's intervals come in as their
        stored points and counters, its totals as stored (`RunView.replayed`)."""
        view = RunView()
        for event in self.events(intervals=False):
            if isinstance(event, StepStarted):
                view = view.apply(event)
                s = self._step(event.step)
                last = _last(s.intervals)
                view = view.replayed(s.index, s.samples(), s.stats, last)
            else:
                view = view.apply(event)
        return view

    def _step(self, index: int) -> StoredStep:
        return next(s for s in self.steps if s.index == index)

    @property
    def allow_remote(self) -> bool:
        """Whether the run was allowed to load a target off this machine."""
        return bool(self.spec.get("target", {}).get("allow_remote")) or any(
            s.resolved.get("allow_remote") for s in self.steps
        )


def _stats(stats: str, hiccups: str | None) -> Stats:
    """An interval's statistics from its row: the workers' (`stats`) and the hiccup
    meter's (the `hiccups` column; older rows: none)."""
    data = json.loads(stats)
    if hiccups:
        data["hiccups"] = json.loads(hiccups)
    return Stats.from_dict(data)


def _last(intervals: Sequence[Interval]) -> Stats | None:
    try:
        return intervals[-1].stats
    except IndexError:
        return None


def target_and_strategy(spec: dict[str, Any], ran: list[str]) -> tuple[str, str]:
    """What a run targets, as every face shows it: the swept systems and strategies too,
    and for a run that named no strategy, the ones its steps recorded running (`ran`)."""
    systems = [spec["target"]["system"]]
    strategies = [spec["strategy"]["name"] or "default"]
    for axis in spec.get("sweep", []):
        if axis["path"] == "target.system":
            systems = [str(v) for v in axis["values"]]
        elif axis["path"] == "target":
            systems = [str(v.get("system", DEFAULT_SYSTEM)) for v in axis["values"]]
        elif axis["path"] == "strategy.name":
            strategies = [str(v) for v in axis["values"]]
    if strategies == ["default"] and ran:
        strategies = list(dict.fromkeys(ran))
    return ",".join(dict.fromkeys(systems)), ",".join(strategies)
