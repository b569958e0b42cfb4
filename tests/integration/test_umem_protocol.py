"""The umem plugin's client against a real umem-cache built from the vendored source."""

from __future__ import annotations

import asyncio
import os
import random
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator

import pytest
from umem_support import MiB, connect, start
from workbench_umem import UmemConnection
from workbench_umem.protocol import parse_address, thread_of

from workbench.sdk.adapter import AdapterError, error_kind
from workbench.sdk.errors import TargetError
from workbench.sdk.servers import ServerProcess

SIZES = [0, 1, 100, 1024, 64 * 1024, 100 * 1024, MiB]
# MurmurHash3_x64_128(key, seed 74), first 64 bits, from umem-cache's own murmur_hash3.c.
C_HASHES = {b"abc": 9122440446736978998, b"wb:key:000000000001": 13668461428672860745}


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with start(memory=64 * MiB, threads=2) as s:
        yield s


@pytest.fixture
async def conn(server: ServerProcess) -> AsyncIterator[UmemConnection]:
    c = await connect(server)
    yield c
    await c.close()


def unique(prefix: str) -> bytes:
    return f"test:{prefix}:{os.getpid()}:{random.getrandbits(48):012x}".encode()


def test_keys_go_to_the_thread_the_servers_own_hash_names() -> None:
    for key, h in C_HASHES.items():
        for threads in (1, 2, 3, 4, 7, 64):
            assert thread_of(key, threads) == (h * threads) >> 64


def test_only_loopback_addresses_are_accepted_before_any_connection() -> None:
    assert parse_address("[::1]:10047") == ("::1", 10047)
    assert parse_address("localhost:9") == ("localhost", 9)
    for bad in ("[2001:db8::1]:10047", "10.0.0.1:10047", "[::1]", "[::1]:0", "::1:x"):
        with pytest.raises(TargetError) as info:
            parse_address(bad)
        assert info.value.where == "target.options.address"


@pytest.mark.parametrize("size", SIZES)
async def test_values_round_trip_byte_for_byte(conn: UmemConnection, size: int) -> None:
    writer, reader = await conn.client(), await conn.client()
    key = unique(f"size{size}")
    value = random.Random(size).randbytes(size)
    assert await writer.get(key) is None
    await writer.set(key, memoryview(value), None)
    assert await writer.get(key) == value
    assert await reader.get(key) == value  # another client's connections find it too


async def test_a_miss_then_a_set_then_a_hit_and_delete_makes_it_miss(conn: UmemConnection) -> None:
    c = await conn.client()
    key = unique("aside")
    assert await c.get(key) is None
    await c.set(key, b"filled", None)
    assert await c.get(key) == b"filled"
    assert await c.delete(key) is None  # umem-cache does not say whether it was there
    assert await c.get(key) is None
    await c.set(key, b"again", None)
    assert await c.get(key) == b"again"
    await c.delete(unique("never"))  # deleting an absent key is fine


async def test_deleting_a_key_another_client_holds_locked_closes_that_clients_connection(
    conn: UmemConnection,
) -> None:
    a, b = await conn.client(), await conn.client()
    key = unique("deleted-while-locked")
    assert await a.get(key) is None
    await b.delete(key)
    try:
        await a.set(key, b"late", None)  # no reply comes, so this may not notice yet
    except ConnectionError:
        pass
    else:
        with pytest.raises(ConnectionError):
            await a.get(key)
    assert await a.get(key) is None  # reconnected; the late value was never stored
    await a.set(key, b"v", None)
    assert await b.get(key) == b"v"


async def test_a_set_after_no_miss_stores_only_an_absent_key(conn: UmemConnection) -> None:
    c = await conn.client()
    key = unique("absent-only")
    await c.set(key, b"first", None)
    await c.set(key, b"second", None)  # umem-cache cannot overwrite
    assert await c.get(key) == b"first"


async def test_two_clients_racing_for_a_missing_key_one_sets_the_other_waits_and_hits(
    conn: UmemConnection,
) -> None:
    a, b = await conn.client(), await conn.client()
    key = unique("race")
    assert await a.get(key) is None  # a holds the key's lock
    waiting = asyncio.ensure_future(b.get(key))
    done, _ = await asyncio.wait({waiting}, timeout=0.3)
    assert not done, "the second client must wait for the first one's value"
    await a.set(key, b"from a", None)
    assert await asyncio.wait_for(waiting, 5) == b"from a"


