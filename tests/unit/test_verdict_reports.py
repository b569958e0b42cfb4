"""The verdict and the search where people read them: reports, the CLI summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workbench.cli.format import step_summary
from workbench.report import render
from workbench.results.events import (
    Event,
    Interval,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
)
from workbench.results.live import RunView
from workbench.results.metrics import Stats, fold, merged, new_histogram
from workbench.results.store import Store, StoredRun
from workbench.sdk import load_plugin
from workbench.spec.load import spec_from_data
from workbench.spec.model import spec_to_dict


def stats(ops: int, latency_ns: int, worker: float, server: float, offered: int = 0) -> Stats:
    h = new_histogram()
    fold(h, [latency_ns] * ops)
    s = Stats(duration=1.0, hist={"get": h}, hits=ops, cpu={"0": worker}, offered=offered)
    s.server = {"cpu_seconds": server, "host_busy": 0.4, "host_cpus": 8}
    if offered:
        s.send_lag = new_histogram()
        fold(s.send_lag, [5_000] * offered)
    return s


def record(
    store: Store,
    run_id: str,
    spec_args: list[str],
    steps: list[tuple[str, dict[str, Any], list[Stats]]],
    plan: bool,
) -> StoredRun:
    spec = spec_from_data({}, spec_args)
    events: list[Event] = [
        RunStarted(
            run_id,
            spec.name,
            spec_to_dict(spec),
            [{"index": i, "label": {}, "title": t} for i, (t, _, _) in enumerate(steps)]
            if plan
            else [],
            {"cpus": 8},
            1.0,
        )
    ]
    for i, (title, overrides, parts) in enumerate(steps):
        step_spec = spec_to_dict(spec)
        for path, value in overrides.items():
            section, key = path.split(".")
            step_spec[section][key] = value
        label = {k: str(v) for k, v in overrides.items()}
        # What the system declares, as the engine stores it with the step (its cores).
        facts = load_plugin(step_spec["target"]["system"]).facts({}, False)
        events.append(StepStarted(run_id, i, title, label, step_spec, 1, 16, facts=facts))
        events += [Interval(run_id, i, k, k + 1.0, p) for k, p in enumerate(parts)]
        events.append(StepFinished(run_id, i, "completed", merged(parts, concurrent=False)))
    events.append(RunFinished(run_id, "completed"))
    for e in events:
        store.record(e)
    return store.load(run_id)


def test_reports_and_summary_show_the_verdict(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.sqlite3")
    run = record(
        store,
        "r1",
        ["name=cpu", "target.system=redis", "load.concurrency=[1,16]"],
        [
            ("concurrency=1", {"load.concurrency": 1}, [stats(5000, 50_000, 0.3, 0.2)] * 2),
            ("concurrency=16", {"load.concurrency": 16}, [stats(9000, 90_000, 0.97, 0.41)] * 2),
        ],
        plan=True,
    )
    table = render(run, "table")
    assert "| verdict |" in table
    assert "| latency-bound |" in table and "| generator-bound |" in table
    assert "### What limited each step" in table
    for fmt in ("criterion", "wrk", "gobench", "hitrate"):
        text = render(run, fmt)
        assert "concurrency = 16: generator-bound: worker 97% of a core, server 41% of 1 core" in (
            text
        ), fmt
        assert text.index("### What limited each step") < text.index("## Reproduce")
    page = render(run, "html")
    assert page.count('<td class="verdict">latency-bound</td>') == 1
    assert page.count('<td class="verdict">generator-bound</td>') == 1
    assert "<h2>What limited each step</h2>" in page
    assert "concurrency = 16</b>: generator-bound: worker 97% of a core" in page
    doc = json.loads(render(run, "json"))
    kinds = [s["verdict"]["kind"] for s in doc["runs"][0]["steps"]]
    assert kinds == ["latency-bound", "generator-bound"]
    view = RunView()
    for e in run.events():
        view = view.apply(e)
    lines = step_summary(view.steps[1])
    verdict = " ".join(
        line.strip()
        for line in lines[next(i for i, line in enumerate(lines) if line.startswith("verdict: ")) :]
    )
    assert verdict.startswith("verdict: generator-bound: worker 97%")
    assert all(len(line) <= 100 for line in lines if line.startswith(("verdict", "  ")))


def test_search_report_of_stored_probes(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.sqlite3")
    probes = [
        (1000, 100_000),
        (2000, 150_000),
        (4000, 3_000_000),
        (3000, 400_000),
        (3500, 2_000_000),
    ]
    run = record(
        store,
        "s1",
        [
            "name=find",
            "target.system=redis",
            'search.target=["p99<1ms"]',
            "search.precision=0.2",
            "search.confirm=1",  # each failure counted at once: no retries among the steps
            "search.max_probe=0",  # nor long probes
        ],
        [
            (f"rate={r}", {"load.rate": float(r)}, [stats(r, lat, 0.3, 0.2, offered=r)])
            for r, lat in probes
        ],
        plan=False,
    )
    text = render(run, "search")
    assert "Target: **p99<1ms, errors<0.1%** on every probe." in text
    assert "open loop at 1000, 2000, 4000, 3000, 3500 ops/s (searched)" in text
    assert "- Highest passing rate: **3,000 ops/s** offered (3,000 achieved)" in text
    assert (
        "- First failing rate: 3,500 ops/s (too few samples (3,500 ops of the 100,000 its "
        "percentile needs)): p99<1ms" in text
    )
    assert "- Knee: 2,000 ops/s" in text
    assert "within 16.7% after 5 probes" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and ln[2].isdigit()]
    assert [r.split(" | ")[0] for r in rows] == [
        "| 1,000",
        "| 2,000",
        "| 3,000",
        "| 3,500",
        "| 4,000",
    ]
    assert "| pass | on schedule |" in rows[0]
    assert "workbench search --set" in text


def test_repeats_give_the_verdict_of_each_step(tmp_path: Path) -> None:
    store = Store(tmp_path / "runs.sqlite3")
    busy, idle = stats(9000, 90_000, 0.97, 0.41), stats(5000, 50_000, 0.3, 0.2)
    run = record(
        store,
        "r2",
        ["name=rep", "target.system=redis", "load.concurrency=[1,16]", "load.repeat=3"],
        [
            (f"concurrency={c}, repeat={r}", {"load.concurrency": c, "load.repeat": r}, [part])
            for r in (1, 2, 3)
            for c, part in ((1, idle), (16, idle if r == 2 else busy))
        ],
        plan=True,
    )
    table = render(run, "table")
    section = table[table.index("### Repeats") :].split("\n\n")[1]
    rows = [ln for ln in section.splitlines() if ln.startswith("| redis/")]
    assert [r.rsplit(" | ", 1)[1] for r in rows] == [
        "latency-bound |",
        "generator-bound 2/3, latency-bound 1/3 |",
    ]
    doc = json.loads(render(run, "json"))["runs"][0]["repeats"]
    assert doc[1]["verdicts"] == ["generator-bound", "latency-bound", "generator-bound"]
