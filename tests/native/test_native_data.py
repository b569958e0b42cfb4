"""The native strategies against real redis-server and memcached: values byte for byte,
misses, TTLs, pipeline depths and cache-aside, each checked through another client."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import redis
from native_workers import intervals, run_worker, spec, status, total
from pymemcache.client.base import Client as Memcache

from workbench.sdk.servers import ServerProcess
from workbench.workload.generator import ValueBuffer
from workbench.workload.keys import format_key


def _target(system: str, server: ServerProcess) -> dict[str, Any]:
    if system == "redis":
        return {"url": server.target_options["url"]}
    return {"servers": server.target_options["servers"]}


def _native(system: str, server: ServerProcess, **more: Any) -> Any:
    return spec(
        **{
            "target.system": system,
            "target.options": _target(system, server),
            "strategy.name": "native",
            "load.concurrency": 2,
            "load.warmup": 0.0,
            "load.duration": None,
            "load.interval": 5.0,
            "workload.key_prefix": f"n{uuid.uuid4().hex[:8]}:",
            "workload.key_length": 20,
            **more,
        }
    )


def _reader(system: str, server: ServerProcess) -> Any:
    if system == "redis":
        return redis.Redis.from_url(server.target_options["url"])
    host, _, port = server.target_options["servers"][0].rpartition(":")
    return Memcache((host, int(port)))


SYSTEMS = [
    pytest.param("redis", "redis_server", marks=pytest.mark.redis, id="redis"),
    pytest.param("memcached", "memcached_server", marks=pytest.mark.memcached, id="memcached"),
]


@pytest.mark.parametrize(("system", "fixture"), SYSTEMS)
@pytest.mark.parametrize("size", [0, 1, 100, 65_536, 1024 * 1024 - 1024])
def test_values_round_trip_byte_for_byte(
    system: str, fixture: str, size: int, request: pytest.FixtureRequest
) -> None:
    server = request.getfixturevalue(fixture)
    keys = 8 if size > 100_000 else 64
    s = _native(
        system,
        server,
        **{
            "workload.keys": keys,
            "workload.prefill": True,
            "workload.value_size": f"fixed({size})",
            "workload.mix": {"get": 1.0},
            "load.ops": 200,
            "seed": 11,
        },
    )
    frames = run_worker("native", s)
    assert status(frames) == "completed"
    got = total(frames)
    # The prefill wrote the Python engine's very values; the native gets read them whole.
    assert got.error_count == 0 and got.misses == 0
    assert got.hits == 200 and got.bytes_in == 200 * size
    values = ValueBuffer(size, 11)
    reader = _reader(system, server)
    for i in range(keys):
        key = format_key(s.workload.key_prefix, i, s.workload.key_length)
        assert reader.get(key) == bytes(values.value(i, size)), (key, size)


@pytest.mark.parametrize(("system", "fixture"), SYSTEMS)
def test_keys_never_set_are_misses(
    system: str, fixture: str, request: pytest.FixtureRequest
) -> None:
    server = request.getfixturevalue(fixture)
    frames = run_worker(
        "native", _native(system, server, **{"workload.mix": {"get": 1.0}, "load.ops": 500})
    )
    got = total(frames)
    assert (got.hits, got.misses, got.bytes_in, got.error_count) == (0, 500, 0, 0)


@pytest.mark.parametrize(("system", "fixture"), SYSTEMS)
def test_ttl_expires_keys(system: str, fixture: str, request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue(fixture)
    s = _native(
        system,
        server,
        **{
            "workload.mix": {"set": 1.0},
            "workload.keys": 20,
            "workload.key_distribution": "sequential",
            "workload.ttl": "fixed(1)",
            "load.ops": 200,
        },
    )
    assert status(run_worker("native", s)) == "completed"
    reader = _reader(system, server)
    keys = [format_key(s.workload.key_prefix, i, s.workload.key_length) for i in range(20)]
    assert all(reader.get(k) is not None for k in keys)
    if system == "redis":
        assert all(0 < reader.pttl(k) <= 1000 for k in keys)
    time.sleep(2.2)  # memcached's clock ticks in whole seconds
    assert all(reader.get(k) is None for k in keys)


@pytest.mark.parametrize(("system", "fixture"), SYSTEMS)
@pytest.mark.parametrize("depth", [1, 16, 128])
def test_pipeline_depths(
    system: str, fixture: str, depth: int, request: pytest.FixtureRequest
) -> None:
    server = request.getfixturevalue(fixture)
    s = _native(
        system,
        server,
        **{
            "strategy.options": {"pipeline": depth},
            "workload.mix": {"get": 0.5, "set": 0.4, "delete": 0.1},
            "workload.keys": 300,
            "load.ops": 20_000,
        },
    )
    frames = run_worker("native", s)
    got = total(frames)
    assert status(frames) == "completed"
    assert got.ops == 20_000 and got.error_count == 0
    assert got.hits > 0 and got.misses > 0


def _hit_rate(frames: list[dict[str, Any]]) -> float:
    got = total(frames)
    return got.hits / (got.hits + got.misses)


@pytest.mark.parametrize(("system", "fixture"), SYSTEMS)
def test_cache_aside_hit_rate_equals_the_python_engines(
    system: str, fixture: str, request: pytest.FixtureRequest
) -> None:
    server = request.getfixturevalue(fixture)
    common = {
        "workload.mix": {"cache_aside": 1.0},
        "workload.keys": 2000,
        "workload.key_distribution": "zipf(0.9)",
        "load.ops": 20_000,
        "load.concurrency": 4,
        "seed": 5,
        # One interval however long the 20,000 ops take: 5 s was passed on a loaded machine.
        "load.interval": 120.0,
    }
    native = run_worker("native", _native(system, server, **common))
    python = run_worker(
        "python", _native(system, server, **common, **{"strategy.name": "multiplexed"})
    )
    n, p = total(native), total(python)
    # Every miss is filled: sets equal misses, in both engines, also for the gets still in
    # flight when another client took the budget's last op.
    assert n.hist["set"].get_total_count() == n.misses
    assert p.hist["set"].get_total_count() == p.misses
    # Concurrent clients filling the same missed key make the rate depend a little on
    # timing, in either engine.
    assert _hit_rate(native) == pytest.approx(_hit_rate(python), abs=0.03)
    assert len(intervals(native)) == len(intervals(python)) == 1


@pytest.mark.parametrize(("system", "fixture"), SYSTEMS)
def test_a_pipeline_of_cache_aside_misses_fills_them_and_goes_on(
    system: str, fixture: str, request: pytest.FixtureRequest
) -> None:
    # A cold cache: every get of a full pipeline misses and queues its set. Those sets
    # must go out although more than half the pipeline is still taken (a closed loop
    # refills at half free): held back with the refill, they were never written, and the
    # step ended with 32 ops, each "abandoned".
    server = request.getfixturevalue(fixture)
    s = _native(
        system,
        server,
        **{
            "strategy.options": {"pipeline": 16},
            "workload.mix": {"cache_aside": 1.0},
            "workload.keys": 100_000,
            "load.ops": 20_000,
        },
    )
    frames = run_worker("native", s, timeout=60)
    got = total(frames)
    assert status(frames) == "completed"
    assert got.ops == 20_000 + got.misses and got.error_count == 0, got.errors
    assert got.misses > 10_000  # mostly cold: most gets missed and were filled
    assert got.hist["set"].get_total_count() == got.misses
