"""A long run on the dashboard: charts drawn from a bounded number of points that still
span the whole run, and a dashboard that keeps up as intervals keep coming."""

from __future__ import annotations

from tui_data import synthetic_events

from workbench.results.events import Interval
from workbench.results.live import RunView
from workbench.results.metrics import Stats
from workbench.results.store import Store
from workbench.results.timeline import MAX_POINTS, Point
from workbench.tui.widgets.chart import Chart
from workbench.tui.widgets.dashboard import RunDashboard
from workbench.tui.widgets.step_series import latency_series, throughput_series

HOURS = 2 * 3600  # one-second intervals
MORE = 10


def long_view(intervals: int) -> RunView:
    """A live single-step run `intervals` seconds in, its points replayed (no histograms)."""
    view = RunView()
    for event in synthetic_events(intervals=1, finish=False):
        view = view.apply(event)
    step = view.steps[0]
    samples = (
        (
            Point(
                i + 1.0, 5000.0 + i % 7, 0.5, 80.0, 400.0 + i % 300, 900.0, {"get": 4500.0}, 0.9, 0
            ),
            Stats(duration=1.0),
        )
        for i in range(1, intervals)
    )
    return view.replayed(step.index, samples, step.totals, None)


def test_two_hours_of_intervals_chart_as_a_bounded_series_over_the_whole_run() -> None:
    step = long_view(HOURS).steps[0]
    assert step.timeline.intervals == HOURS
    for series in (*throughput_series(step, mib=False), *latency_series(step)):
        assert len(series.points) <= 2 * MAX_POINTS  # each point held across its span
        assert series.points[0][0] == 0.0 and series.points[-1][0] == HOURS


async def test_the_dashboard_follows_a_long_run_at_both_sizes(store: Store) -> None:
    from workbench.tui.app import make_app

    for size in ((80, 24), (160, 48)):
        view = long_view(HOURS)
        app = make_app(store)
        async with app.run_test(size=size) as pilot:
            app.switch_mode("run")
            await pilot.pause()
            stats = Stats(duration=1.0)
            for k in range(HOURS, HOURS + MORE):  # intervals keep coming: each one is shown
                view = view.apply(Interval(view.run_id, 0, k, k + 1.0, stats))
                app.live = view
                await pilot.pause()
            dashboard = app.screen.query_one(RunDashboard)
            assert dashboard.view.steps[0].timeline.intervals == HOURS + MORE
            chart = app.screen.query_one("#throughput", Chart)
            assert chart.series and chart.series[0].points[-1][0] == HOURS + MORE
            assert len(chart.series[0].points) <= 2 * MAX_POINTS
