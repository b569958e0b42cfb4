"""The stopwatch is the engine's, the frames are the contract: the native worker's frames,
read by the Python side's reader, against the Python worker's for the same spec."""

from __future__ import annotations

import pytest
from native_workers import intervals, run_worker, spec, stats_of, status, total

from workbench.results.metrics import Stats
from workbench.sdk.servers import ServerProcess


def _spec(redis: ServerProcess, strategy: str, **more: object) -> object:
    return spec(
        **{
            "target.system": "redis",
            "target.options": {"url": redis.target_options["url"]},
            "strategy.name": strategy,
            "load.concurrency": 4,
            "load.warmup": 0.0,
            "workload.keys": 500,
            "workload.mix": {"get": 0.7, "set": 0.2, "delete": 0.1},
            **more,
        }
    )


@pytest.mark.redis
def test_native_frames_read_like_the_python_workers(redis_server: ServerProcess) -> None:
    budget = {"load.ops": 3000, "load.duration": None, "load.interval": 5.0}
    native = run_worker("native", _spec(redis_server, "native", **budget))
    python = run_worker("python", _spec(redis_server, "multiplexed", **budget))
    assert status(native) == status(python) == "completed"
    ready = native[0]
    assert ready["type"] == "ready" and ready["engine"]["name"] == "native"
    assert ready["engine"]["version"]
    assert [f["type"] for f in native[1:]] == ["armed", "interval", "step_done"]
    n_keys = set(intervals(native)[0]["stats"])
    p_keys = set(intervals(python)[0]["stats"])
    assert n_keys == p_keys == set(Stats().to_dict())  # docs/frames.md: one definition
    assert len(intervals(native)) == len(intervals(python)) == 1
    n, p = total(native), total(python)
    # The op budget is spent exactly by both, and every op is in one histogram.
    assert n.ops == p.ops == 3000
    assert n.hits + n.misses == n.hist["get"].get_total_count()
    assert set(n.hist) == set(p.hist) == {"get", "set", "delete"}
    for kind in ("get", "set", "delete"):
        share_n = n.hist[kind].get_total_count() / n.ops
        share_p = p.hist[kind].get_total_count() / p.ops
        assert abs(share_n - share_p) < 0.05, kind
    assert n.error_count == 0
    assert n.bytes_out == 100 * n.hist["set"].get_total_count()
    assert n.hist["get"].get_min_value() >= 1
    cpu = intervals(native)[0]["stats"]["cpu"]
    assert list(cpu) == ["0"] and cpu["0"] > 0
    assert intervals(native)[0]["stats"]["send_lag"] == ""


@pytest.mark.redis
def test_interval_grid_matches_the_python_engine(redis_server: ServerProcess) -> None:
    grid = {"load.duration": 1.0, "load.interval": 0.25}
    native = run_worker("native", _spec(redis_server, "native", **grid))
    python = run_worker("python", _spec(redis_server, "multiplexed", **grid))
    n, p = intervals(native), intervals(python)
    # Both engines keep the grid of docs/frames.md: the same count, durations and times.
    assert len(n) == len(p) == 4
    assert [f["index"] for f in n] == [f["index"] for f in p] == [0, 1, 2, 3]
    for a, b in zip(n, p, strict=True):
        assert a["stats"]["duration"] == pytest.approx(0.25, abs=1e-9)
        assert b["stats"]["duration"] == pytest.approx(0.25, abs=1e-9)
        assert a["elapsed"] == pytest.approx(b["elapsed"], abs=1e-9)


@pytest.mark.redis
def test_a_short_tail_is_folded_and_a_long_one_kept(redis_server: ServerProcess) -> None:
    # docs/frames.md: boundaries at k*I; a tail under I/2 joins the last interval.
    folded = run_worker(
        "native", _spec(redis_server, "native", **{"load.duration": 1.0, "load.interval": 0.3})
    )
    kept = run_worker(
        "native", _spec(redis_server, "native", **{"load.duration": 0.8, "load.interval": 0.3})
    )
    assert [round(f["stats"]["duration"], 6) for f in intervals(folded)] == [0.3, 0.3, 0.4]
    assert [round(f["elapsed"], 6) for f in intervals(folded)] == [0.3, 0.6, 1.0]
    assert [round(f["stats"]["duration"], 6) for f in intervals(kept)] == [0.3, 0.3, 0.2]
    assert all(stats_of(f).ops > 0 for f in intervals(folded))


@pytest.mark.redis
def test_an_op_budget_ends_the_phase_and_is_spent_exactly(redis_server: ServerProcess) -> None:
    frames = run_worker(
        "native",
        _spec(
            redis_server,
            "native",
            **{
                "load.ops": 20000,
                "load.duration": None,
                "load.interval": 0.05,
                "load.warmup_ops": 500,
            },
        ),
    )
    assert status(frames) == "completed"
    got = intervals(frames)
    assert total(frames).ops == 20000
    assert [f["index"] for f in got] == list(range(len(got)))
    # Durations add up to the last interval's end: no measured time lost or counted twice.
    assert sum(f["stats"]["duration"] for f in got) == pytest.approx(got[-1]["elapsed"], abs=1e-6)
