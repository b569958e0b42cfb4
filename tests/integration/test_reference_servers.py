"""The reference HTTP servers of issue 6, as real processes: the caching proxy of 001 in
front of a real redis-server, the key-value store of 004 in both storage modes, and
`workbench serve` as a person runs it."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
import redis
from workbench_http.servers.caching_proxy import LruCache, TokenBuckets
from workbench_redis.server import start_redis

from workbench.sdk.servers import ServerProcess, free_port, start_python_server

PROXY = "workbench_http.servers.caching_proxy"
KV = "workbench_http.servers.kv_store"


def url_of(server: ServerProcess) -> str:
    return f"http://{server.host}:{server.port}"


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        yield session


async def fetch(http: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> tuple[int, Any]:
    async with http.request(method, url, **kw) as resp:
        body = (
            await resp.json(content_type=None)
            if resp.content_type == "application/json"
            else (await resp.read())
        )
        return resp.status, body


# ---- the caching proxy ---------------------------------------------------------------------


@pytest.fixture
def proxy(redis_server: ServerProcess) -> Iterator[tuple[ServerProcess, redis.Redis]]:
    args = ["--redis-url", redis_server.target_options["url"], "--max-keys", "100"]
    with start_python_server(PROXY, args) as server:
        client = redis.Redis.from_url(redis_server.target_options["url"])
        try:
            yield server, client
        finally:
            client.close()


async def test_proxy_miss_then_redis_hit_then_lru_hit(
    proxy: tuple[ServerProcess, redis.Redis], http: aiohttp.ClientSession
) -> None:
    server, backing = proxy
    base = url_of(server)
    key = f"px:{os.getpid()}:{time.monotonic_ns()}"
    status, body = await fetch(http, "GET", f"{base}/lookup", params={"key": key})
    assert (status, body) == (404, {"key": key, "value": None, "status": 404})
    backing.set(key, "héllo".encode())
    status, body = await fetch(http, "GET", f"{base}/lookup", params={"key": key})
    assert (status, body) == (200, {"key": key, "value": "héllo", "status": 200})
    _, before = await fetch(http, "GET", f"{base}/stats")
    backing.delete(key)  # the LRU still has it: the second lookup never asks Redis
    status, body = await fetch(http, "GET", f"{base}/lookup", params={"key": key})
    assert (status, body["value"]) == (200, "héllo")
    _, after = await fetch(http, "GET", f"{base}/stats")
    assert after["lru_hits"] == before["lru_hits"] + 1
    assert after["redis_hits"] == before["redis_hits"] == 1
    assert after["redis_misses"] == 1 and after["lru_size"] == 1


async def test_proxy_rejects_bad_queries_without_touching_the_cache(
    proxy: tuple[ServerProcess, redis.Redis], http: aiohttp.ClientSession
) -> None:
    base = url_of(proxy[0])
    for query in ("", "?key=", "?other=1", "?key=" + "k" * 1025):
        status, body = await fetch(http, "GET", f"{base}/lookup{query}")
        assert status == 400 and body["status"] == 400 and body["value"] is None, query
    _, stats = await fetch(http, "GET", f"{base}/stats")
    assert stats["bad_requests"] == 4
    assert stats["lru_hits"] == stats["lru_misses"] == stats["redis_misses"] == 0


async def test_proxy_writes_through_and_deletes(
    proxy: tuple[ServerProcess, redis.Redis], http: aiohttp.ClientSession
) -> None:
    server, backing = proxy
    base = url_of(server)
    status, _ = await fetch(http, "POST", f"{base}/", json={"key": "w", "value": "one"})
    assert status == 201 and backing.get("w") == b"one"
    assert (await fetch(http, "GET", f"{base}/lookup?key=w"))[1]["value"] == "one"
    # A write drops the LRU's copy, so the next lookup sees the new value.
    await fetch(http, "POST", f"{base}/", json={"key": "w", "value": "two", "ttl": 60})
    assert (await fetch(http, "GET", f"{base}/lookup?key=w"))[1]["value"] == "two"
    assert 0 < backing.ttl("w") <= 60
    assert (await fetch(http, "DELETE", f"{base}/lookup?key=w"))[0] == 200
    assert (await fetch(http, "GET", f"{base}/lookup?key=w"))[0] == 404
    assert (await fetch(http, "DELETE", f"{base}/lookup?key=w"))[0] == 404
    assert (await fetch(http, "POST", f"{base}/", data=b"not json"))[0] == 400


async def test_proxy_answers_503_when_redis_is_gone(http: aiohttp.ClientSession) -> None:
    own_redis = start_redis()
    try:
        args = ["--redis-url", own_redis.target_options["url"], "--redis-timeout", "1s"]
        with start_python_server(PROXY, args) as server:
            base = url_of(server)
            redis.Redis.from_url(own_redis.target_options["url"]).set("cached", "yes")
            assert (await fetch(http, "GET", f"{base}/lookup?key=cached"))[0] == 200
            own_redis.stop()
            status, body = await fetch(http, "GET", f"{base}/lookup?key=elsewhere")
            assert (status, body["status"]) == (503, 503)
            # What the LRU holds is still served.
            assert (await fetch(http, "GET", f"{base}/lookup?key=cached"))[0] == 200
            _, stats = await fetch(http, "GET", f"{base}/stats")
            assert stats["redis_errors"] == 1
    finally:
        own_redis.stop()


async def test_proxy_lru_entries_expire(
    redis_server: ServerProcess, http: aiohttp.ClientSession
) -> None:
    url = redis_server.target_options["url"]
    redis.Redis.from_url(url).set("short-lived", "v")
    with start_python_server(PROXY, ["--redis-url", url, "--ttl", "300ms"]) as server:
        base = url_of(server)
        await fetch(http, "GET", f"{base}/lookup?key=short-lived")
        await asyncio.sleep(0.5)
        assert (await fetch(http, "GET", f"{base}/lookup?key=short-lived"))[0] == 200
        _, stats = await fetch(http, "GET", f"{base}/stats")
        assert stats["lru_expired"] == 1 and stats["redis_hits"] == 2


async def test_proxy_throttles_each_client(
    redis_server: ServerProcess, http: aiohttp.ClientSession
) -> None:
    args = [
        "--redis-url", redis_server.target_options["url"],
        "--rate-limit", "1", "--burst", "2", "--throttle-status", "429",
    ]  # fmt: skip
    with start_python_server(PROXY, args) as server:
        base = url_of(server)
        statuses = [
            (await fetch(http, "GET", f"{base}/lookup?key=t", headers={"X-Client-Id": "a"}))[0]
            for _ in range(5)
        ]
        assert statuses[:2] == [404, 404] and 429 in statuses[2:]
        # Another client has a bucket of its own.
        other = await fetch(http, "GET", f"{base}/lookup?key=t", headers={"X-Client-Id": "b"})
        assert other[0] == 404


def test_lru_evicts_the_least_recently_used_and_expires_lazily() -> None:
    lru = LruCache(max_keys=2, ttl=10.0)
    lru.put("a", "1", now=0.0)
    lru.put("b", "2", now=0.0)
    assert lru.get("a", now=1.0) == "1"  # a is now the most recent
    lru.put("c", "3", now=1.0)
    assert lru.get("b", now=1.0) is None and lru.evicted == 1
    assert lru.get("a", now=9.9) == "1"
    assert lru.get("a", now=10.0) is None and lru.expired == 1
    assert (lru.hits, lru.misses) == (2, 2)


def test_token_bucket_refills_at_its_rate() -> None:
    bucket = TokenBuckets(rate=2.0, burst=2.0)
    assert [bucket.allow("x", 0.0) for _ in range(3)] == [True, True, False]
    assert bucket.allow("x", 0.4) is False  # 0.8 tokens
    assert bucket.allow("x", 0.5) is True  # 1 token
    assert bucket.allow("y", 0.5) is True


# ---- the key-value store ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["dict", "partitioned"])
async def test_kv_store_stores_reads_replaces_and_deletes(
    http: aiohttp.ClientSession, mode: str
) -> None:
    with start_python_server(KV, ["--mode", mode, "--partitions", "4"]) as server:
        base = url_of(server)
        for i in range(100):
            status, _ = await fetch(
                http, "POST", f"{base}/", json={"key": f"k{i}", "value": f"v{i}"}
            )
            assert status == 201
        for i in range(100):
            assert await fetch(http, "GET", f"{base}/?key=k{i}") == (
                200,
                {"key": f"k{i}", "value": f"v{i}"},
            )
        assert (await fetch(http, "POST", f"{base}/", json={"key": "k1", "value": "new"}))[0] == 200
        assert (await fetch(http, "GET", f"{base}/?key=k1"))[1]["value"] == "new"
        assert (await fetch(http, "GET", f"{base}/?key=absent"))[0] == 404
        assert (await fetch(http, "DELETE", f"{base}/?key=k2"))[0] == 200
        assert (await fetch(http, "DELETE", f"{base}/?key=k2"))[0] == 404
        raw = bytes(range(256)) * 4
        assert (await fetch(http, "PUT", f"{base}/?key=raw", data=raw))[0] == 201
        assert await fetch(http, "GET", f"{base}/?key=raw") == (200, raw)
        for bad in (
            b"not json",
            b'{"key": "", "value": "v"}',
            b'{"key": "k", "value": 1}',
            b'{"key": "k", "value": "v", "ttl": -1}',
            b'{"value": "v"}',
        ):
            assert (await fetch(http, "POST", f"{base}/", data=bad))[0] == 400, bad
        assert (await fetch(http, "GET", f"{base}/"))[0] == 400
        _, stats = await fetch(http, "GET", f"{base}/stats")
        assert stats["mode"] == mode and stats["keys"] == 100
        assert stats["partitions"] == (4 if mode == "partitioned" else 1)
        assert stats["hits"] == 102 and stats["misses"] == 1


@pytest.mark.parametrize("mode", ["dict", "partitioned"])
async def test_kv_store_expires_lazily_and_sweeps_periodically(
    http: aiohttp.ClientSession, mode: str
) -> None:
    args = ["--mode", mode, "--cleanup-interval", "200ms", "--expiration", "300ms"]
    with start_python_server(KV, args) as server:
        base = url_of(server)
        for i in range(50):  # never read again: only the sweep can remove them
            await fetch(http, "POST", f"{base}/", json={"key": f"unread{i}", "value": "v"})
        await fetch(http, "POST", f"{base}/", json={"key": "kept", "value": "v", "ttl": 60})
        await fetch(http, "PUT", f"{base}/?key=forever&ttl=0", data=b"v")
        # Written last and read at once, with a TTL of a second: 0.3 s before the 52 writes
        # above ran out before the read on a loaded machine.
        await fetch(http, "POST", f"{base}/", json={"key": "read", "value": "v", "ttl": 1.0})
        assert (await fetch(http, "GET", f"{base}/?key=read"))[0] == 200
        deadline = time.monotonic() + 10
        while True:
            _, stats = await fetch(http, "GET", f"{base}/stats")
            if stats["keys"] <= 2 or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        assert stats["keys"] == 2 and stats["swept"] >= 50
        assert (await fetch(http, "GET", f"{base}/?key=read"))[0] == 404
        assert (await fetch(http, "GET", f"{base}/?key=kept"))[0] == 200
        assert (await fetch(http, "GET", f"{base}/?key=forever"))[0] == 200


async def test_kv_store_lazy_expiry_without_a_sweep(http: aiohttp.ClientSession) -> None:
    with start_python_server(KV, ["--cleanup-interval", "0"]) as server:
        base = url_of(server)
        await fetch(http, "POST", f"{base}/", json={"key": "k", "value": "v", "ttl": 0.2})
        await asyncio.sleep(0.4)
        _, stats = await fetch(http, "GET", f"{base}/stats")
        assert stats["keys"] == 1  # still there: nobody swept it
        assert (await fetch(http, "GET", f"{base}/?key=k"))[0] == 404
        _, stats = await fetch(http, "GET", f"{base}/stats")
        assert stats["keys"] == 0 and stats["expired"] == 1


def test_servers_refuse_a_non_loopback_host() -> None:
    for module in (KV, PROXY):
        done = subprocess.run(
            [sys.executable, "-m", module, "--host", "0.0.0.0", "--port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2 and "loopback" in done.stderr


# ---- workbench serve ------------------------------------------------------------------------


def _read_until(process: subprocess.Popen[str], needle: str) -> str:
    """Lines until one holds `needle` or the process ends (bounded by pytest's timeout).

    Plain readline, no select(): a buffered text reader may already hold the line that
    select() would wait for.
    """
    assert process.stdout is not None
    seen = ""
    while needle not in seen:
        line = process.stdout.readline()
        if not line:
            break
        seen += line
    return seen


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def test_workbench_serve_kv_store_answers_and_stops_on_sigint() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli.main", "serve", "kv-store", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        seen = _read_until(process, "Ctrl-C")
        assert f"http://127.0.0.1:{port}" in seen, (seen, process.stderr)

        async def exercise() -> None:
            async with aiohttp.ClientSession() as http:
                base = f"http://127.0.0.1:{port}"
                assert (await fetch(http, "POST", f"{base}/", json={"key": "a", "value": "b"}))[
                    0
                ] == 201
                assert await fetch(http, "GET", f"{base}/?key=a") == (
                    200,
                    {"key": "a", "value": "b"},
                )

        asyncio.run(exercise())
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
        assert process.returncode == 0, stderr
        assert "stopped" in stdout and "Traceback" not in stderr
        assert not _listening(port)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
