"""Compare's latency-against-throughput lines: which steps make one curve."""

from __future__ import annotations

from tui_data import synthetic_events, view_of

from workbench.results.live import StepView
from workbench.tui.screens.compare import Entry, sweep_lines


def entry(run: str, title: str, index: int = 0) -> Entry:
    return Entry(f"{run} {title}", run, StepView(index, title))


def test_one_line_per_series_as_the_concurrency_rises() -> None:
    titles = [f"concurrency={c}, name={n}" for n in ("direct", "threads") for c in (1, 4, 16)]
    entries = [entry("sweep", t, i) for i, t in enumerate(titles)]
    lines = sweep_lines(entries)
    assert [(name, [e.step.title for e in members]) for name, members in lines] == [
        ("name=direct", titles[:3]),
        ("name=threads", titles[3:]),
    ]


def test_without_concurrency_the_first_varying_setting_is_the_axis() -> None:
    entries = [entry("a", f"value_size={v}", i) for i, v in enumerate((100, 1000, 10000))]
    assert [(n, len(m)) for n, m in sweep_lines(entries)] == [("value_size", 3)]


def test_runs_are_kept_apart_and_single_steps_make_no_line() -> None:
    sweep = view_of(synthetic_events("r1", "sweep", concurrency=(1, 4, 16), intervals=2))
    entries = [Entry(f"sweep {s.title}", "r1", s) for s in sweep.steps]
    entries += [entry("r2", "run"), entry("r3", "concurrency=1"), entry("r3", "concurrency=8", 1)]
    lines = sweep_lines(entries)
    assert [(name, len(members)) for name, members in lines] == [("sweep", 3), ("r3", 2)]
    assert all(e.run_id == "r1" for e in lines[0][1])
