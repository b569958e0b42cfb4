"""The native engine's Redis Cluster mode against a real three-node cluster: pipelined on
every node connection, hash tags that pin every key to one slot, and two workers."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from support import collect, completed_clean, finished
from workbench_redis.cluster import ClusterProcess, start_cluster

from workbench.results.events import StepFinished
from workbench.results.store import Store

pytestmark = pytest.mark.skipif(shutil.which("redis-cli") is None, reason="needs redis-cli")


@pytest.fixture
def cluster() -> Iterator[ClusterProcess]:
    with start_cluster(3) as c:
        yield c


async def run(tmp_path: Path, cluster: ClusterProcess, overrides: list[str]) -> StepFinished:
    events = await collect(
        [
            "target.system=redis",
            f"target.options.url={cluster.target_options['url']}",
            "target.options.cluster=true",
            "strategy.name=native",
            "workload.prefill=false",
            "workload.mix={get=1,set=1}",
            *overrides,
        ],
        Store(tmp_path / "runs.sqlite"),
    )
    (step,) = finished(events)
    return step


def sizes(cluster: ClusterProcess) -> list[int]:
    return [redis.Redis(port=n.port).dbsize() for n in cluster.nodes]


async def test_pipelined_on_every_node_connection(tmp_path: Path, cluster: ClusterProcess) -> None:
    step = await run(
        tmp_path,
        cluster,
        ["load.ops=20000", "load.workers=2", "load.concurrency=4", "strategy.options.pipeline=16"],
    )
    completed_clean(step)
    assert step.stats.ops == 20000
    assert step.stats.moved == step.stats.ask == 0  # the map was right from the start
    assert all(n > 0 for n in sizes(cluster)), sizes(cluster)


async def test_a_hash_tag_pins_every_key_to_one_node(
    tmp_path: Path, cluster: ClusterProcess
) -> None:
    step = await run(
        tmp_path,
        cluster,
        ["load.ops=3000", "load.workers=1", "load.concurrency=4", "workload.key_prefix={pinned}:"],
    )
    completed_clean(step)
    assert sorted(n > 0 for n in sizes(cluster)) == [False, False, True], sizes(cluster)


async def test_ops_parked_in_the_warm_up_are_not_counted_as_measured(
    tmp_path: Path, cluster: ClusterProcess
) -> None:
    # An op drawn in the warm-up that waited for its node is sent in the warm-up's name: the
    # measured phase counts exactly its budget.
    step = await run(
        tmp_path,
        cluster,
        ["load.warmup=0.5", "load.ops=3000", "load.workers=1", "load.concurrency=4"],
    )
    completed_clean(step)
    assert step.stats.ops == 3000
