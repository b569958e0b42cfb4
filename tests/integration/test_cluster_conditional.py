"""A trace's conditional writes against a real Redis Cluster whose every key of the trace
is redirected: each key's slot set MIGRATING on its node and IMPORTING on the next (as
`redis-cli --cluster reshard` does), and no key ever on its old node, so every request
(gets, cas, the scripts) gets -ASK and is sent again on the importing node. A cas keeps the
token its gets brought through the redirection, in both engines (the native engine and
the ``cluster`` strategy): the hits and each op's outcome counts equal the dictionary
model's exactly. The importing nodes have never run a script: the native engine loads them
on each connection first, the cluster strategy sends the first of each again by EVAL after
NOSCRIPT; every other goes by EVALSHA."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import redis
from support import collect, completed_clean, finished
from test_trace_every_op import NATIVE, PREFIX, SEED, build_trace, expected
from workbench_redis.cluster import ClusterProcess, start_cluster

from workbench.results.store import Store

pytestmark = pytest.mark.skipif(shutil.which("redis-cli") is None, reason="needs redis-cli")

REQUESTS = 600
ENGINES = {
    "native": ['strategy.name="native"', "strategy.options.pipeline=4"],
    "cluster": ['strategy.name="cluster"'],
}


def migrate_slots_of(keys: set[str], cluster: ClusterProcess) -> list[redis.Redis]:
    """Each key's slot MIGRATING from its node to the next, IMPORTING there: the nodes the
    keys' requests are redirected to (-ASK), none of the keys on any node yet."""
    nodes = [redis.Redis(port=n.port, socket_timeout=5) for n in cluster.nodes]
    ids = [r.execute_command("CLUSTER", "MYID").decode() for r in nodes]
    owner = {}
    for start, end, (_, port, *_rest), *_replicas in nodes[0].execute_command("CLUSTER", "SLOTS"):
        index = [n.port for n in cluster.nodes].index(int(port))
        owner |= {slot: index for slot in range(start, end + 1)}
    importing = []
    slots = {int(nodes[0].execute_command("CLUSTER", "KEYSLOT", PREFIX + k)) for k in keys}
    for slot in sorted(slots):
        src = owner[slot]
        dst = (src + 1) % len(nodes)
        nodes[dst].execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[src])
        nodes[src].execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[dst])
        importing.append(nodes[dst])
    assert len({id(r) for r in importing}) > 1  # the keys spread over more than one node
    return nodes


@pytest.mark.parametrize("engine", [pytest.param("native", marks=NATIVE), pytest.param("cluster")])
async def test_a_cas_keeps_its_token_through_a_redirection(tmp_path: Path, engine: str) -> None:
    trace = tmp_path / "every-op.twitter.csv"
    rows = build_trace(trace, REQUESTS)
    model = expected(rows, "redis")
    with start_cluster(3) as cluster:
        nodes = migrate_slots_of({key for key, *_ in rows}, cluster)
        events = await collect(
            [
                "target.system=redis",
                f"target.options.url={cluster.target_options['url']}",
                "target.options.cluster=true",
                *ENGINES[engine],
                f'workload.trace.path="{trace}"',
                'workload.trace.ops="as-recorded"',
                f'workload.key_prefix="{PREFIX}"',
                f"seed={SEED}",
                "load.workers=1",
                "load.concurrency=6",
                "load.duration=60",
            ],
            Store(tmp_path / "runs.sqlite"),
        )
        held = {n.port: redis.Redis(port=n.port).dbsize() for n in cluster.nodes}
        evals = [r.info("commandstats") for r in nodes]
        for r in nodes:
            r.close()
    (step,) = finished(events)
    completed_clean(step)
    s = step.stats
    assert s.ask >= REQUESTS, "every request was redirected"
    assert (s.hits, s.misses) == (model.hits, model.misses)
    assert s.outcomes == {op: dict(c) for op, c in model.outcomes.items()}
    assert model.outcomes["cas"]["stored"] > 0  # a cas with its gets' token, redirected
    assert sum(held.values()) == len(model.values)
    # The scripts went by EVALSHA; EVAL only for a script a node did not hold yet.
    sha = sum(c.get("cmdstat_evalsha", {}).get("calls", 0) for c in evals)
    full = sum(c.get("cmdstat_eval", {}).get("calls", 0) for c in evals)
    assert sha > 5 * full, (sha, full)
