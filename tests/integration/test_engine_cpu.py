"""Issue 11's recording side: worker CPU, server CPU and the machine's busy share."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import collect, finished

from workbench.results.events import Interval
from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess

RUN = ["load.duration=2", "load.interval=0.5", "load.workers=2", "load.concurrency=4"]


def _check_machine(server: dict[str, object]) -> None:
    assert 0.0 <= server["host_busy"] <= 1.0  # type: ignore[operator]
    assert server["host_cpus"] >= 1  # type: ignore[operator]


async def test_every_interval_says_what_each_worker_and_the_managed_server_used(
    tmp_path: Path,
) -> None:
    events = await collect(
        ["target.system=redis", "target.managed=true", *RUN], Store(tmp_path / "runs.sqlite")
    )
    intervals = [e for e in events if isinstance(e, Interval)]
    assert len(intervals) == 4
    for i in intervals:
        assert set(i.stats.cpu) == {"0", "1"}
        assert all(0.0 <= v <= i.stats.duration * 1.5 for v in i.stats.cpu.values())
        assert i.stats.server["cpu_seconds"] >= 0.0
        assert i.stats.server["cpu_cores"] >= 1
        _check_machine(i.stats.server)
        assert i.stats.offered == 0 and i.stats.send_lag is None
    (step,) = finished(events)
    assert sum(step.stats.cpu.values()) > 0
    assert step.stats.server["cpu_seconds"] > 0  # a loaded Redis uses some CPU in 2 s
    # The step's figures are the intervals' sum and time-weighted mean, not the last one's.
    total = sum(i.stats.server["cpu_seconds"] for i in intervals)
    assert step.stats.server["cpu_seconds"] == pytest.approx(total, abs=1e-3)
    busy = sum(i.stats.server["host_busy"] * i.stats.duration for i in intervals)
    span = sum(i.stats.duration for i in intervals)
    assert step.stats.server["host_busy"] == pytest.approx(busy / span, abs=1e-3)
    stored = Store(tmp_path / "runs.sqlite").load("last").steps[0]
    assert stored.intervals[0].stats.cpu == intervals[0].stats.cpu


async def test_an_unmanaged_redis_reports_its_cpu_through_info(
    redis_server: ServerProcess, tmp_path: Path
) -> None:
    events = await collect(
        ["target.system=redis", f"target.options.url={redis_server.target_options['url']}", *RUN],
        Store(tmp_path / "runs.sqlite"),
    )
    (step,) = finished(events)
    assert step.stats.server["cpu_seconds"] > 0
    assert "used_cpu_user" in step.stats.server
    _check_machine(step.stats.server)


async def test_memcached_reports_its_cpu_through_stats(
    memcached_server: ServerProcess, tmp_path: Path
) -> None:
    events = await collect(
        ["target.system=memcached", f"target.options.servers=['{memcached_server.address}']", *RUN],
        Store(tmp_path / "runs.sqlite"),
    )
    (step,) = finished(events)
    assert step.status == "completed"
    assert step.stats.server["cpu_seconds"] > 0
    assert "rusage_user" in step.stats.server


async def test_open_loop_intervals_report_offered_ops_and_send_lag(tmp_path: Path) -> None:
    events = await collect([*RUN, "load.rate=400"], Store(tmp_path / "runs.sqlite"))
    intervals = [e for e in events if isinstance(e, Interval)]
    assert [i.stats.offered for i in intervals] == [200, 200, 200, 200]
    for i in intervals:
        assert i.stats.send_lag is not None
        assert i.stats.send_lag.get_total_count() == pytest.approx(i.stats.ops, abs=4)


async def test_an_op_budget_warmup_is_not_counted_as_measured_server_cpu(tmp_path: Path) -> None:
    # Only the workers see an op-budget warm-up end: the first interval's window would mix
    # warm-up and measured work, so it carries no server CPU and the count begins there.
    events = await collect(
        ["target.system=redis", "target.managed=true", *RUN, "load.warmup_ops=20000"],
        Store(tmp_path / "runs.sqlite"),
    )
    intervals = [e for e in events if isinstance(e, Interval)]
    assert len(intervals) == 4
    assert "cpu_seconds" not in intervals[0].stats.server
    assert "host_busy" not in intervals[0].stats.server
    assert "rss_bytes" in intervals[0].stats.server  # the other figures are there
    for i in intervals[1:]:
        assert i.stats.server["cpu_seconds"] >= 0.0
        _check_machine(i.stats.server)
    (step,) = finished(events)
    later = sum(i.stats.server["cpu_seconds"] for i in intervals[1:])
    assert step.stats.server["cpu_seconds"] == pytest.approx(later, abs=1e-3)
