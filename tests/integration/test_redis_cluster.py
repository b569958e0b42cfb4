"""Redis Cluster against real servers: a managed three-node cluster (redis-cli --cluster
create) run by the native engine by default, both engines (the native engine and the
`cluster` strategy) spreading keys over every node, and a node killed mid-run counted as
errors by kind, without a hang."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
import redis
from support import collect, completed_clean, finished
from workbench_redis.cluster import ClusterProcess, start_cluster

from workbench.results.events import Interval, StepStarted
from workbench.results.live import RunView
from workbench.results.store import Store
from workbench.sdk.servers import LOOPBACK, ServerProcess

pytestmark = pytest.mark.skipif(shutil.which("redis-cli") is None, reason="needs redis-cli")


async def test_a_managed_cluster_gets_keys_on_every_node(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def on_event(e: Any) -> None:
        if isinstance(e, StepStarted):
            seen["started"] = e
            url = redis.Redis.from_url(e.server["url"])
            seen["ports"] = [int(r[2][1]) for r in url.execute_command("CLUSTER", "SLOTS")]

    events = await collect(
        [
            "target.system=redis",
            "target.managed=true",
            "target.server.cluster=true",
            "load.ops=3000",
            "load.workers=1",
            "load.concurrency=8",
        ],
        Store(tmp_path / "runs.sqlite"),
        on_event=on_event,
    )
    (step,) = finished(events)
    assert seen["started"].strategy == "native"  # the native engine speaks Redis Cluster
    completed_clean(step)
    # The server's CPU is read per node (each node's process): the verdict's cores are the
    # nodes' and it names the busiest node.
    view = RunView()
    for e in events:
        view = view.apply(e)
    figures = view.steps[0].verdict.figures
    nodes = [f"{LOOPBACK}:{port}" for port in seen["ports"]]
    assert sorted(figures["nodes_core_share"]) == sorted(nodes), figures
    assert figures["busiest_node"] in nodes
    assert figures["server_cores"] == min(3.0, figures["machine_cpus"] or 3.0)
    assert "busiest node" in view.steps[0].verdict.line
    assert not Path(f"/proc/{seen['started'].server['pid']}").exists()  # stopped with the step


@pytest.mark.parametrize("strategy", ["native", "cluster"])
async def test_keys_land_on_every_node(strategy: str, tmp_path: Path) -> None:
    with start_cluster(3) as cluster:
        events = await collect(
            [
                "target.system=redis",
                f"target.options.url={cluster.target_options['url']}",
                "target.options.cluster=true",
                f"strategy.name={strategy}",
                "load.ops=3000",
                "load.workers=1",
                "workload.prefill=false",
            ],
            Store(tmp_path / "runs.sqlite"),
        )
        (step,) = finished(events)
        assert step.status == "completed", step.reason
        sizes = [redis.Redis(port=n.port).dbsize() for n in cluster.nodes]
        pids = [n.pid for n in cluster.nodes]
    assert all(size > 0 for size in sizes), sizes
    assert not any(Path(f"/proc/{pid}").exists() for pid in pids)  # all stopped


@pytest.mark.parametrize("strategy", ["native", "cluster"])
async def test_a_node_killed_mid_run_gives_errors_by_kind_and_no_hang(
    strategy: str, tmp_path: Path
) -> None:
    with start_cluster(3) as cluster:
        victim = cluster.nodes[2]

        def on_event(e: Any) -> None:
            if isinstance(e, Interval) and e.index == 1 and victim.alive():
                victim.stop()

        events = await collect(
            [
                "target.system=redis",
                f"target.options.url={cluster.target_options['url']}",
                "target.options.cluster=true",
                f"strategy.name={strategy}",
                "target.options.timeout=1",
                "load.duration=2",
                "load.workers=1",
                "load.concurrency=4",
                "workload.prefill=false",
            ],
            Store(tmp_path / "runs.sqlite"),
            on_event=on_event,
        )
    (step,) = finished(events)
    assert not victim.alive()
    assert step.stats.errors, "a third of the slots went away: some ops must fail"
    assert set(step.stats.errors) <= {"connection", "timeout", "server", "refused", "abandoned"}


def _primary(cluster: ClusterProcess) -> ServerProcess:
    """A node that is a primary now (redis-cli picks which of the nodes are)."""
    for node in cluster.nodes:
        role = redis.Redis(port=node.port).execute_command("ROLE")
        if role[0] in (b"master", "master"):
            return node
    raise AssertionError("no primary in the cluster")


@pytest.mark.parametrize("strategy", ["native", "cluster"])
async def test_a_replica_takes_over_a_killed_primary_and_the_load_goes_on(
    strategy: str, tmp_path: Path
) -> None:
    with start_cluster(3, replicas=1) as cluster:
        assert len(cluster.nodes) == 6
        victim = _primary(cluster)
        intervals: list[Interval] = []

        def on_event(e: Any) -> None:
            if isinstance(e, Interval):
                intervals.append(e)
                if e.index == 3 and victim.alive():
                    os.kill(victim.pid, signal.SIGKILL)

        events = await collect(
            [
                "target.system=redis",
                f"target.options.url={cluster.target_options['url']}",
                "target.options.cluster=true",
                f"strategy.name={strategy}",
                "target.options.timeout=1",
                "load.duration=9",
                "load.workers=1",
                "load.concurrency=4",
                "load.rate=1000",
                "workload.prefill=false",
            ],
            Store(tmp_path / "runs.sqlite"),
            on_event=on_event,
        )
    (step,) = finished(events)
    assert not victim.alive()
    assert step.status == "completed", step.reason
    assert step.stats.errors, "the primary's slots were unserved until the failover"
    assert set(step.stats.errors) <= {"connection", "timeout", "server", "abandoned"}
    # The replica took over (node timeout 2 s): the last second ran without an error, its
    # ops answered (a quarter second of it may pass with none on a loaded machine).
    last = [i.stats for i in intervals if i.index >= 0][-4:]
    assert sum(s.ops for s in last) > 0, [s.ops for s in last]
    assert not any(s.errors for s in last), [s.errors for s in last]


@pytest.mark.parametrize("strategy", ["native", "cluster"])
async def test_a_managed_tls_cluster_is_loaded_over_tls_in_both_engines(
    strategy: str, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}

    def on_event(e: Any) -> None:
        if isinstance(e, StepStarted):
            seen["url"] = e.server["url"]
            seen["ca"] = e.server["tls_ca"]

    events = await collect(
        [
            "target.system=redis",
            "target.managed=true",
            "target.server.cluster=true",
            "target.server.tls=true",
            f"strategy.name={strategy}",
            "load.ops=3000",
            "load.workers=1",
            "load.concurrency=4",
            "workload.prefill=false",
        ],
        Store(tmp_path / "runs.sqlite"),
        on_event=on_event,
    )
    (step,) = finished(events)
    assert seen["url"].startswith("rediss://")
    completed_clean(step)
    assert step.stats.ops == 3000
    assert not Path(seen["ca"]).exists()  # the throw-away CA went with the cluster
