"""The full stored runs as JSON: spec, environment, plan, notices, and per step the stored
totals and intervals (histograms in the standard HdrHistogram compressed encoding, so
nothing is lost) beside the summary every face shows.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from workbench.report import change_lines, repeats, simulated
from workbench.report.changes import comparisons_for
from workbench.report.model import RunData, StepData
from workbench.results.metrics import Stats, Summary, summarise

FORMAT = "cache-workbench/runs"
VERSION = 1


def summary_dict(s: Summary) -> dict[str, Any]:
    data = dataclasses.asdict(s)
    data["percentiles_us"] = {f"{k:g}": v for k, v in s.percentiles_us.items()}
    data["per_op"] = {
        kind: {"count": c, "ops_per_s": r, "p50_us": p50, "p99_us": p99}
        for kind, (c, r, p50, p99) in s.per_op.items()
    }
    return data


def stats_dict(stats: Stats) -> dict[str, Any]:
    return {"summary": summary_dict(summarise(stats)), "stats": stats.to_dict()}


def step_dict(step: StepData) -> dict[str, Any]:
    data: dict[str, Any] = {
        "index": step.index,
        "title": step.title,
        "label": step.label,
        "status": step.status,
    }
    if not step.started:
        return data
    data.update(
        {
            "spec": step.spec,
            # what the step ran, as the engine resolved it: a run read back from this file
            # (a baseline kept in a repository) names the same system and strategy
            "resolved": step.stored.resolved if step.stored is not None else {},
            "workers": step.workers,
            "clients": step.clients,
            "server": step.server,
            "summary": summary_dict(step.summary),
            "verdict": step.view.verdict.to_dict(),
            "stats": step.totals.to_dict(),
            "intervals": [
                {"index": i.index, "elapsed": i.elapsed, **stats_dict(i.stats)}
                for i in step.intervals
            ],
        }
    )
    if step.simulated:  # libCacheSim's figures, kept apart from the measured ones
        data["hit_rates"] = simulated.to_dict(step)
    return data


def run_dict(run: RunData) -> dict[str, Any]:
    r = run.stored
    data: dict[str, Any] = {
        "id": r.id,
        "name": r.name,
        "status": r.status,
        "error": r.error,
        "created_at": r.created_at,
        "finished_at": r.finished_at,
        "spec": r.spec,
        "environment": r.environment,
        "plan": r.plan,
        "notices": [{"step": n.step, "level": n.level, "message": n.message} for n in r.notices],
        "steps": [step_dict(s) for s in run.steps],
    }
    spread = repeats.to_dicts(run)
    if spread:  # median, min and max across the repeats of each step
        data["repeats"] = spread
    return data


def render(runs: Sequence[RunData], **options: Any) -> str:
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "runs": [run_dict(r) for r in runs],
    }
    compared = comparisons_for(runs)
    if compared:  # each run against the first, or one run's swept values against the first
        doc["comparisons"] = [change_lines.to_dict(c) for c in compared]
    return json.dumps(doc, indent=options.get("indent", 2), ensure_ascii=False) + "\n"
