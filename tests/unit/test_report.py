"""Reports: the tools' number formats, the reproduce command, labels, comparisons, and the
`workbench report` command end to end on a real embedded run."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli.main import app
from workbench.report import FORMATS, ReportError, render
from workbench.report.markdown import reproduce_command
from workbench.report.units import (
    criterion_bytes_per_s,
    criterion_time,
    wrk_binary,
    wrk_metric,
    wrk_time_s,
    wrk_time_us,
)
from workbench.report.wrk import _stats_line
from workbench.results.events import Interval, RunFinished, RunStarted, StepFinished, StepStarted
from workbench.results.metrics import Stats, fold, format_us, new_histogram, summarise
from workbench.results.store import Store, StoredRun
from workbench.spec.load import read_profile, spec_from_data
from workbench.spec.model import spec_to_dict

ROOT = Path(__file__).resolve().parents[2]


# --- number formats, checked against lines of the source documents ---------------------


def test_wrk_units_are_wrks() -> None:
    assert wrk_time_us(534.15) == "534.15us"
    assert wrk_time_us(860) == "0.86ms"  # past 85% of the next unit, as units.c switches
    assert wrk_time_us(23_860) == "23.86ms"
    assert wrk_time_us(30_010_000) == "30.01s"
    assert wrk_time_us(60_000_000) == "1.00m"
    assert wrk_time_s(30) == "30s"
    assert wrk_time_s(60) == "1m"
    assert wrk_metric(2090) == "2.09k"
    assert wrk_metric(340.5) == "340.50"
    assert wrk_binary(12.51 * 1024 * 1024) == "12.51M"
    assert wrk_binary(427 * 1024) == "427.00K"


def test_wrk_thread_stats_lines_are_laid_out_as_wrk_prints_them() -> None:
    # 001: "    Latency   534.15us  705.25us  23.86ms   98.15%"
    assert (
        _stats_line("Latency", ("534.15us", "705.25us", "23.86ms"), 98.15)
        == "    Latency   534.15us  705.25us  23.86ms   98.15%"
    )
    assert (
        _stats_line("Req/Sec", ("2.09k", "340.50", "2.57k"), 74.33)
        == "    Req/Sec     2.09k   340.50     2.57k    74.33%"
    )


def test_criterion_units_are_criterions() -> None:
    assert criterion_time(1_992_500) == "1.9925 ms"
    assert criterion_time(609_940) == "609.94 us"
    assert criterion_bytes_per_s(7.3328 * 1048576) == "7.3328 MiB/s"
    assert criterion_bytes_per_s(55.082 * 1048576) == "55.082 MiB/s"


# --- the reproduce command ---------------------------------------------------------------


def _rebuilt(command: str) -> dict:
    args = shlex.split(command)
    assert args[:2] == ["workbench", "run"]
    sets = [a for a in args[2:] if a != "--set"]
    return spec_to_dict(spec_from_data({}, sets))


@pytest.mark.parametrize(
    "data, overrides",
    [
        ({}, []),
        (read_profile(ROOT / "profiles" / "quick.toml"), []),
        (read_profile(ROOT / "profiles" / "embedded-sweep.toml"), ["seed=3"]),
        (
            {
                "sweep": [
                    {
                        "path": "target",
                        "values": [{"system": "embedded"}, {"system": "embedded", "managed": True}],
                        "labels": ["plain", "managed"],
                    }
                ]
            },
            ["load.concurrency=[1, 8]", "workload.value_size=weighted(100:9, 10KiB:1)"],
        ),
        (
            {},
            [
                'workload.groups=[{name="w", mix={set=1.0}, concurrency=4}, '
                '{name="r", mix={get=1.0}, concurrency=12}]',
                "workload.ttl=fixed(2s)",
                "load.ops=100000",
                'target.options={url="redis://127.0.0.1:6379/0"}',
                'name="needs quotes"',
                "description=ignored",
            ],
        ),
    ],
)
def test_the_reproduce_command_rebuilds_the_spec(data: dict, overrides: list[str]) -> None:
    spec = spec_to_dict(spec_from_data(data, overrides))
    command = reproduce_command(spec)
    assert command is not None
    rebuilt = _rebuilt(command)
    rebuilt["description"] = spec["description"]  # left out of the command on purpose
    assert rebuilt == spec


# --- small stored runs -------------------------------------------------------------------


def _stats(values: list[int], hits: int = 0, misses: int = 0) -> Stats:
    h = new_histogram()
    fold(h, values)
    return Stats(duration=1.0, hist={"get": h}, hits=hits, misses=misses, bytes_in=hits * 100)


def _run(store: Store, run_id: str, status: str, scale: int, error: str | None = None) -> StoredRun:
    spec = spec_to_dict(spec_from_data({}, ["name=" + run_id]))
    store.record(
        RunStarted(run_id, run_id, spec, [{"index": 0, "label": {}, "title": "run"}], {}, 1e9)
    )
    store.record(StepStarted(run_id, 0, "run", {}, spec, 1, 16))
    stats = _stats([scale * (i % 50 + 1) for i in range(1000)], hits=600, misses=400)
    store.record(Interval(run_id, 0, 0, 1.0, stats))
    store.record(StepFinished(run_id, 0, status, stats))  # type: ignore[arg-type]
    store.record(RunFinished(run_id, status, error))  # type: ignore[arg-type]
    return store.load(run_id)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.sqlite3")


def test_an_unknown_format_names_the_formats(store: Store) -> None:
    run = _run(store, "a", "completed", 1000)
    with pytest.raises(ReportError) as err:
        render(run, "pdf")
    assert all(f in str(err.value) for f in FORMATS)


@pytest.mark.parametrize("fmt", ["table", "criterion", "wrk", "gobench", "hitrate"])
def test_interrupted_and_failed_runs_are_labelled(store: Store, fmt: str) -> None:
    stopped = render(_run(store, "stopped", "interrupted", 1000), fmt)
    assert "interrupted" in stopped.split("## Reproduce")[0].lower()
    failed = render(_run(store, "broken", "failed", 1000, "TargetError: refused"), fmt)
    assert "failed" in failed and "TargetError: refused" in failed


@pytest.mark.parametrize("fmt", ["table", "criterion", "wrk", "gobench", "hitrate"])
def test_markdown_reports_start_with_the_setup_and_end_with_the_command(
    store: Store, fmt: str
) -> None:
    text = render(_run(store, "a", "completed", 1000), fmt)
    assert text.startswith("# ") and "'a'" in text.splitlines()[0]
    body = text.index("\n#", 2)  # the first heading after the title
    for row in ("| run |", "| target |", "| strategy |", "| workload |", "| load |",
                "| environment |"):  # fmt: skip
        assert 0 < text.index(row) < body, row
    tail = text.split("## Reproduce")[1]
    assert "```sh\nworkbench run --set name=a\n```" in tail
    assert tail.rstrip().endswith("</details>")


def test_a_comparison_gives_rows_side_by_side_and_ratios_to_the_first(store: Store) -> None:
    fast, slow = _run(store, "fast", "completed", 1000), _run(store, "slow", "completed", 2000)
    text = render([fast, slow], "table")
    results = text.split("## Results")[1].split("###")[0]
    rows = [ln for ln in results.splitlines() if ln.startswith("| run |")]
    assert [r.split("|")[2].strip() for r in rows] == ["fast", "slow"]
    p99 = summarise(slow.steps[0].stats).p(99) / summarise(fast.steps[0].stats).p(99)
    assert rows[1].rstrip(" |").endswith(f"x{p99:.2f}")
    assert "vs first" in text


# --- `workbench report` as a person uses it ----------------------------------------------


def _cli(args: list[str], store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )


def test_report_command_end_to_end_on_an_embedded_run(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite3"
    ran = _cli(
        ["run", "-q", "--name", "e2e", "--set", "load.ops=3000", "--set", "load.warmup=0",
         "--set", "load.concurrency=[1, 4]", "--set", "load.interval=0.2"],
        store,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    stored = Store(store).load("e2e")
    # Every format through the command, in this process: a subprocess each would start the
    # CLI eleven times more (the ones below are subprocesses, exit codes and streams).
    runner = CliRunner()
    for fmt in FORMATS:
        res = runner.invoke(
            app, ["report", "last", "--format", fmt], env={"WORKBENCH_STORE": str(store)}
        )
        assert res.exit_code == 0, (fmt, res.stderr)
        assert res.stdout.strip(), fmt
    # The table's figures are the stored histograms' and agree with `runs show`.
    table = _cli(["report", "e2e"], store).stdout
    shown = _cli(["runs", "show", "e2e"], store).stdout
    for step in stored.steps:
        s = summarise(step.stats)
        rate = f"{s.ops_per_s:,.0f}"
        assert f"{rate} ops/s" in shown
        row = next(ln for ln in table.splitlines() if ln.startswith(f"| {step.title} |"))
        assert rate in row and format_us(s.p(99)) in row
    # JSON is the stored run; -o writes a file; two runs compare.
    out = tmp_path / "r" / "run.json"
    out.parent.mkdir()  # a report creates no folder (issue 25 item 11)
    res = _cli(["report", "e2e", "-f", "json", "-o", str(out)], store)
    assert res.returncode == 0 and res.stdout == "" and "wrote" in res.stderr
    doc = json.loads(out.read_text())
    assert doc["runs"][0]["steps"][0]["stats"] == stored.steps[0].stats.to_dict()
    both = _cli(["report", "e2e", "last"], store)
    assert both.returncode == 0 and "vs first" in both.stdout
    # Mistakes are one line, a non-zero exit, no traceback.
    bad = _cli(["report", "last", "--format", "pdf"], store)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == [
        "error: unknown format 'pdf'; expected one of " + ", ".join(FORMATS)
    ]
    missing = _cli(["report", "nope"], store)
    assert missing.returncode == 1 and re.search(r"no run 'nope'", missing.stderr)
    assert "Traceback" not in missing.stderr
