"""The Redis adapter against a real redis-server: every strategy, byte for byte."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support import collect, finished
from workbench_redis.server import start_redis

from workbench.results.events import Interval, StepStarted
from workbench.results.store import Store
from workbench.sdk.adapter import error_kind
from workbench.sdk.discovery import load_plugin
from workbench.sdk.errors import TargetError
from workbench.sdk.servers import ServerProcess

STRATEGIES = [
    "multiplexed",
    "multiplexed-k",
    "async-pool",
    "pipeline",
    "sync-per-client",
    "sync-pool",
]
ASYNC = ["multiplexed", "multiplexed-k", "async-pool", "pipeline"]


class Handle:
    """One strategy's connection and a way to call its clients from a test."""

    def __init__(self, strategy: Any, conn: Any) -> None:
        self.strategy = strategy
        self.conn = conn

    async def call(self, client: Any, method: str, *args: Any) -> Any:
        fn = getattr(client, method)
        if self.strategy.blocking:
            return await asyncio.to_thread(fn, *args)
        return await fn(*args)


async def connect(name: str, options: dict[str, Any], **strategy_opts: Any) -> Handle:
    system = load_plugin("redis")
    strategy = system.strategy(name)
    conn = await strategy.connect(
        system.options.resolve(options, "target.options"),
        strategy.options.resolve(strategy_opts, "strategy.options"),
    )
    return Handle(strategy, conn)


@pytest.fixture
async def handle(
    request: pytest.FixtureRequest, redis_server: ServerProcess
) -> AsyncIterator[Handle]:
    h = await connect(request.param, redis_server.target_options)
    yield h
    await h.conn.close()


@pytest.mark.parametrize("handle", STRATEGIES, indirect=True)
async def test_values_round_trip_byte_for_byte(handle: Handle) -> None:
    c = await handle.conn.client()
    for size in (0, 1, 1024, 100 * 1024, 1024 * 1024):
        key = f"rt:{handle.strategy.name}:{size}".encode()
        value = os.urandom(size)
        await handle.call(c, "set", key, memoryview(value), None)
        assert await handle.call(c, "get", key) == value
        assert await handle.call(c, "delete", key) is True
        assert await handle.call(c, "get", key) is None
        assert await handle.call(c, "delete", key) is False


@pytest.mark.parametrize("handle", STRATEGIES, indirect=True)
async def test_a_ttl_expires_the_key(handle: Handle) -> None:
    c = await handle.conn.client()
    key = f"ttl:{handle.strategy.name}".encode()
    await handle.call(c, "set", key, b"v", 0.2)
    assert await handle.call(c, "get", key) == b"v"
    for _ in range(100):  # bounded: gives Redis up to 5 s to expire it
        if await handle.call(c, "get", key) is None:
            break
        await asyncio.sleep(0.05)
    assert await handle.call(c, "get", key) is None


@pytest.mark.parametrize("handle", STRATEGIES, indirect=True)
async def test_many_concurrent_clients_each_see_their_own_values(handle: Handle) -> None:
    clients = [await handle.conn.client() for _ in range(24)]

    async def one(i: int, c: Any) -> None:
        for j in range(20):
            key = f"cc:{handle.strategy.name}:{i}:{j}".encode()
            value = f"{i}-{j}".encode() * (i + 1)
            await handle.call(c, "set", key, value, None)
            assert await handle.call(c, "get", key) == value

    await asyncio.gather(*(one(i, c) for i, c in enumerate(clients)))


@pytest.mark.parametrize("handle", ASYNC, indirect=True)
async def test_pubsub_delivers_in_order_once_subscribed(handle: Handle) -> None:
    c = await handle.conn.client()
    channel = f"ch:{handle.strategy.name}".encode()
    messages = await c.subscribe([channel])
    for i in range(50):
        await c.publish(channel, b"m%d" % i)
    got = [await asyncio.wait_for(anext(messages), 5) for _ in range(50)]
    assert got == [b"m%d" % i for i in range(50)]
    await messages.aclose()


