"""HTTP add and replace, a set with ``If-None-Match: *`` / ``If-Match: *`` (412 when the
precondition fails), replayed from a trace against the real managed kv-store: both
engines count each one's outcome."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import collect, completed_clean, finished
from test_trace_every_op import NATIVE

from workbench.results.store import Store

ROWS = ("add a", "add a", "replace b", "replace a", "get a", "get b")
OUTCOMES = {"add": {"stored": 1, "not_stored": 1}, "replace": {"stored": 1, "not_stored": 1}}


# keep-alive and new-connection send what lean does; the conformance kit checks each.
@pytest.mark.parametrize("strategy", ["lean", pytest.param("native", marks=NATIVE)])
async def test_add_and_replace_over_http(tmp_path: Path, strategy: str) -> None:
    trace = tmp_path / "conditional.twitter.csv"
    lines = [f"{i},{row.split()[1]},1,5,1,{row.split()[0]},0" for i, row in enumerate(ROWS)]
    trace.write_text("\n".join(lines) + "\n")
    events = await collect(
        [
            "target.system=http",
            "target.managed=true",
            'target.server.kind="kv-store"',
            f'strategy.name="{strategy}"',
            f'workload.trace.path="{trace}"',
            'workload.trace.ops="as-recorded"',
            "workload.trace.speed=100",
            "load.workers=1",
            "load.concurrency=1",
            "load.duration=30",
        ],
        Store(tmp_path / "runs.sqlite"),
    )
    (step,) = finished(events)
    completed_clean(step)
    s = step.stats
    assert s.skipped == {}
    assert s.outcomes == OUTCOMES
    assert (s.hits, s.misses) == (1, 1)  # a was added, then replaced; b never was
