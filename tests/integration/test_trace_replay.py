"""Replaying a trace in the Python engine against a real, empty, unbounded Redis: every
request issued once, misses equal the trace's distinct objects; the trace's own ops
(as-recorded) with deletes and sets; a .zst file; a malformed file refused with exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support import collect, finished

from workbench.errors import SpecError
from workbench.spec.steps import load_spec
from workbench.store import Store
from workbench.traces.formats import read, writer
from workbench.traces.info import analyze
from workbench.traces.synth import synth

# A fresh managed Redis per run: empty, and without maxmemory (unbounded).
REDIS = ["target.system=redis", "target.managed=true", 'strategy.name="multiplexed"']


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.sqlite")


def _replay(path: Path, *extra: str) -> list[str]:
    return [*REDIS, f'workload.trace.path="{path}"', "load.duration=120", *extra]


@pytest.mark.parametrize("workers", [1, 2])
async def test_every_request_is_issued_once_and_misses_are_the_distinct_objects(
    store: Store, tmp_path: Path, workers: int
) -> None:
    trace = tmp_path / "t.oracleGeneral.zst"
    writer("oracleGeneral")(synth(6000, 900, "zipf(0.9)", "uniform(10,1000)", seed=5), str(trace))
    info = analyze(read(str(trace)))
    events = await collect(_replay(trace, f"load.workers={workers}", "load.concurrency=8"), store)
    (step,) = finished(events)
    assert step.status == "completed", step.reason
    s = step.stats
    assert s.hist["get"].get_total_count() == 6000
    assert s.misses == info.objects and s.hits == 6000 - info.objects
    assert s.hist["set"].get_total_count() == info.objects  # one fill per miss
    assert s.error_count == 0


async def test_warm_up_is_the_first_requests_and_limit_cuts_the_trace(
    store: Store, tmp_path: Path
) -> None:
    trace = tmp_path / "t.csv"
    writer("csv")(synth(3000, 400, "zipf(0.9)", "fixed(100)", seed=2), str(trace))
    events = await collect(
        _replay(
            trace,
            "workload.trace.limit=2000",
            "load.warmup_ops=500",
            "load.workers=1",
            "load.concurrency=4",
        ),
        store,
    )
    (step,) = finished(events)
    # The 1,500 requests after the first 500; an op in flight when the warm-up ends is
    # recorded in neither phase (the engine's rule), so up to one per client is not counted.
    assert 1500 - 4 <= step.stats.hist["get"].get_total_count() <= 1500


async def test_as_recorded_replays_sets_gets_and_deletes_and_names_what_it_skips(
    store: Store, tmp_path: Path
) -> None:
    trace = tmp_path / "ops.twitter.csv"
    trace.write_text(
        "0,k:a,6,100,1,set,60\n1,k:a,6,0,1,get,0\n2,k:a,6,0,1,delete,0\n"
        "3,k:a,6,0,1,get,0\n4,k:b,3,50,2,incr,0\n5,k:b,3,50,2,add,0\n6,k:b,3,50,2,gets,0\n"
    )
    events = await collect(_replay(trace, 'workload.trace.ops="as-recorded"'), store)
    (step,) = finished(events)
    s = step.stats
    assert s.hist["set"].get_total_count() == 1 and s.hist["delete"].get_total_count() == 1
    assert (s.hits, s.misses) == (1, 2)  # the get after the set hits; after the delete, not
    assert s.errors == {"skipped incr": 1, "skipped add": 1}
    assert "'incr'" in s.first_errors["skipped incr"]


def test_bad_trace_fields_are_named(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    writer("csv")(synth(10, 5), str(trace))
    cases = {
        'workload.trace.path="/nonexistent.csv"': "workload.trace.path",
        'workload.trace.ops="sometimes"': "workload.trace.ops",
        "workload.trace.speed=-1": "workload.trace.speed",
        "workload.trace.limit=-1": "workload.trace.limit",
        'workload.trace.format="pcap"': "workload.trace.format",
    }
    for override, field in cases.items():
        with pytest.raises(SpecError) as err:
            load_spec(None, [*_replay(trace), override])
        assert field in str(err.value), (override, err.value)


def test_a_malformed_trace_stops_the_run_with_one_line_and_exit_2(tmp_path: Path) -> None:
    trace = tmp_path / "bad.twitter.csv"
    trace.write_text("0,a,1,10,0,get,0\n1,b,1,ten,0,get,0\n")
    res = subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", "trace", "info", str(trace)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 2
    assert res.stderr.strip() == (
        f"error: {trace}: record 1 at byte offset 17: expected timestamp,key,key size,"
        "value size,client id,op,ttl (invalid literal for int() with base 10: 'ten'); "
        "got b'1,b,1,ten,0,get,0'"
    )


async def test_a_timed_replay_keeps_the_trace_schedule(store: Store, tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    # 300 requests, 100 per second of trace time: a 2.99 s span, replayed at speed 2.
    writer("csv")(synth(300, 50, "zipf(0.9)", "fixed(100)", seed=4, rate=100), str(trace))
    events = await collect(_replay(trace, "workload.trace.speed=2", "load.workers=1"), store)
    (step,) = finished(events)
    s = step.stats
    assert s.hist["get"].get_total_count() == 300
    # No request is sent before its time: the replay cannot finish before the last one is
    # due, 2.99 / 2 s in; the bound above only catches a schedule far off.
    assert 1.49 <= s.duration < 4.0, s.duration
    assert s.send_lag is not None and s.send_lag.get_total_count() == 300
    assert s.send_lag.get_value_at_percentile(0) >= 0
