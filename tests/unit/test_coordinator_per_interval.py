"""The coordinator's work per interval: what the store and the live view take from each
Interval, counted (never timed). Each summary walks a histogram's buckets (`Recorded`),
and a step's interval comes while its workers and server are busiest."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from workbench.results import metrics
from workbench.results.events import Interval, RunStarted, StepStarted
from workbench.results.live import RunView
from workbench.results.metrics import Recorded, Stats, fold, merged, new_histogram, summarise
from workbench.results.store import Store


def _stats(i: int, kinds: tuple[str, ...] = ("get",)) -> Stats:
    hist = {}
    for n, kind in enumerate(kinds):
        h = new_histogram()
        fold(h, [40_000 + 7 * i + n, 90_000 + i, 1_300_000 + 11 * i])
        hist[kind] = h
    return Stats(duration=0.5, hist=hist, hits=2, misses=1, bytes_in=300, bytes_out=90)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many histograms were walked into a `Recorded`, so far."""
    count = [0]
    real = Recorded.__init__

    def counted(self: Recorded, hist: object) -> None:
        count[0] += 1
        real(self, hist)  # type: ignore[arg-type]

    monkeypatch.setattr(Recorded, "__init__", counted)
    return count


def _started(store: Store) -> RunView:
    events = [
        RunStarted("r", "n", {}, [{"index": 0, "label": {}, "title": "run"}], {}, 0.0),
        StepStarted("r", 0, "run", {}, {}, 1, 16, {}),
    ]
    view = RunView()
    for event in events:
        store.record(event)
        view = view.apply(event)
    return view


def test_an_interval_is_summarised_once_for_the_store_and_the_live_view(
    tmp_path: Path, walks: list[int]
) -> None:
    store = Store(tmp_path / "runs.sqlite")
    try:
        view = _started(store)
        walks[0] = 0
        for i in range(10):
            event = Interval("r", 0, i, 0.5 * (i + 1), _stats(i))
            store.record(event)  # its chart point
            view = view.apply(event)  # its point again, `latest`, the step's totals
        # One walk per interval: one summary, one op kind read from the same walk, and
        # the step's totals summarised only when someone reads them.
        assert walks[0] == 10
        step = view.steps[0]
        assert step.summary is step.summary  # read twice, taken once
        assert walks[0] == 11
        assert step.latest == summarise(_stats(9))
        assert step.summary == summarise(merged((_stats(i) for i in range(10)), concurrent=False))
    finally:
        store.close()


def test_the_lazy_totals_summary_is_the_summary_of_the_totals_at_that_interval() -> None:
    view = _started_in_memory()
    seen = []
    for i in range(3):
        view = view.apply(Interval("r", 0, i, 0.5 * (i + 1), _stats(i)))
        seen.append(view)  # a face holding each snapshot
    for i, snapshot in enumerate(seen):
        totals = merged((_stats(j) for j in range(i + 1)), concurrent=False)
        assert snapshot.steps[0].summary == summarise(totals)
    # A step changed by `replace` keeps its figure (it is read, then passed on).
    assert replace(seen[1].steps[0], title="t").summary == seen[1].steps[0].summary


def _started_in_memory() -> RunView:
    view = RunView().apply(RunStarted("r", "n", {}, [{"index": 0, "title": "run"}], {}, 0.0))
    return view.apply(StepStarted("r", 0, "run", {}, {}, 1, 16, {}))


def test_one_op_kind_is_summarised_from_its_own_histogram_with_the_same_figures(
    walks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    for one in (_stats(3), Stats(duration=1.0, hist={"get": new_histogram()})):
        walks[0] = 0
        summary = summarise(one)
        assert walks[0] == 1  # no all-ops copy, no second walk of the same buckets
        with monkeypatch.context() as m:  # as before: always summarise an all-ops copy
            m.setattr(metrics, "_all_ops_for_reading", metrics.all_ops_histogram)
            assert summarise(one) == summary
    assert summary.ops == 0 and summarise(_stats(3)).min_us == 40.0


def test_a_histogram_of_another_shape_is_still_copied_into_the_all_ops_histogram() -> None:
    from hdrh.histogram import HdrHistogram

    other = HdrHistogram(1000, metrics.HIGHEST_NS, metrics.SIGNIFICANT_DIGITS)
    other.record_value(2_000_000)
    stats = Stats(duration=1.0, hist={"get": other})
    assert metrics._all_ops_for_reading(stats) is not other
    assert summarise(stats).ops == 1


def test_the_mean_and_deviation_are_taken_only_when_read_with_the_same_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = [0]
    real = Recorded.mean_and_stddev

    def counted(self: Recorded) -> tuple[float, float]:
        taken[0] += 1
        return real(self)

    monkeypatch.setattr(Recorded, "mean_and_stddev", counted)
    store = Store(tmp_path / "runs.sqlite")
    try:
        view = _started(store)
        for i in range(5):
            event = Interval("r", 0, i, 0.5 * (i + 1), _stats(i))
            store.record(event)
            view = view.apply(event)
    finally:
        store.close()
    assert taken[0] == 0  # chart points and the live view's figures need neither
    latest = view.steps[0].latest
    assert latest is not None
    mean, stddev = real(Recorded(_stats(4).hist["get"]))
    assert (latest.mean_us, latest.stdev_us) == (mean / 1000, stddev / 1000)
    assert latest.mean_us == latest.mean_us and taken[0] == 1  # taken once, then kept


def test_a_deferred_mean_taken_by_another_thread_meanwhile_is_read_not_refused() -> None:
    """Two threads may both find `mean_us` missing; the first takes it (sets both figures,
    then drops the histogram). The second, already in `__getattr__`, then finds no
    histogram and must read the figure the first set, not fail."""
    summary = summarise(_stats(3))
    mean, stddev = summary.__dict__["_recorded"].mean_and_stddev()
    # What the first thread leaves, between the second's lookup and its __getattr__:
    summary.__dict__.update(mean_us=mean / 1000, stdev_us=stddev / 1000)
    del summary.__dict__["_recorded"]
    assert summary.__getattr__("mean_us") == mean / 1000
    assert summary.__getattr__("stdev_us") == stddev / 1000
    with pytest.raises(AttributeError):
        summary.__getattr__("other")
