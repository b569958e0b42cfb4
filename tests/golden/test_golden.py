"""Golden reports: every format on a single run, a sweep, a comparison and an interrupted
run, each built from events recorded through the real store (see golden_runs.py).

Regenerate after an intended change with ``UPDATE_GOLDEN=1 pytest tests/golden`` and read
the diff before committing it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest
from golden_runs import scenarios
from hdrh.log import HistogramLogReader

from workbench.report import CHARTS, FORMATS, render
from workbench.results.metrics import format_us, new_histogram, summarise
from workbench.results.store import StoredRun

HERE = Path(__file__).parent
EXTENSIONS = {"json": "json", "csv": "csv", "hlog": "hlog"}
SCENARIOS = ("single", "sweep", "comparison", "interrupted", "simulated", "ab")
# Charts are drawn by matplotlib, whose SVG bytes change between its releases: they are
# checked for their content in tests/unit/test_charts.py and in a browser instead.
TEXT_FORMATS = [f for f in FORMATS if f not in CHARTS]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[StoredRun]]:
    return scenarios(tmp_path_factory.mktemp("golden") / "runs.sqlite3")


def golden_path(scenario: str, fmt: str) -> Path:
    return HERE / f"{scenario}.{fmt}.{EXTENSIONS.get(fmt, 'md')}"


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_report_matches_golden(runs: dict[str, list[StoredRun]], scenario: str, fmt: str) -> None:
    text = render(runs[scenario], fmt)
    path = golden_path(scenario, fmt)
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path.name} missing: run with UPDATE_GOLDEN=1 to write it"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} differs (UPDATE_GOLDEN=1)"


def test_hlog_round_trips_through_the_reference_reader(
    runs: dict[str, list[StoredRun]], tmp_path: Path
) -> None:
    (sweep,) = runs["sweep"]
    path = tmp_path / "sweep.hlog"
    path.write_text(render(sweep, "hlog"))
    reader = HistogramLogReader(str(path), new_histogram())
    read = []
    while (hist := reader.get_next_interval_histogram()) is not None:
        read.append(hist)
    reader.close()
    expected = [
        (f"step{step.index + 1}.{kind}", interval.stats.hist[kind])
        for step in sweep.steps
        for interval in step.intervals
        for kind in sorted(interval.stats.hist)
    ]
    assert [h.get_tag() for h in read] == [tag for tag, _ in expected]
    for got, (_, want) in zip(read, expected, strict=True):
        assert got.get_total_count() == want.get_total_count()
        assert got.get_max_value() == want.get_max_value()
        for p in (50, 90, 99, 99.9):
            assert got.get_value_at_percentile(p) == want.get_value_at_percentile(p)
    # Timestamps are seconds on the measured time axis: steps follow each other.
    starts = [h.get_start_time_stamp() for h in read]
    assert starts == sorted(starts)
    assert reader.get_start_time_sec() == pytest.approx(sweep.created_at, abs=1e-3)


def test_every_step_figure_in_the_table_is_the_stored_histograms(
    runs: dict[str, list[StoredRun]],
) -> None:
    (sweep,) = runs["sweep"]
    text = render(sweep, "table")
    rows = [ln for ln in text.splitlines() if ln.startswith("| concurrency=")]
    assert len(rows) == len(sweep.steps)
    for row, step in zip(rows, sweep.steps, strict=True):
        cells = [c.strip().strip("*") for c in row.strip("|").split("|")]
        s = summarise(step.stats)
        assert cells[3] == f"{s.ops_per_s:,.0f}"
        assert cells[5:9] == [format_us(s.p(50)), format_us(s.p(99)), format_us(s.p(99.9)),
                              format_us(s.max_us)]  # fmt: skip
        assert cells[9] == f"{s.hits:,}"


def test_wrk_latency_distribution_is_the_stored_histogram(
    runs: dict[str, list[StoredRun]],
) -> None:
    (single,) = runs["single"]
    text = render(single, "wrk")
    h = new_histogram()
    for hk in single.steps[0].stats.hist.values():
        h.add(hk)
    for tick in (50, 75, 90, 99):
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(f"{tick}%"))
        shown = float(re.sub(r"[a-z]+$", "", line.split()[1]))
        assert shown == pytest.approx(h.get_value_at_percentile(tick) / 1000, abs=0.005)
    count = next(ln for ln in text.splitlines() if "requests in" in ln).split()[0]
    assert int(count) == h.get_total_count()


def test_json_keeps_every_stored_histogram(runs: dict[str, list[StoredRun]]) -> None:
    (stopped,) = runs["interrupted"]
    doc = json.loads(render(stopped, "json"))
    (run,) = doc["runs"]
    assert run["status"] == "interrupted"
    assert [s["status"] for s in run["steps"]] == ["completed", "interrupted", "not run"]
    for stored, step in zip(stopped.steps, run["steps"], strict=False):
        assert step["stats"] == stored.stats.to_dict()
        assert [i["stats"] for i in step["intervals"]] == [
            i.stats.to_dict() for i in stored.intervals
        ]
        assert step["summary"]["ops"] == summarise(stored.stats).ops


def test_csv_has_a_row_per_interval_and_per_step(runs: dict[str, list[StoredRun]]) -> None:
    (sweep,) = runs["sweep"]
    rows = list(csv.DictReader(io.StringIO(render(sweep, "csv"))))
    assert sum(r["row"] == "step" for r in rows) == len(sweep.steps)
    assert sum(r["row"] == "interval" for r in rows) == sum(len(s.intervals) for s in sweep.steps)
    for step in sweep.steps:
        (row,) = [r for r in rows if r["row"] == "step" and r["step"] == str(step.index)]
        assert int(row["ops"]) == step.stats.ops
        assert int(row["ops_get"]) == step.stats.hist["get"].get_total_count()