async def test_a_client_that_drops_its_miss_hands_the_lock_to_the_waiter(
    conn: UmemConnection,
) -> None:
    a, b = await conn.client(), await conn.client()
    key = unique("handover")
    assert await a.get(key) is None
    waiting = asyncio.ensure_future(b.get(key))
    await asyncio.sleep(0.05)
    await a.close()
    assert await asyncio.wait_for(waiting, 5) is None  # b now holds the lock...
    await b.set(key, b"from b", None)
    assert await b.get(key) == b"from b"


async def test_a_get_not_followed_by_its_set_releases_the_lock(conn: UmemConnection) -> None:
    a, b = await conn.client(), await conn.client()
    key = unique("abandoned")
    assert await a.get(key) is None
    assert await a.get(key) is None  # the abandoned miss was dropped, this is a new one
    await a.set(key, b"v", None)
    assert await b.get(key) == b"v"


async def test_a_ttl_or_an_oversized_key_is_refused(conn: UmemConnection) -> None:
    c = await conn.client()
    with pytest.raises(AdapterError) as info:
        await c.set(unique("ttl"), b"v", 5.0)
    assert info.value.kind == "unsupported"
    with pytest.raises(AdapterError) as info:
        await c.get(b"k" * 256)
    assert info.value.kind == "invalid"


async def test_a_wrong_thread_count_is_one_clear_error(server: ServerProcess) -> None:
    for threads in (1, 3):
        with pytest.raises(TargetError) as info:
            await connect(server, threads=threads)
        assert info.value.where == "target.options.threads"
        assert "THREAD_NR" in info.value.message


async def test_a_server_that_is_not_there_is_one_clear_error(server: ServerProcess) -> None:
    with pytest.raises(TargetError) as info:
        await connect(server, address="[::1]:1")
    assert "cannot connect to umem-cache at [::1]:1" in info.value.message


async def test_a_lost_server_is_a_connection_error_on_every_operation() -> None:
    server = start(memory=16 * MiB, threads=1)
    try:
        c = await connect(server, threads=1)
        client = await c.client()
        key = unique("lost")
        assert await client.get(key) is None
        server.stop()
        for call in (
            lambda: client.set(key, b"v", None),
            lambda: client.get(key),
            lambda: client.delete(key),
        ):
            with pytest.raises(Exception) as info:
                await call()
            assert error_kind(info.value) == "connection", info.value
        await c.close()
    finally:
        server.stop()


def lru_hit_rate(ops: list[tuple[bytes, int]], capacity: int) -> float:
    """The exact hit rate of a byte-capacity LRU under cache-aside (key + value bytes)."""
    cache: OrderedDict[bytes, int] = OrderedDict()
    used = hits = 0
    for key, size in ops:
        if key in cache:
            cache.move_to_end(key)
            hits += 1
            continue
        cost = len(key) + size
        cache[key] = cost
        used += cost
        while used > capacity:
            _, old = cache.popitem(last=False)
            used -= old
    return hits / len(ops)


async def test_the_hit_rate_under_a_limit_is_near_an_exact_lru() -> None:
    """Not equality: umem-cache is not a plain LRU, and its pages and slabs cost memory."""
    limit = 4 * MiB
    rng = random.Random(74)
    keys = 400
    sizes = {i: rng.randrange(1, 64 * 1024) for i in range(keys)}  # ~12.5 MiB: 3x the limit
    hot = keys // 5
    order = [
        rng.randrange(hot) if rng.random() < 0.8 else rng.randrange(hot, keys) for _ in range(6000)
    ]
    ops = [(f"lru:{i:05d}".encode(), sizes[i]) for i in order]
    payload = rng.randbytes(64 * 1024)
    server = start(memory=limit, threads=1)
    try:
        conn = await connect(server, threads=1)
        c = await conn.client()
        hits = 0
        for key, size in ops:
            if await c.get(key) is None:
                await c.set(key, payload[:size], None)
            else:
                hits += 1
        await conn.close()
        peak = server.memory()["peak_rss_bytes"]
    finally:
        server.stop()
    measured, expected = hits / len(ops), lru_hit_rate(ops, limit)
    assert 0.3 < expected < 0.9  # the limit really bites, and it is not all misses
    assert abs(measured - expected) < 0.15, (measured, expected)
    assert peak < limit + 32 * MiB  # the limit holds (the rest: code, tables, buffers)
