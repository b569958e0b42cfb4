"""The memcached plugin against real memcached servers on free loopback ports."""

from __future__ import annotations

import asyncio
import os
import random
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from support import collect, stopped
from workbench_memcached import plugin
from workbench_memcached.expiry import THIRTY_DAYS, exptime
from workbench_memcached.protocol import Rendezvous, parse_servers
from workbench_memcached.server import start_memcached

from workbench.engine.step_tally import step_failure
from workbench.results.events import Event, Interval, StepFinished, StepStarted
from workbench.results.store import Store
from workbench.sdk.adapter import AdapterError, Strategy, error_kind
from workbench.sdk.errors import TargetError
from workbench.sdk.servers import ServerProcess, free_port

# The Python strategies; the native one runs in the native engine (tests/native and the
# conformance kit check it).
STRATEGIES = [s.name for s in plugin.strategies if s.engine == "python"]
SIZES = [0, 1, 1024, 100 * 1024, 1024 * 1024]
POLL = 0.1


class Handle:
    """One virtual client of a strategy, called the same way whether blocking or not."""

    def __init__(self, strategy: Strategy, client: Any) -> None:
        self.blocking = strategy.blocking
        self.client = client

    async def call(self, name: str, *args: Any) -> Any:
        method = getattr(self.client, name)
        if self.blocking:
            return await asyncio.to_thread(method, *args)
        return await method(*args)

    async def get(self, key: bytes) -> bytes | None:
        result: bytes | None = await self.call("get", key)
        return result

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None = None) -> None:
        await self.call("set", key, value, ttl)

    async def delete(self, key: bytes) -> bool:
        result: bool = await self.call("delete", key)
        return result


class Opened:
    def __init__(self, strategy: Strategy, conn: Any) -> None:
        self.strategy = strategy
        self.conn = conn
        self.handles: list[Handle] = []

    async def client(self) -> Handle:
        handle = Handle(self.strategy, await self.conn.client())
        self.handles.append(handle)
        return handle

    async def close(self) -> None:
        for h in self.handles:
            await h.call("close")
        await self.conn.close()


async def open_strategy(
    name: str, servers: list[str], strategy_options: dict[str, Any] | None = None, **system: Any
) -> Opened:
    strategy = plugin.strategy(name)
    system_options = plugin.options.resolve({"servers": servers, **system}, "target.options")
    options = strategy.options.resolve(strategy_options or {}, "strategy.options")
    return Opened(strategy, await strategy.connect(system_options, options))


@pytest.fixture(params=STRATEGIES)
async def opened(
    request: pytest.FixtureRequest, memcached_server: ServerProcess
) -> AsyncIterator[Opened]:
    o = await open_strategy(request.param, memcached_server.target_options["servers"])
    yield o
    await o.close()


def unique(prefix: str) -> bytes:
    return f"test:{prefix}:{os.getpid()}:{random.getrandbits(48):012x}".encode()


async def poll_until(check: Callable[[], Any], seconds: float) -> bool:
    """True once `check()` is true, polled; False when `seconds` of polling went by."""
    for _ in range(int(seconds / POLL)):
        if await check():
            return True
        await asyncio.sleep(POLL)
    return bool(await check())


# Values, misses, deletes, TTLs


@pytest.mark.parametrize("size", SIZES)
async def test_values_round_trip_byte_for_byte(opened: Opened, size: int) -> None:
    client = await opened.client()
    key = unique(f"size{size}")
    value = os.urandom(size)
    await client.set(key, value)
    assert await client.get(key) == value
    # the engine hands out slices of one value buffer
    other = os.urandom(size + 16)
    await client.set(key, memoryview(other)[8 : 8 + size])
    got = await client.get(key)
    assert isinstance(got, bytes) and got == other[8 : 8 + size]


async def test_a_missing_key_is_none_and_delete_says_whether_it_was_there(opened: Opened) -> None:
    client = await opened.client()
    key = unique("delete")
    assert await client.get(key) is None
    assert await client.delete(key) is False
    await client.set(key, b"v")
    assert await client.delete(key) is True
    assert await client.get(key) is None
    assert await client.delete(key) is False


