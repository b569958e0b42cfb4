"""A step's chart points stay bounded however long the run, and still cover all of it."""

from __future__ import annotations

import tracemalloc
from dataclasses import replace

import pytest

from workbench.results.events import Interval, Notice, RunStarted, StepStarted
from workbench.results.live import MAX_NOTICES, RunView
from workbench.results.metrics import Stats, fold, new_histogram
from workbench.results.timeline import MAX_POINTS, Point, Timeline, combine


def pt(t: float, ops: float = 100.0, p99: float = 50.0, errors: int = 0) -> Point:
    return Point(t, ops, ops / 1000, p99 / 2, p99, p99 * 2, {"get": ops * 0.9}, 0.5, errors)


def test_a_day_of_intervals_keeps_at_most_max_points_and_every_interval_counted() -> None:
    timeline = Timeline()
    for i in range(86_400):
        timeline = timeline.add(pt(i + 1.0))
        assert len(timeline) <= MAX_POINTS  # the points kept (made only when asked)
    assert timeline.intervals == sum(timeline.weights) == 86_400
    assert timeline.points[-1].elapsed == 86_400.0  # the whole run, up to the last interval
    assert timeline.points[0].elapsed <= timeline.stride  # ...from its start
    assert len(timeline.points) >= MAX_POINTS // 2  # halved, not thinned to nothing
    assert all(w == timeline.stride for w in timeline.weights[:-1])


def test_short_runs_keep_one_point_per_interval() -> None:
    timeline = Timeline()
    points = [pt(i + 1.0, ops=100.0 + i) for i in range(MAX_POINTS - 1)]
    for p in points:
        timeline = timeline.add(p)
    assert timeline.points == tuple(points) and timeline.stride == 1


def test_a_span_averages_rates_and_keeps_the_worst_latency_and_all_errors() -> None:
    timeline = Timeline(limit=4)
    for i, (ops, p99, errors) in enumerate(
        [(100, 10, 1), (300, 90, 0), (200, 20, 2), (400, 30, 0)]
    ):
        timeline = timeline.add(pt(i + 1.0, ops, p99, errors))
    assert timeline.stride == 2 and timeline.weights == (2, 2)
    first, second = timeline.points
    assert (first.elapsed, first.ops_per_s, first.p99_us, first.errors) == (2.0, 200.0, 90.0, 1)
    assert (second.elapsed, second.ops_per_s, second.p99_us, second.errors) == (4.0, 300.0, 30, 2)
    assert first.per_op_ops == {"get": pytest.approx(180.0)}


def test_combine_weights_by_intervals_and_keeps_a_known_hit_rate() -> None:
    a = pt(2.0, ops=100.0)
    b = Point(3.0, 400.0, 0.4, 1.0, 2.0, 3.0, {"set": 40.0}, None, 0)
    c = combine(a, 2, b, 1)
    assert c.ops_per_s == 200.0 and c.hit_rate == 0.5
    assert c.per_op_ops == {"get": 60.0, "set": pytest.approx(40.0 / 3)}


def _interval(i: int) -> Interval:
    h = new_histogram()
    fold(h, [50_000 + i])
    return Interval("r", 0, i, i + 1.0, Stats(duration=1.0, hist={"get": h}))


def test_the_live_view_stays_the_same_size_as_intervals_and_notices_pile_up() -> None:
    view = RunView().apply(RunStarted("r", "n", {}, [{"index": 0, "title": "run"}], {}, 0.0))
    view = view.apply(StepStarted("r", 0, "run", {}, {}, 1, 1, {}))
    limit = 8  # a small timeline, to see it bounded within a short test
    step = replace(view.steps[0], timeline=Timeline(limit=limit))
    view = replace(view, steps=(step,))
    for i in range(100):
        view = view.apply(_interval(i))
        view = view.apply(Notice("r", 0, "warning", f"n{i}"))
    step = view.steps[0]
    assert len(step.points) <= limit and step.timeline.intervals == 100
    assert step.totals.ops == 100 and step.points[-1].elapsed == 100.0
    assert step.latest is not None and step.latest.ops == 1
    assert len(view.notices) == 100 and view.notices[-1] == "[warning] n99"
    for i in range(MAX_NOTICES):
        view = view.apply(Notice("r", 0, "warning", f"m{i}"))
    assert len(view.notices) == MAX_NOTICES and view.notices_dropped == 100
    assert view.notices[-1] == f"[warning] m{MAX_NOTICES - 1}"


def test_a_timeline_takes_its_whole_memory_at_its_first_interval() -> None:
    """Its memory is at its bound from the first interval, not growing as it fills (a soak
    run's coordinator rose by the 270 KB of `Point` objects over the 8.5 minutes the first
    512 one-second intervals took)."""
    tracemalloc.start()
    try:
        timeline = Timeline().add(pt(1.0))
        first = tracemalloc.get_traced_memory()[0]
        for i in range(1, MAX_POINTS - 1):  # filled up to one before it halves
            timeline = timeline.add(pt(i + 1.0, ops=100.0 + i))
        full = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert full - first < 4096, f"grew {full - first} B while filling"
    assert timeline.intervals == MAX_POINTS - 1 and timeline.stride == 1