@pytest.mark.parametrize("handle", ["multiplexed", "async-pool", "sync-pool"], indirect=True)
async def test_a_server_error_is_named_and_the_connection_survives(
    handle: Handle, redis_server: ServerProcess
) -> None:
    c = await handle.conn.client()
    key = f"list:{handle.strategy.name}".encode()
    other = await connect("multiplexed", redis_server.target_options)
    await other.conn.mux.call(b"*3\r\n$5\r\nLPUSH\r\n$%d\r\n%s\r\n$1\r\nx\r\n" % (len(key), key))
    await other.conn.close()
    with pytest.raises(Exception) as caught:
        await handle.call(c, "get", key)  # WRONGTYPE: a list is not a string
    assert error_kind(caught.value) == "server"
    assert "WRONGTYPE" in str(caught.value)
    await handle.call(c, "set", key + b":ok", b"1", None)
    assert await handle.call(c, "get", key + b":ok") == b"1"


async def test_server_statistics_come_from_info(redis_server: ServerProcess) -> None:
    h = await connect("multiplexed", redis_server.target_options)
    stats = await h.conn.server_stats()
    await h.conn.close()
    assert stats["used_memory"] > 0
    assert stats["connected_clients"] >= 1
    assert {"keyspace_hits", "keyspace_misses", "evicted_keys", "keys"} <= set(stats)


def test_only_loopback_targets_are_accepted() -> None:
    with pytest.raises(TargetError) as caught:
        asyncio.run(connect("multiplexed", {"url": "redis://10.1.2.3:6379/0"}))
    assert caught.value.where == "target.options.url"
    with pytest.raises(TargetError, match="password"):
        asyncio.run(connect("multiplexed", {"url": "redis://:secret@127.0.0.1:6379/0"}))


async def test_the_password_comes_from_the_environment_and_is_never_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cret-for-the-test"
    with start_redis(extra=("--requirepass", secret)) as server:
        url = server.target_options["url"]
        with pytest.raises(Exception, match=r"NOAUTH|Authentication"):
            h = await connect("multiplexed", {"url": url})
            c = await h.conn.client()
            await c.get(b"x")
        monkeypatch.setenv("WB_TEST_REDIS_PASSWORD", secret)
        store = Store(tmp_path / "runs.sqlite")
        events = await collect(
            [
                "target.system=redis",
                f"target.options.url={url}",
                "target.options.password_env=WB_TEST_REDIS_PASSWORD",
                "load.ops=500",
                "load.workers=1",
            ],
            store,
        )
    (step,) = finished(events)
    assert step.status == "completed" and step.stats.error_count == 0
    assert secret not in (tmp_path / "runs.sqlite").read_bytes().decode("latin-1")


@pytest.mark.parametrize("strategy", STRATEGIES)
async def test_an_experiment_counts_every_op_once(
    strategy: str, redis_server: ServerProcess, tmp_path: Path
) -> None:
    events = await collect(
        [
            "target.system=redis",
            f"target.options.url={redis_server.target_options['url']}",
            f"strategy.name={strategy}",
            "load.ops=3000",
            "load.concurrency=12",
            "load.workers=2",
            "load.warmup_ops=300",
            "workload.mix={get=4, set=1, delete=1}",
            "workload.keys=200",
            "workload.prefill=true",
        ],
        Store(tmp_path / "runs.sqlite"),
    )
    (step,) = finished(events)
    s = step.stats
    assert step.status == "completed"
    assert s.error_count == 0, s.first_errors
    assert s.ops == 3000
    assert s.hits + s.misses == s.hist["get"].get_total_count()
    assert s.hits > 0
    started = next(e for e in events if isinstance(e, StepStarted))
    assert started.spec["strategy"]["name"] == strategy


async def test_blocking_clients_each_get_their_own_thread(
    redis_server: ServerProcess, tmp_path: Path
) -> None:
    seen: list[int] = []

    def on_event(e: Any) -> None:
        if isinstance(e, Interval) and e.stats.server:
            seen.append(e.stats.server.get("connected_clients", 0))

    await collect(
        [
            "target.system=redis",
            f"target.options.url={redis_server.target_options['url']}",
            "strategy.name=sync-per-client",
            "load.duration=1",
            "load.concurrency=20",
            "load.workers=1",
        ],
        Store(tmp_path / "runs.sqlite"),
        on_event=on_event,
    )
    assert max(seen) >= 20  # twenty connections open at once, not a thread pool's worth


