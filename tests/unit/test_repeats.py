"""Repeats: planned interleaved, stored labelled, reported as median [min max]."""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path

import pytest
from support import collect

from workbench.report import render
from workbench.report.model import read_run
from workbench.report.repeats import groups
from workbench.results.metrics import format_us
from workbench.results.store import Store
from workbench.results.verdict_rules import figure_stands
from workbench.sdk.errors import SpecError
from workbench.spec.model import spec_to_dict
from workbench.spec.steps import load_spec, plan


def test_repeats_interleave_the_steps_and_label_each_repeat() -> None:
    spec = load_spec(None, ["load.concurrency=[1,4]", "load.repeat=3"])
    steps = plan(spec)
    assert [s.index for s in steps] == list(range(6))
    assert [s.title for s in steps] == [
        f"concurrency={c}, repeat={r}" for r in (1, 2, 3) for c in (1, 4)
    ]
    assert [s.spec.load.concurrency for s in steps] == [1, 4] * 3


def test_one_repeat_plans_and_stores_as_before() -> None:
    spec = load_spec(None, ["load.concurrency=[1,4]"])
    assert [s.label for s in plan(spec)] == [{"load.concurrency": "1"}, {"load.concurrency": "4"}]
    assert "repeat" not in spec_to_dict(spec)["load"]  # stored specs and JSON keep their shape
    assert spec_to_dict(load_spec(None, ["load.repeat=2"]))["load"]["repeat"] == 2


def test_repeat_below_one_is_refused() -> None:
    with pytest.raises(SpecError) as err:
        load_spec(None, ["load.repeat=0"])
    assert err.value.where == "--set: load.repeat"


@pytest.fixture(scope="module")
def repeated_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, str]:
    store = Store(tmp_path_factory.mktemp("rep") / "runs.sqlite")
    events = asyncio.run(
        collect(
            ["load.concurrency=[1,2]", "load.repeat=3", "load.ops=3000", "load.workers=1"],
            store,
        )
    )
    return store, events[0].run_id  # type: ignore[union-attr]


def test_reports_give_median_min_max_across_repeats(repeated_run: tuple[Store, str]) -> None:
    store, run_id = repeated_run
    stored = store.load(run_id)
    assert [s.label.get("load.repeat") for s in stored.steps] == ["1", "1", "2", "2", "3", "3"]
    run = read_run(stored)
    found = groups(run)
    assert [g.title for g in found] == ["concurrency=1", "concurrency=2"]
    table = render(stored, "table")
    criterion = render(stored, "criterion")
    doc = json.loads(render(stored, "json"))["runs"][0]["repeats"]
    for group, data in zip(found, doc, strict=True):
        ops = [s.summary.ops_per_s for s in group.steps]
        p99 = [s.summary.p(99.0) for s in group.steps]
        assert len(ops) == 3
        assert data["ops_per_s"] == {
            "median": statistics.median(ops),
            "min": min(ops),
            "max": max(ops),
        }
        assert data["p99_us"]["median"] == statistics.median(p99)
        row = next(
            ln for ln in table.splitlines() if ln.startswith(f"| embedded/direct, {group.title} |")
        )
        assert f"{statistics.median(ops):,.0f} [{min(ops):,.0f} {max(ops):,.0f}]" in row
        assert (
            f"{format_us(statistics.median(p99))} [{format_us(min(p99))} {format_us(max(p99))}]"
            in row
        )
        lo, mid, hi = (format_us(v) for v in (min(p99), statistics.median(p99), max(p99)))
        assert f"p99:    [{lo} {mid} {hi}]" in criterion
    assert "### Repeats: median [min max]" in table
    assert "REPEATS: [min median max]" in criterion
    # The conclusions judge each step by its median repeat, and name it once.
    conclusions = criterion.split("# Conclusions based on below data:")[1].split("`time`")[0]
    # (The line of steps left out, on a machine busy with others, names each one.)
    compared = [ln for ln in conclusions.splitlines() if "Left out of these" not in ln]
    assert "repeat=" not in "\n".join(compared)
    medians = [sorted(g.steps, key=lambda s: s.summary.ops_per_s)[1] for g in found]
    peak = max(medians, key=lambda s: s.summary.ops_per_s)
    left_out = [s for s in medians if not figure_stands(s.view.verdict)]
    if not left_out:  # each named once: the median repeat's figure
        peaks = (
            f"embedded/direct: throughput peaks at concurrency {peak.clients} "
            f"({peak.summary.ops_per_s:,.0f} ops/s)"
        )
        assert conclusions.count("embedded/direct: throughput peaks") == 1
        assert peaks in conclusions
    else:  # a machine busy with others (shared): those figures are named, not compared
        assert "throughput peaks" not in conclusions
        assert all(s.view.verdict.kind in conclusions for s in left_out)
    # Go benchmark lines repeat the name, as `go test -count 3` does, for benchstat.
    gobench = render(stored, "gobench").splitlines()
    names = [ln.split()[0] for ln in gobench if ln.startswith("Benchmark")]
    assert names and not [n for n in names if "repeat" in n]
    assert all(names.count(n) == 3 for n in names)
    # The hit-rate report gives the hit rates' median [min max].
    hitrate = render(stored, "hitrate")
    rates = [100 * s.summary.hits / (s.summary.hits + s.summary.misses) for s in found[0].steps]
    first = "| embedded/direct, concurrency=1 |"
    row = next(ln for ln in hitrate.splitlines() if ln.startswith(first))
    spread = f"{statistics.median(rates):.2f}% [{min(rates):.2f}% {max(rates):.2f}%]"
    assert row.split(" | ")[2] == spread


def test_a_run_without_repeats_has_no_repeat_sections(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.sqlite")
    events = asyncio.run(collect(["load.ops=500", "load.workers=1"], store))
    stored = store.load(events[0].run_id)  # type: ignore[union-attr]
    assert "Repeats" not in render(stored, "table")
    assert "REPEATS" not in render(stored, "criterion")
    assert "repeats" not in json.loads(render(stored, "json"))["runs"][0]
