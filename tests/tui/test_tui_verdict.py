"""The verdict in the TUI: a badge on the step, a line leading the counters; search errors."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console
from tui_data import interval_stats, synthetic_events, view_of

from workbench.results.events import Interval, StepFinished, StepSimulated
from workbench.spec.steps import load_spec
from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets.dashboard import counter_rows, counters_table, step_row


def text_of(renderable: object) -> str:
    console = Console(width=100, record=True)
    console.print(renderable)
    return console.export_text()


def test_badge_and_counter_line_appear_once_cpu_was_recorded() -> None:
    events = synthetic_events("20231114-221320-cccc", "cpu")
    plain = view_of(events)
    assert "[" not in str(step_row(plain.steps[0])[2])  # no figures: no badge
    busy = []
    for e in events:
        if isinstance(e, Interval):
            stats = interval_stats(e.index)
            stats.cpu = {"0": 0.97 * stats.duration}
            stats.server = {"host_busy": 0.3, "host_cpus": 8}
            e = Interval(e.run_id, e.step, e.index, e.elapsed, stats)
        busy.append(e)
    view = view_of(busy)
    step = view.steps[0]
    assert str(step_row(step)[2]).endswith("[generator-bound]")
    shown = text_of(counters_table(view, step))
    # a badge, then the evidence and advice wrapped at words (never cut), then the counters
    lines = shown.splitlines()
    assert lines[0].startswith("[generator-bound] worker 97% of a core")
    verdict = " ".join(
        line.strip()
        for line in lines[: lines.index(next(x for x in lines if x.startswith("ops ")))]
    )
    # the embedded cache has no native strategy: the advice does not offer one
    assert verdict.endswith("add workers")
    assert "native" not in verdict
    assert all(len(line.rstrip()) <= 100 for line in lines)


async def test_a_bad_search_target_is_said_and_nothing_starts(make) -> None:  # type: ignore[no-untyped-def]
    app: WorkbenchApp = make()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert not app.start_search(load_spec(None, []), "p99<2")
        await pilot.pause()
        assert not app.running
        assert any("a latency needs a unit" in str(n.message) for n in app._notifications)


def test_a_clusters_redirects_and_nodes_cpu_are_counters_of_the_step() -> None:
    events = []
    for e in synthetic_events("20231114-221320-dddd", "cluster"):
        if isinstance(e, Interval):
            stats = interval_stats(e.index)
            stats.moved, stats.ask = 2, 7
            stats.server = {"node_cpu": {"127.0.0.1:7000": 0.5, "127.0.0.1:7001": 0.25}}
            e = Interval(e.run_id, e.step, e.index, e.elapsed, stats)
        if isinstance(e, StepFinished):  # the step's totals as the coordinator sends them
            nodes = {"node_cpu": {"127.0.0.1:7000": 0.5, "127.0.0.1:7001": 0.25}}
            e = replace(e, stats=replace(e.stats, moved=10, ask=35, server=nodes))
        events.append(e)
    view = view_of(events)
    rows = dict((str(k), str(v)) for k, v in counter_rows(view.steps[0]))
    assert (rows["MOVED"], rows["ASK"]) == ("10", "35")
    assert rows["nodes cpu"] == "127.0.0.1:7000 0.50s, 127.0.0.1:7001 0.25s"
    assert "MOVED" in text_of(counters_table(view, view.steps[0]))


def test_a_replays_skipped_requests_are_a_counter_of_the_step_not_errors() -> None:
    events = []
    for e in synthetic_events("20231114-221320-eeee", "replay"):
        if isinstance(e, Interval):
            stats = interval_stats(e.index)
            stats.skipped = {"incr": 3, "add": 1}
            e = Interval(e.run_id, e.step, e.index, e.elapsed, stats)
        if isinstance(e, StepFinished):  # the step's totals as the coordinator sends them
            e = replace(e, stats=replace(e.stats, skipped={"incr": 1200, "add": 34}))
        events.append(e)
    rows = dict((str(k), str(v)) for k, v in counter_rows(view_of(events).steps[0]))
    assert rows["skipped"] == "1,234: incr 1,200, add 34"  # the most first: it stays in sight
    assert rows["errors"] == "0"  # skipped requests were never tried
    running = view_of([e for e in events if not isinstance(e, StepFinished)])
    live = dict((str(k), str(v)) for k, v in counter_rows(running.steps[0]))
    assert live["skipped"].startswith(f"{4 * sum(isinstance(e, Interval) for e in events)}: ")
    plain = view_of(synthetic_events("20231114-221320-ffff", "plain"))
    assert "skipped" not in dict(counter_rows(plain.steps[0]))  # only a replay that skips


def test_a_steps_simulated_hit_rates_are_counters_labelled_simulated() -> None:
    """Issue 22 item 3: libCacheSim's figures show on the Run screen, each named as
    simulated, below the measured hit rate."""
    events = synthetic_events("20231114-221320-abab", "simulated")
    results = {
        "limit": 400, "unit": "objects", "requests": 1000, "warmed": True,
        "policies": {"lru": {"hit_rate": 0.6827}, "belady": {"hit_rate": 0.8297}},
    }  # fmt: skip
    rows = dict((str(k), str(v)) for k, v in counter_rows(view_of(events).steps[0]))
    assert not [k for k in rows if k.startswith("simulated")]  # none before it is simulated
    done = view_of([*events, StepSimulated("20231114-221320-abab", 0, results)])
    rows = dict((str(k), str(v)) for k, v in counter_rows(done.steps[0]))
    assert (rows["simulated lru"], rows["simulated belady"]) == ("68.3%", "83.0%")
    names = list(rows)
    assert names.index("hit rate") < names.index("simulated lru")
    failed = view_of([*events, StepSimulated("20231114-221320-abab", 0, {"error": "gone"})])
    rows = dict((str(k), str(v)) for k, v in counter_rows(failed.steps[0]))
    assert rows["simulated"] == "not simulated: gone"
