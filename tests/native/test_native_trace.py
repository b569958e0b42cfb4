"""--trace-out in the native engine: each worker's part, merged in time order with the
Python side's reader, holds exactly the measured requests, the warm-up beside it."""

from __future__ import annotations

from pathlib import Path

from support import collect, finished

from workbench.results.store import Store
from workbench.workload.oracle_trace import read_trace, warmup_path


async def test_the_native_engine_writes_the_measured_requests(tmp_path: Path) -> None:
    trace = tmp_path / "native.oracleGeneral"
    events = await collect(
        [
            "target.system=redis",
            "target.managed=true",
            "strategy.name=native",
            "workload.mix={cache_aside=3, set=1, delete=1}",
            "workload.keys=500",
            'workload.key_distribution="zipf(0.99)"',
            'workload.value_size="fixed(64)"',
            "load.ops=6000",
            "load.warmup_ops=2000",
            "load.concurrency=8",
            "load.workers=2",
            f'workload.trace_out="{trace}"',
        ],
        Store(tmp_path / "runs.sqlite"),
    )
    (step,) = finished(events)
    assert step.status == "completed", step.stats.first_errors
    records = list(read_trace(str(trace)))
    gets = step.stats.hist["get"].get_total_count()  # cache-aside gets included
    deletes = step.stats.hist["delete"].get_total_count()
    # Every measured op but the deletes is a request; a cache-aside set is not its own.
    assert deletes > 0 and len(records) + deletes == 6000
    plain_sets = len(records) - gets
    assert 0 < plain_sets < len(records) // 3
    assert all(0 <= r[1] < 500 and r[2] == 64 for r in records)
    assert [r[0] for r in records] == sorted(r[0] for r in records)  # time order
    # Next accesses point at the same object further on.
    for i, (_, oid, _, nxt) in enumerate(records[:300]):
        assert nxt == -1 or (nxt > i and records[nxt][1] == oid)
    # About 2,000 warm-up ops, a fifth of them deletes (not requests), beside it.
    assert Path(warmup_path(str(trace))).stat().st_size >= 2000 * 24 * 0.7