async def test_a_ttl_is_honoured(opened: Opened) -> None:
    client = await opened.client()
    short, long, far, fraction = (unique(n) for n in ("short", "long", "far", "fraction"))
    await client.set(short, b"gone soon", 1)
    await client.set(long, b"stays", 60)
    await client.set(fraction, b"rounded up, not to zero", 0.2)
    # Past 30 days memcached reads exptime as a unix time; a relative number would be 1970.
    await client.set(far, b"forty days", 40 * 24 * 3600)

    async def expired() -> bool:
        # 0.2 s became 1 s (0 would be never)
        return await client.get(short) is None and await client.get(fraction) is None

    assert await poll_until(expired, 6)
    assert await client.get(long) == b"stays"
    assert await client.get(far) == b"forty days"


def test_exptime_follows_memcached_rules() -> None:
    assert exptime(None) == 0
    assert exptime(0) == 0
    assert exptime(0.2) == 1
    assert exptime(2.5) == 3
    assert exptime(THIRTY_DAYS) == THIRTY_DAYS
    assert exptime(THIRTY_DAYS + 1) > 1_600_000_000
    assert exptime(-1) == -1


async def test_a_value_over_the_item_size_limit_is_a_server_error(opened: Opened) -> None:
    client = await opened.client()
    key = unique("big")
    with pytest.raises(AdapterError) as info:
        await client.set(key, b"x" * (3 * 1024 * 1024))  # the fixture's limit is 2 MiB
    assert error_kind(info.value) == "server"
    assert "too large" in str(info.value)
    # and the connection is still in step
    await client.set(key, b"small")
    assert await client.get(key) == b"small"


async def test_concurrent_clients_each_see_their_own_values(opened: Opened) -> None:
    count = 8 if opened.strategy.blocking else 64
    clients = [await opened.client() for _ in range(count)]

    async def work(i: int, client: Handle) -> None:
        key = unique(f"client{i}")
        for round_ in range(20):
            value = f"{i}:{round_}:".encode() * (1 + (i * 7 + round_) % 50)
            await client.set(key, value)
            assert await client.get(key) == value
        assert await client.delete(key) is True

    await asyncio.gather(*(work(i, c) for i, c in enumerate(clients)))


async def test_the_server_reports_its_figures_as_ints(opened: Opened) -> None:
    client = await opened.client()
    await client.set(unique("stats"), b"x" * 100)
    stats = await opened.conn.server_stats()
    for name in ("curr_items", "bytes", "evictions", "get_hits", "get_misses"):
        assert isinstance(stats[name], int)
    assert stats["curr_items"] >= 1
    assert stats["limit_maxbytes"] == 64 * 1024 * 1024
    assert stats["curr_connections"] >= 1


async def test_multiplexed_over_several_connections(memcached_server: ServerProcess) -> None:
    o = await open_strategy(
        "multiplexed", memcached_server.target_options["servers"], {"connections": 3}
    )
    try:
        clients = [await o.client() for _ in range(12)]
        keys = [unique(f"k{i}") for i in range(12)]
        await asyncio.gather(*(c.set(k, k * 3) for c, k in zip(clients, keys, strict=True)))
        got = await asyncio.gather(*(c.get(k) for c, k in zip(clients, keys, strict=True)))
        assert got == [k * 3 for k in keys]
        assert len({id(link.wire) for link in o.conn.links.all}) == 3
    finally:
        await o.close()


async def test_pooled_with_a_small_pool_makes_threads_wait(
    memcached_server: ServerProcess,
) -> None:
    o = await open_strategy("pooled", memcached_server.target_options["servers"], {"pool_size": 2})
    try:
        clients = [await o.client() for _ in range(8)]
        keys = [unique(f"p{i}") for i in range(8)]
        await asyncio.gather(*(c.set(k, k) for c, k in zip(clients, keys, strict=True)))
        assert await asyncio.gather(*(c.get(k) for c, k in zip(clients, keys, strict=True))) == keys
    finally:
        await o.close()


