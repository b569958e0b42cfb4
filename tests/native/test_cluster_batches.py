"""A pipelined closed loop over a Redis Cluster writes to each node in whole batches, as
redis-benchmark --cluster -P does: a node connection's next ops go out once all of its
replies are in, never as a top-up onto a batch still in flight. So each request segment
the engine sends gets a reply segment of its own. With top-ups the engine sent 20% more
segments than the nodes answered (a node read two of them at once, and sent a pure ACK
for it), and the nodes spent 1.3-1.5x the CPU per op they spend on redis-benchmark's."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from native_workers import run_worker, spec, status
from workbench_redis.cluster import ClusterProcess, start_cluster

pytestmark = pytest.mark.skipif(
    shutil.which("redis-cli") is None or shutil.which("ss") is None,
    reason="needs redis-cli and ss (iproute2)",
)

CLIENTS = 4
PIPELINE = 16
SEEN = 400  # request segments on every node's connections before the counts are taken


@pytest.fixture
def cluster() -> Iterator[ClusterProcess]:
    with start_cluster(3) as c:
        yield c


def segments(port: int) -> tuple[int, int, int]:
    """(connections, data segments the clients sent, data segments the node sent) over the
    established connections to a node, from one `ss -ti` listing of both ends."""
    out = subprocess.run(
        ["ss", "-tinH", "state", "established", f"( sport = :{port} or dport = :{port} )"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    sent = {True: 0, False: 0}  # by "this end is the node"
    conns = 0
    # Each socket is a line of addresses and a line of counters.
    for head, info in zip(out.splitlines()[0::2], out.splitlines()[1::2], strict=False):
        local = head.split()[2]  # Recv-Q Send-Q Local Peer
        node_end = local.rsplit(":", 1)[1] == str(port)
        m = re.search(r"\bdata_segs_out:(\d+)", info)
        sent[node_end] += int(m.group(1)) if m else 0
        conns += node_end
    return conns, sent[False], sent[True]


def test_a_closed_loop_writes_each_node_whole_batches(cluster: ClusterProcess) -> None:
    s = spec(
        **{
            "target.system": "redis",
            "target.options": {"url": cluster.target_options["url"], "cluster": True},
            "strategy.name": "native",
            "strategy.options": {"pipeline": PIPELINE},
            "load.concurrency": CLIENTS,
            "load.warmup": 0.0,
            "load.duration": 3.0,
            "load.interval": 1.0,
            "workload.mix": {"get": 1.0},
            "workload.prefill": False,
        }
    )
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.setdefault("frames", run_worker("native", s)))
    worker.start()
    counts: list[tuple[int, int, int]] = []
    # Counted mid-run, once every node has answered enough batches (bounded by the run).
    while worker.is_alive():
        counts = [segments(n.port) for n in cluster.nodes]
        if all(conns == CLIENTS and asked >= SEEN for conns, asked, _ in counts):
            break
    worker.join()
    assert status(box["frames"]) == "completed"
    assert all(conns == CLIENTS and asked >= SEEN for conns, asked, _ in counts), counts
    for conns, asked, answered in counts:
        # Each request segment answered alone: at most one batch a connection in flight,
        # give or take those that moved while the listing went through the sockets (a
        # few; top-ups made 16-20% more requests than replies).
        assert abs(asked - answered) <= max(2 * conns, asked // 20), counts
