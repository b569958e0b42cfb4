"""One slot of a real three-node Redis Cluster migrated mid-run, as `redis-cli --cluster
reshard` does it (CLUSTER SETSLOT ... IMPORTING / MIGRATING, MIGRATE, SETSLOT ... NODE):
both engines follow -ASK while the slot moves and -MOVED after, count both, and lose no
op nor count one as an error."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import redis
from support import collect, completed_clean, finished
from workbench_redis.cluster import ClusterProcess, start_cluster

from workbench.results.events import Interval
from workbench.results.store import Store

pytestmark = pytest.mark.skipif(shutil.which("redis-cli") is None, reason="needs redis-cli")

OPS = 6000
RATE = 2000  # ops/s: the run lasts about 3 s, the migration happens in its second


def _node_id(r: redis.Redis) -> str:
    return r.execute_command("CLUSTER", "MYID").decode()


def migrate_one_slot(cluster: ClusterProcess, done: threading.Event) -> None:
    """Move the slot of a key the load uses from its node to the next, slowly enough that
    clients meet the slot while it migrates (ASK) and after (MOVED)."""
    try:
        nodes = [redis.Redis(port=n.port, socket_timeout=5) for n in cluster.nodes]
        src = next(r for r in nodes if r.dbsize() > 0)
        key = src.randomkey()
        slot = int(src.execute_command("CLUSTER", "KEYSLOT", key))
        dst = nodes[(nodes.index(src) + 1) % len(nodes)]
        src_id, dst_id = _node_id(src), _node_id(dst)
        dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
        keys = src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 1000)
        port = cluster.nodes[nodes.index(dst)].port
        src.execute_command("MIGRATE", "127.0.0.1", port, "", 0, 5000, "KEYS", *keys)
        time.sleep(0.6)  # the keys are on dst, the slot still src's: ASK
        for r in (dst, src, *[n for n in nodes if n not in (src, dst)]):
            r.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
        for r in nodes:
            r.close()
    finally:
        done.set()


class Migration:
    """`migrate_one_slot` in a thread of its own, begun when the run's third interval is in."""

    def __init__(self, cluster: ClusterProcess) -> None:
        self.cluster = cluster
        self.done = threading.Event()
        self.thread: threading.Thread | None = None

    def on_event(self, e: Any) -> None:
        if isinstance(e, Interval) and e.index == 2 and self.thread is None:
            self.thread = threading.Thread(target=migrate_one_slot, args=(self.cluster, self.done))
            self.thread.start()

    def check_done(self) -> None:
        assert self.thread is not None, "the run ended before the migration began"
        self.thread.join(timeout=30)
        assert self.done.is_set()


@pytest.mark.parametrize("strategy", ["native", "cluster"])
async def test_a_slot_migrated_mid_run_is_followed_and_counted(
    strategy: str, tmp_path: Path
) -> None:
    with start_cluster(3) as cluster:
        migration = Migration(cluster)
        events = await collect(
            [
                "target.system=redis",
                f"target.options.url={cluster.target_options['url']}",
                "target.options.cluster=true",
                f"strategy.name={strategy}",
                f"load.ops={OPS}",
                f"load.rate={RATE}",
                "load.workers=1",
                "load.concurrency=4",
                "workload.keys=8",  # every key is hit often: the moved slot is met at once
                "workload.prefill=true",
            ],
            Store(tmp_path / "runs.sqlite"),
            on_event=migration.on_event,
        )
        migration.check_done()
    (step,) = finished(events)
    completed_clean(step)
    assert step.stats.ops == OPS  # no op lost
    assert step.stats.ask > 0, "the slot was met while it migrated"
    assert step.stats.moved > 0, "the slot was met at its old node after it moved"


def test_a_replayed_key_redirected_mid_run_keeps_its_own_name(tmp_path: Path) -> None:
    # A trace's text keys, replayed by the native engine while a slot moves: an op sent
    # again after -MOVED or -ASK goes under the trace's key, never a made-up one.
    trace = tmp_path / "ops.twitter.csv"
    lines = []
    for second in range(6):  # 1,000 requests a second over 8 keys: 8 sets, then 8 gets
        for i in range(1000):
            op = "set" if (i // 8) % 2 == 0 else "get"
            lines.append(f"{second},k:{i % 8},3,100,1,{op},0")
    trace.write_text("\n".join(lines) + "\n")
    with start_cluster(3) as cluster:
        migration = Migration(cluster)
        events = asyncio.run(
            collect(
                [
                    "target.system=redis",
                    f"target.options.url={cluster.target_options['url']}",
                    "target.options.cluster=true",
                    "strategy.name=native",
                    f'workload.trace.path="{trace}"',
                    'workload.trace.ops="as-recorded"',
                    "workload.trace.speed=1",
                    "load.duration=60",
                    "load.interval=0.5",
                    "load.warmup=0",
                    "load.workers=1",
                    "load.concurrency=4",
                ],
                Store(tmp_path / "runs.sqlite"),
                on_event=migration.on_event,
            )
        )
        migration.check_done()
        names = set()
        for node in cluster.nodes:
            r = redis.Redis(port=node.port, socket_timeout=5)
            names |= {k.decode() for k in r.keys("*")}
            r.close()
    (step,) = finished(events)
    completed_clean(step)
    assert step.stats.moved + step.stats.ask > 0, "no op met the moved slot"
    # No key under another name (the trace's keys take the key prefix, wb:).
    assert names == {f"wb:k:{i}" for i in range(8)}, names
    s = step.stats
    counts = (s.hist["set"].get_total_count(), s.hist["get"].get_total_count())
    sets = sum(",set," in line for line in lines)
    assert counts == (sets, 6000 - sets), (counts, s.errors)  # every request, as its kind