# Several servers, loopback only, unreachable servers


async def test_several_servers_share_the_keys_the_same_way_in_every_strategy(
    memcached_server: ServerProcess,
) -> None:
    with start_memcached(memory_mb=16, threads=1) as second:
        servers = [memcached_server.address, second.address]
        keys = [unique(f"h{i}") for i in range(200)]
        writer = await open_strategy("multiplexed", servers)
        try:
            w = await writer.client()
            await asyncio.gather(*(w.set(k, k[::-1]) for k in keys))
            for name in ("client-per-client", "pooled"):
                reader = await open_strategy(name, servers)
                try:
                    r = await reader.client()
                    assert [await r.get(k) for k in keys] == [k[::-1] for k in keys]
                finally:
                    await reader.close()
            # each server holds its share, and only it: the second one alone has fewer keys
            alone = await open_strategy("multiplexed", [second.address])
            try:
                a = await alone.client()
                on_second = sum([await a.get(k) is not None for k in keys])
            finally:
                await alone.close()
            assert 40 < on_second < 160
            hasher = Rendezvous(servers)
            assert on_second == sum(hasher.index(k) == 1 for k in keys)
        finally:
            await writer.close()


@pytest.mark.parametrize(
    "server", ["10.1.2.3:11211", "192.168.0.1", "example.com:11211", "0.0.0.0:11211"]
)
def test_only_loopback_servers_are_allowed(server: str) -> None:
    with pytest.raises(TargetError) as info:
        parse_servers(["127.0.0.1:11211", server])
    assert info.value.where == "target.options.servers"
    assert "loopback" in info.value.message


def test_server_addresses_are_parsed() -> None:
    assert parse_servers(["127.0.0.1:1234", "localhost", "[::1]:99"]) == [
        ("127.0.0.1", 1234),
        ("localhost", 11211),
        ("::1", 99),
    ]
    with pytest.raises(TargetError):
        parse_servers(["127.0.0.1:http"])
    with pytest.raises(TargetError):
        parse_servers([])


@pytest.mark.parametrize("name", STRATEGIES)
async def test_a_server_that_is_not_there_is_one_clear_error(name: str) -> None:
    with pytest.raises(TargetError) as info:
        await open_strategy(name, [f"127.0.0.1:{free_port()}"])
    assert info.value.where == "target.options.servers"
    assert "cannot" in info.value.message


@pytest.mark.parametrize("name", STRATEGIES)
async def test_a_lost_connection_is_an_error_and_the_next_operation_reconnects(
    name: str,
) -> None:
    server = start_memcached(memory_mb=16, threads=1)
    port = server.port
    o = await open_strategy(name, [server.address], timeout=2)
    try:
        client = await o.client()
        key = unique("lost")
        await client.set(key, b"before")
        server.stop()
        with pytest.raises(Exception) as info:
            await client.get(key)
        assert error_kind(info.value) == "connection"
        with pytest.raises(Exception) as info:
            await client.set(key, b"while down")
        assert error_kind(info.value) == "connection"
        server = start_memcached(port=port, memory_mb=16, threads=1)

        async def back() -> bool:
            try:
                await client.set(key, b"after")
            except Exception:
                return False
            return True

        assert await poll_until(back, 5)
        assert await client.get(key) == b"after"
    finally:
        await o.close()
        server.stop()


@pytest.mark.parametrize("name", STRATEGIES)
async def test_a_silent_server_times_out_and_the_client_goes_on(name: str) -> None:
    """A server stopped with SIGSTOP answers nothing: a timeout, then recovery."""
    server = start_memcached(memory_mb=16, threads=1)
    o = await open_strategy(name, [server.address], timeout=0.5)
    try:
        client = await o.client()
        key = unique("silent")
        await client.set(key, b"v")
        stopped(server.pid)
        try:
            with pytest.raises(Exception) as info:
                await client.get(key)
            assert error_kind(info.value) == "timeout"
        finally:
            os.kill(server.pid, signal.SIGCONT)
        assert await client.get(key) == b"v"
    finally:
        await o.close()
        server.stop()


