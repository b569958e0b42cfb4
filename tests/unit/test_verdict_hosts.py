"""The verdict across machines: each load host's CPU apart, and the full one named."""

from __future__ import annotations

from typing import Any

from test_verdict import REDIS, interval

from workbench.results.verdict import (
    GENERATOR_BOUND,
    LATENCY_BOUND,
    MACHINE_BOUND,
    SERVER_BOUND,
    Usage,
    verdict_of,
)


def test_a_full_load_host_is_named_and_the_coordinators_machine_is_not_blamed() -> None:
    # Worker 1 on 10.77.0.3 (2 CPUs) fills it; the coordinator's machine is quiet.
    figures = {
        "10.77.0.2": {"busy": 0.30, "cpus": 4, "workers": ["0"]},
        "10.77.0.3": {"busy": 0.98, "cpus": 2, "workers": ["1", "2"]},
    }
    v = verdict_of(
        [
            interval(
                workers=(0.3, 0.8, 0.8),
                server_cpu=0.4,
                host=(0.2, 8),
                server={"hosts": figures},
            )
        ],
        REDIS,
    )
    assert v.kind == MACHINE_BOUND
    assert v.evidence.startswith("host 10.77.0.3 98% busy on 2 CPUs (1.60 of them ours)"), v.line
    assert "host 10.77.0.2 30% busy on 4 CPUs (0.30 of them ours)" in v.evidence
    assert "machine 20% busy on 8 CPUs" in v.evidence
    assert v.figures["hosts_busy"] == {"10.77.0.3": 0.98, "10.77.0.2": 0.30}


def test_a_host_filled_by_other_processes_comes_after_busy_workers() -> None:
    # The host is full but our one worker on it used little: its worker is starved, and a
    # busy worker elsewhere explains the figure first.
    figures = {"10.77.0.3": {"busy": 0.95, "cpus": 4, "workers": ["1"]}}
    busy_worker = interval(workers=(0.97, 0.2), server_cpu=0.3, server={"hosts": figures})
    assert verdict_of([busy_worker], REDIS).kind == GENERATOR_BOUND
    idle = interval(workers=(0.1, 0.2), server_cpu=0.3, server={"hosts": figures})
    v = verdict_of([idle], REDIS)
    assert v.kind == MACHINE_BOUND and v.evidence.startswith("host 10.77.0.3 95% busy"), v.line


def test_a_busy_server_still_comes_first_and_quiet_hosts_change_nothing() -> None:
    figures = {"10.77.0.3": {"busy": 0.99, "cpus": 1, "workers": ["0"]}}
    v = verdict_of([interval(workers=(0.9,), server_cpu=0.95, server={"hosts": figures})], REDIS)
    assert v.kind == SERVER_BOUND
    quiet = {"10.77.0.3": {"busy": 0.40, "cpus": 4, "workers": ["0"]}}
    v = verdict_of([interval(workers=(0.2,), server_cpu=0.3, server={"hosts": quiet})], REDIS)
    assert v.kind == LATENCY_BOUND
    assert "host 10.77.0.3 40% busy on 4 CPUs (0.20 of them ours)" in v.evidence


def test_host_shares_are_weighted_by_interval_length() -> None:
    def one(busy: float, duration: float) -> Any:
        figures = {"10.77.0.3": {"busy": busy, "cpus": 2, "workers": ["0"]}}
        return interval(workers=(0.5,), duration=duration, server={"hosts": figures})

    usage = Usage.of([one(1.0, 3.0), one(0.0, 1.0)])
    share, cpus, ours = usage.host_shares()["10.77.0.3"]
    assert (round(share, 4), cpus, round(ours, 4)) == (0.75, 2, 0.5)
