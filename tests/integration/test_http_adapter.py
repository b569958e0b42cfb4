"""The HTTP adapter against real aiohttp servers: the reference key-value store, and tiny
servers that answer what a test needs (503s, slow answers, a JSON hit field)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from support import collect, finished
from workbench_http import plugin

from workbench.results.events import StepFinished
from workbench.results.store import Store
from workbench.sdk.adapter import AdapterError, error_kind
from workbench.sdk.errors import TargetError
from workbench.sdk.servers import ServerProcess, free_port, start_python_server

SIZES = [0, 1, 100, 4096, 100_000, 1024**2]
KV_TEMPLATES = {"get": "GET /?key={key}", "delete": "DELETE /?key={key}", "stats_path": "/stats"}


@pytest.fixture(scope="module")
def kv_store() -> Iterator[ServerProcess]:
    with start_python_server("workbench_http.servers.kv_store", ["--mode", "dict"]) as server:
        yield server


def kv_url(server: ServerProcess) -> str:
    return f"http://{server.host}:{server.port}"


def options(**raw: Any) -> dict[str, Any]:
    return plugin.options.resolve(raw, "target.options")


async def connect(strategy: str, system: dict[str, Any], **strategy_raw: Any) -> Any:
    s = plugin.strategy(strategy)
    return await s.connect(options(**system), s.options.resolve(strategy_raw, "strategy.options"))


async def raised(coro: Any) -> BaseException:
    try:
        await coro
    except Exception as exc:
        return exc
    raise AssertionError("expected an error")


@pytest.fixture
async def tiny() -> AsyncIterator[str]:
    """A server whose answers depend on the key: the index's remainder by 3 says which.

    0: 503; 1: a hit, 200 with JSON {"found": true, "value": "v<index>"}; 2: a miss, 404.
    ``/slow`` sleeps, ``/teapot`` answers 418, ``/found-false`` answers 200 with found false.
    """

    async def lookup(request: web.Request) -> web.Response:
        key = request.query.get("key", "")
        digits = "".join(ch for ch in key if ch.isdigit()) or "0"
        index = int(digits)
        if index % 3 == 0:
            return web.json_response({"error": "busy"}, status=503)
        if index % 3 == 1:
            return web.json_response({"found": True, "value": f"v{index}"})
        return web.json_response({"found": False, "value": None}, status=404)

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(2)
        return web.json_response({"value": "late"})

    async def teapot(request: web.Request) -> web.Response:
        return web.Response(status=418, text="short and stout")

    async def found_false(request: web.Request) -> web.Response:
        return web.json_response({"found": False, "value": "stale"})

    app = web.Application()
    app.router.add_get("/lookup", lookup)
    app.router.add_get("/slow", slow)
    app.router.add_get("/teapot", teapot)
    app.router.add_get("/found-false", found_false)

    async def chunked(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for piece in (b"chunk-", b"ed ", b"x" * 70_000):
            await resp.write(piece)
        await resp.write_eof()
        return resp

    async def closing(request: web.Request) -> web.Response:
        return web.Response(body=b"bye", headers={"Connection": "close"})

    app.router.add_get("/chunked", chunked)
    app.router.add_get("/close", closing)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


# ---- round trips against the reference store ------------------------------------------


@pytest.mark.parametrize("strategy", ["keep-alive", "new-connection", "lean"])
@pytest.mark.parametrize(
    "body",
    [
        {"value_encoding": "latin-1"},
        {"value_encoding": "base64"},
        {"set": "PUT /?key={key}&ttl={ttl}", "set_body": "{value}"},
    ],
    ids=["json-latin-1", "json-base64", "raw"],
)
async def test_values_round_trip_byte_for_byte(
    kv_store: ServerProcess, strategy: str, body: dict[str, str]
) -> None:
    conn = await connect(strategy, {"base_url": kv_url(kv_store), **KV_TEMPLATES, **body})
    client = await conn.client()
    rng = random.Random(7)
    try:
        tag = f"{strategy}-{body.get('value_encoding', 'raw')}"
        for size in SIZES:
            key = f"rt:{tag}:{size}".encode()
            value = rng.randbytes(size)
            if size >= 256:
                value = bytes(range(256)) + value[256:]  # every byte value at least once
            await client.set(key, memoryview(value), None)
            assert await client.get(key) == value, size
        ttl_key = f"rt:{tag}:ttl".encode()
        await client.set(ttl_key, b"\x00\xff", 30.0)
        assert await client.get(ttl_key) == b"\x00\xff"
    finally:
        await client.close()
        await conn.close()


async def test_misses_deletes_and_server_stats(kv_store: ServerProcess) -> None:
    conn = await connect("keep-alive", {"base_url": kv_url(kv_store), **KV_TEMPLATES})
    client = await conn.client()
    try:
        assert await client.get(b"never-set") is None
        await client.set(b"del:me", b"x", None)
        assert await client.delete(b"del:me") is True
        assert await client.get(b"del:me") is None
        assert await client.delete(b"del:me") is False
        # A key with characters that need percent-encoding reaches the server intact.
        odd = "a b/c?d&e=f%g+h#é".encode()
        await client.set(odd, b"odd", None)
        assert await client.get(odd) == b"odd"
        stats = await conn.server_stats()
        assert stats["mode"] == "dict" and stats["misses"] >= 2 and stats["deletes"] >= 2
    finally:
        await conn.close()


async def test_a_ttl_is_passed_on_and_expires(kv_store: ServerProcess) -> None:
    conn = await connect("keep-alive", {"base_url": kv_url(kv_store), **KV_TEMPLATES})
    client = await conn.client()
    try:
        await client.set(b"ttl:short", b"soon gone", 0.3)
        assert await client.get(b"ttl:short") == b"soon gone"
        await asyncio.sleep(0.6)
        assert await client.get(b"ttl:short") is None
    finally:
        await conn.close()


async def test_delete_without_a_template_is_an_unsupported_error(kv_store: ServerProcess) -> None:
    conn = await connect("keep-alive", {"base_url": kv_url(kv_store), "get": "GET /?key={key}"})
    client = await conn.client()
    try:
        exc = await raised(client.delete(b"k"))
        assert error_kind(exc) == "unsupported" and "target.options.delete" in str(exc)
    finally:
        await conn.close()


# ---- classification ---------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["keep-alive", "lean"])
async def test_statuses_are_hits_misses_or_errors_by_kind(tiny: str, strategy: str) -> None:
    conn = await connect(strategy, {"base_url": tiny})
    client = await conn.client()
    try:
        assert await client.get(b"k1") == b"v1"
        assert await client.get(b"k2") is None
        exc = await raised(client.get(b"k3"))
        assert isinstance(exc, AdapterError) and error_kind(exc) == "http-503"
        assert "503" in str(exc) and "busy" in str(exc)
    finally:
        await conn.close()
    # A status listed as a miss is a miss; an unlisted 4xx is an error of its own kind.
    conn = await connect("keep-alive", {"base_url": tiny, "miss_status": ["404", "503"]})
    client = await conn.client()
    try:
        assert await client.get(b"k3") is None
    finally:
        await conn.close()
    conn = await connect("new-connection", {"base_url": tiny, "get": "GET /teapot"})
    client = await conn.client()
    try:
        assert error_kind(await raised(client.get(b"k"))) == "http-418"
    finally:
        await conn.close()


async def test_a_hit_field_must_be_true(tiny: str) -> None:
    conn = await connect(
        "keep-alive", {"base_url": tiny, "get": "GET /found-false?key={key}", "hit_field": "found"}
    )
    client = await conn.client()
    try:
        assert await client.get(b"k") is None
    finally:
        await conn.close()
    conn = await connect("keep-alive", {"base_url": tiny, "hit_field": "found"})
    client = await conn.client()
    try:
        assert await client.get(b"k4") == b"v4"
    finally:
        await conn.close()


@pytest.mark.parametrize("strategy", ["keep-alive", "lean"])
async def test_a_slow_answer_is_a_timeout(tiny: str, strategy: str) -> None:
    conn = await connect(strategy, {"base_url": tiny, "get": "GET /slow", "timeout": "200ms"})
    client = await conn.client()
    try:
        assert error_kind(await raised(client.get(b"k"))) == "timeout"
    finally:
        await conn.close()


@pytest.mark.parametrize("strategy", ["keep-alive", "new-connection", "lean"])
async def test_chunked_and_closing_answers_are_read_whole(tiny: str, strategy: str) -> None:
    conn = await connect(strategy, {"base_url": tiny, "get": "GET /chunked?key={key}"})
    client = await conn.client()
    try:
        for _ in range(3):
            assert await client.get(b"k") == b"chunk-ed " + b"x" * 70_000
    finally:
        await conn.close()
    conn = await connect(strategy, {"base_url": tiny, "get": "GET /close?key={key}"})
    client = await conn.client()
    try:
        for _ in range(3):  # the server closes after each answer: the next one reconnects
            assert await client.get(b"k") == b"bye"
    finally:
        await conn.close()


@pytest.mark.parametrize("strategy", ["keep-alive", "lean"])
async def test_a_server_gone_mid_run_is_a_connection_error(strategy: str) -> None:
    server = start_python_server("workbench_http.servers.kv_store")
    conn = await connect(strategy, {"base_url": kv_url(server), **KV_TEMPLATES})
    client = await conn.client()
    try:
        await client.set(b"k", b"v", None)
        server.stop()
        assert error_kind(await raised(client.get(b"k"))) == "connection"
    finally:
        server.stop()
        await conn.close()


async def test_bad_options_are_one_clear_error_naming_the_option() -> None:
    for raw, where, words in [
        ({"base_url": "http://10.1.2.3:80"}, "target.options.base_url", "loopback"),
        ({"base_url": "ftp://127.0.0.1"}, "target.options.base_url", "http://"),
        ({"get": "FETCH /x"}, "target.options.get", "template"),
        ({"set_body": '{"value": {value}'}, "target.options.set_body", "JSON"),
        ({"headers": ["no colon"]}, "target.options.headers", "Name: value"),
        ({"hit_status": ["ok"]}, "target.options.hit_status", "status"),
    ]:
        exc = await raised(connect("keep-alive", raw))
        assert isinstance(exc, TargetError), raw
        assert exc.where == where and words in exc.message, (raw, str(exc))
    # Nobody listening: one line, not a traceback.
    exc = await raised(connect("keep-alive", {"base_url": f"http://127.0.0.1:{free_port()}"}))
    assert isinstance(exc, TargetError) and "cannot reach" in exc.message


# ---- through the engine -------------------------------------------------------------------


async def run_experiment(store_path: Path, overrides: list[str]) -> StepFinished:
    # Short intervals on purpose: ops in flight across an interval end must still count once.
    (step,) = finished(
        await collect(["load.interval=0.1", "load.workers=2", *overrides], Store(store_path))
    )
    return step


@pytest.mark.parametrize("strategy", ["keep-alive", "new-connection", "lean"])
async def test_an_experiment_counts_every_op_against_the_store(
    kv_store: ServerProcess, store_path: Path, strategy: str
) -> None:
    step = await run_experiment(
        store_path,
        [
            "target.system=http",
            f"target.options.base_url={kv_url(kv_store)}",
            "target.options.get=GET /?key={key}",
            "target.options.delete=DELETE /?key={key}",
            "target.options.stats_path=/stats",
            f"strategy.name={strategy}",
            "load.ops=1500",
            "load.concurrency=8",
            "workload.mix={get=3, set=1, delete=1}",
            f"workload.key_prefix=eng-{strategy}:",
            "workload.keys=200",
            "workload.value_size=uniform(8,3000)",
        ],
    )
    s = step.stats
    assert step.status == "completed"
    assert s.errors == {}
    assert s.ops == 1500
    gets = s.hist["get"].get_total_count()
    assert s.hits + s.misses == gets and 0 < s.hits < gets
    assert s.server["mode"] == "dict" and s.server["sets"] > 0


@pytest.mark.parametrize("strategy", ["keep-alive", "new-connection", "lean"])
async def test_hits_misses_and_errors_add_up_to_the_ops(
    tiny: str, store_path: Path, strategy: str
) -> None:
    step = await run_experiment(
        store_path,
        [
            "target.system=http",
            f"target.options.base_url={tiny}",
            f"strategy.name={strategy}",
            "load.ops=900",
            "load.concurrency=4",
            "workload.mix={get=1}",
            "workload.keys=300",
        ],
    )
    s = step.stats
    assert step.status == "completed"
    assert s.hits + s.misses + s.error_count == 900
    assert set(s.errors) == {"http-503"}
    assert s.hits > 0 and s.misses > 0 and s.errors["http-503"] > 0
    assert "503" in s.first_errors["http-503"]


async def test_a_managed_kv_store_runs_and_is_stopped(store_path: Path) -> None:
    step = await run_experiment(
        store_path,
        [
            "target.system=http",
            "target.managed=true",
            "target.server.kind=kv-store",
            "target.server.mode=partitioned",
            "load.ops=600",
            "load.concurrency=4",
            "workload.mix={get=1, set=1, delete=1}",
            "workload.prefill=true",
            "workload.keys=100",
        ],
    )
    s = step.stats
    assert step.status == "completed" and s.errors == {}
    assert s.ops == 600 and s.server["mode"] == "partitioned" and s.server["partitions"] == 16
    assert s.server["rss_bytes"] > 0


async def test_a_managed_caching_proxy_with_its_own_redis(store_path: Path) -> None:
    step = await run_experiment(
        store_path,
        [
            "target.system=http",
            "target.managed=true",
            "target.server.kind=caching-proxy",
            "load.ops=600",
            "load.concurrency=4",
            "workload.mix={cache_aside=1}",
            "workload.keys=50",
        ],
    )
    s = step.stats
    assert step.status == "completed" and s.errors == {}
    assert s.hits + s.misses == 600 and s.hits > 0 and s.misses > 0
    assert s.server["lru_hits"] > 0 and s.server["redis_rss_bytes"] > 0


@pytest.mark.parametrize("kind", ["kv-store", "caching-proxy"])
async def test_the_conformance_kit_passes_against_each_reference_server(kind: str) -> None:
    from workbench.conformance import failures, run_checks

    results = await run_checks("http", settings={"server.kind": kind}, managed=True)
    assert not failures(results), failures(results)
    assert {r.name for r in results if r.status == "pass"} >= {"round-trip", "ttl", "delete"}