async def test_a_managed_server_reports_its_version_and_memory(tmp_path: Path) -> None:
    events = await collect(
        [
            "target.system=redis",
            "target.managed=true",
            "target.server.maxmemory=64MiB",
            "load.ops=2000",
            "load.workers=1",
        ],
        Store(tmp_path / "runs.sqlite"),
    )
    started = next(e for e in events if isinstance(e, StepStarted))
    assert started.server["version"].startswith("redis ")
    pid = started.server["pid"]
    (step,) = finished(events)
    assert step.status == "completed"
    assert step.stats.server["rss_bytes"] > 0
    assert step.stats.server["maxmemory"] == 64 * 1024 * 1024
    assert not Path(f"/proc/{pid}").exists()  # stopped with the step


@pytest.mark.parametrize("strategy", ["multiplexed", "async-pool", "sync-per-client"])
async def test_a_server_that_dies_mid_run_is_counted_as_errors_and_the_run_is_kept(
    strategy: str, tmp_path: Path
) -> None:
    server = start_redis()
    killed = []

    def on_event(e: Any) -> None:
        if isinstance(e, Interval) and e.index == 1 and not killed:
            killed.append(True)
            server.stop()

    store = Store(tmp_path / "runs.sqlite")
    try:
        events = await collect(
            [
                "target.system=redis",
                f"target.options.url={server.target_options['url']}",
                "target.options.connect_timeout=0.5",
                "target.options.timeout=0.5",
                f"strategy.name={strategy}",
                "load.duration=2",
                "load.concurrency=8",
                "load.workers=1",
            ],
            store,
            on_event=on_event,
        )
    finally:
        server.stop()
    (step,) = finished(events)
    assert step.stats.ops > 0
    assert set(step.stats.errors) <= {"connection", "timeout"}
    assert sum(step.stats.errors.values()) > 0
    stored = store.load("last")
    assert stored.steps[0].stats.ops == step.stats.ops


async def test_pubsub_through_the_engine_delivers_every_measured_message(
    redis_server: ServerProcess, tmp_path: Path
) -> None:
    events = await collect(
        [
            "target.system=redis",
            f"target.options.url={redis_server.target_options['url']}",
            "workload.mix={publish=1}",
            "workload.pubsub.channels=2",
            "workload.pubsub.subscribers_per_channel=2",
            "load.duration=0.6",
            "load.warmup=0.3",  # publishes of the warm-up reach subscribers late: not counted
            "load.concurrency=6",
            "load.workers=2",
        ],
        Store(tmp_path / "runs.sqlite"),
    )
    (step,) = finished(events)
    s = step.stats
    assert s.published > 0
    assert s.expected_deliveries == s.published * 2
    assert s.delivered == s.expected_deliveries
    # The step's deliveries are the sum of its intervals' (the late ones land in the last).
    assert sum(e.stats.delivered for e in events if isinstance(e, Interval)) == s.delivered


async def test_a_failed_step_does_not_end_the_sweep(
    redis_server: ServerProcess, tmp_path: Path
) -> None:
    from workbench.sdk.servers import free_port

    nobody = f"redis://127.0.0.1:{free_port()}/0"
    events = await collect(
        [
            "target.system=redis",
            "target.options.connect_timeout=0.5",
            f'sweep=[{{path = "target.options.url", values = ["{nobody}", '
            f'"{redis_server.target_options["url"]}"], labels = ["nobody", "redis"]}}]',
            "load.ops=300",
            "load.workers=1",
        ],
        Store(tmp_path / "runs.sqlite"),
    )
    first, second = finished(events)
    assert first.status == "failed"
    assert second.status == "completed" and second.stats.ops == 300
    assert events[-1].status == "failed"  # type: ignore[attr-defined]


async def test_a_managed_server_can_be_a_given_binary(tmp_path: Path) -> None:
    import shutil

    from workbench.results.events import Notice

    store = Store(tmp_path / "runs.sqlite")
    given = shutil.which("redis-server")
    events = await collect(
        [
            "target.system=redis",
            "target.managed=true",
            "sweep=[{path = 'target.server.binary', "
            f"values = ['{given}', '/nonexistent/redis']}}]",
            "load.ops=200",
            "load.workers=1",
        ],
        store,
    )
    ok, missing = finished(events)
    assert ok.status == "completed" and ok.stats.ops == 200
    assert missing.status == "failed"
    notice = next(e for e in events if isinstance(e, Notice) and e.step == 1)
    assert "/nonexistent/redis" in notice.message and "not an executable" in notice.message
