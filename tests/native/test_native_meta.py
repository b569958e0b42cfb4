"""memcached's meta protocol in the native engine (`strategy.options.protocol = "meta"`):
the conformance kit's round trips (0 B to 1 MiB), misses and TTL through the engine's own
meta codec, a run that loads it, and an unknown protocol refused by the binary."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from support import collect, finished

from workbench.conformance import check_plugin, failures
from workbench.engine.native import ProbeConnection
from workbench.results.store import Store
from workbench.sdk.discovery import load_plugin
from workbench.sdk.errors import TargetError
from workbench.sdk.servers import ServerProcess


@pytest.mark.memcached
def test_the_meta_protocol_passes_the_kit_round_trips_misses_and_ttl(
    memcached_server: ServerProcess,
) -> None:
    system = load_plugin("memcached")
    settings = {**memcached_server.target_options, "strategy.options.protocol": "meta"}
    results = check_plugin(system, "native", settings)
    assert not failures(results), "\n" + "\n".join(r.line() for r in results)
    passed = {r.name for r in results if r.status == "pass"}
    assert {"round-trip", "miss", "ttl"} <= passed, [r.line() for r in results]


@pytest.mark.memcached
async def test_the_binary_reads_the_protocol_and_refuses_an_unknown_one(
    memcached_server: ServerProcess,
) -> None:
    system = load_plugin("memcached")
    strategy = next(s for s in system.strategies if s.name == "native")
    opts = dict(memcached_server.target_options)
    conn = await ProbeConnection(system, strategy, opts, {"protocol": "meta"}).open()
    try:
        client = await conn.client()
        await client.set(b"meta:k", b"v" * 10, 30.0)
        assert await client.get(b"meta:k") == b"v" * 10
        assert await client.delete(b"meta:k") is True
        assert await client.get(b"meta:k") is None
    finally:
        await conn.close()
    # The order names the protocol (never the system): one the binary does not speak is
    # refused by name.
    unknown = replace(strategy, protocol="memcache-binary")
    with pytest.raises(TargetError, match='protocol "memcache-binary"'):
        await ProbeConnection(system, unknown, opts, {"protocol": "text"}).open()


@pytest.mark.memcached
async def test_a_run_over_the_meta_protocol_counts_every_operation(
    tmp_path: Path, memcached_server: ServerProcess
) -> None:
    events = await collect(
        [
            "target.system=memcached",
            f"target.options.servers={memcached_server.target_options['servers']}",
            "strategy.name=native",
            "strategy.options.protocol=meta",
            "strategy.options.pipeline=8",
            "workload.mix={get=0.6, set=0.3, delete=0.1}",
            "workload.ttl=60",
            "workload.prefill=true",
            "workload.keys=500",
            "load.ops=3000",
            "load.concurrency=4",
            "load.workers=1",
        ],
        Store(tmp_path / "runs.sqlite3"),
    )
    (done,) = finished(events)
    assert done.status == "completed"
    assert done.stats.ops == 3000 and done.stats.error_count == 0
    assert done.stats.hits > 0