# Through the engine


def target(server: ServerProcess) -> list[str]:
    return ["target.system=memcached", f'target.options.servers=["{server.address}"]']


@pytest.fixture
def store(store_path: Path) -> Store:
    return Store(store_path)


@pytest.mark.parametrize("name", STRATEGIES)
async def test_an_experiment_counts_every_operation(
    store: Store, memcached_server: ServerProcess, name: str
) -> None:
    events = await collect(
        [
            *target(memcached_server),
            f"strategy.name={name}",
            "load.ops=3000",
            "load.concurrency=8",
            "load.workers=2",
            "workload.mix={get=2, set=1, delete=1}",
            "workload.keys=300",
            f'workload.key_prefix="e2e:{name}:{os.getpid()}:"',
            "workload.key_length=30",
            'workload.value_size="uniform(10,2000)"',
        ],
        store,
    )
    (step,) = [e for e in events if isinstance(e, StepFinished)]
    s = step.stats
    assert step.status == "completed"
    assert s.errors == {}
    assert s.ops == 3000
    gets = s.hist["get"].get_total_count()
    assert s.hits + s.misses == gets
    assert 0 < s.hits < gets
    assert s.server["limit_maxbytes"] == 64 * 1024 * 1024
    assert store.load(events[0].run_id).steps[0].stats.ops == 3000  # type: ignore[attr-defined]


async def test_a_managed_server_is_started_reported_and_stopped(store: Store) -> None:
    events = await collect(
        [
            "target.system=memcached",
            "target.managed=true",
            'target.server={memory_mb=32, max_item_size="1m", threads=2}',
            "load.ops=2000",
            "load.concurrency=4",
            "load.workers=1",
            "workload.prefill=true",
            "workload.keys=200",
        ],
        store,
    )
    (started,) = [e for e in events if isinstance(e, StepStarted)]
    (step,) = [e for e in events if isinstance(e, StepFinished)]
    assert "memcached" in started.server["version"]
    assert started.server["servers"].startswith("['127.0.0.1:")
    assert step.status == "completed" and step.stats.errors == {}
    server = step.stats.server
    assert server["peak_rss_bytes"] > 0 and server["rss_bytes"] > 0
    assert server["limit_maxbytes"] == 32 * 1024 * 1024
    assert server["curr_items"] == 200
    pid = started.server["pid"]
    assert not Path(f"/proc/{pid}").exists() or _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("name", STRATEGIES)
async def test_a_server_stopped_mid_run_is_counted_and_the_run_kept(
    store: Store, name: str
) -> None:
    server = start_memcached(memory_mb=16, threads=1)
    try:

        def on_event(e: Event) -> None:
            if isinstance(e, Interval) and e.index == 1:
                server.stop()

        events = await collect(
            [
                *target(server),
                f"strategy.name={name}",
                "target.options.timeout=1",
                "load.duration=2",
                "load.concurrency=4",
                "load.workers=1",
            ],
            store,
            on_event=on_event,
        )
    finally:
        server.stop()
    (step,) = [e for e in events if isinstance(e, StepFinished)]
    s = step.stats
    # Kept either way; failed only by its errors' share: refused connections fail fast, and
    # on a loaded machine they can outnumber the ops answered before the stop.
    assert step.status == "completed" or (
        step.status == "failed" and "operations failed" in step.reason and step_failure(s)
    ), (step.status, step.reason)
    assert s.ops > 0
    assert s.error_count > 0
    # An op sent in the step's last second waits out its 1 s timeout past the step's end:
    # abandoned, as any op still in flight then.
    assert set(s.errors) <= {"connection", "timeout", "abandoned"}
    stored = store.load(events[0].run_id)  # type: ignore[attr-defined]
    assert stored.steps[0].stats.error_count == s.error_count
    assert stored.steps[0].stats.ops == s.ops
