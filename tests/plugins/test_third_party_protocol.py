"""A plugin the workbench has never seen, whose strategy declares a protocol the native
engine speaks (RESP), runs a step on the native engine with no change to the crate: the
engine is told the protocol and the servers its plugin read, never the system. Its URL
scheme is its own (``kv://``), so nothing outside the plugin could have read it."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import redis

from workbench.results.store import Store
from workbench.sdk.servers import ServerProcess

PLUGIN = """
from typing import Any

import redis.asyncio as aioredis

from workbench.sdk import (
    RESP, CacheSystem, Endpoints, Option, OptionSet, Strategy, per_client, read_url,
    require_loopback, runs_in_native_engine,
)


def endpoints(options: Any) -> Endpoints:
    url = read_url(str(options["url"]), {"kv": 6379}, "target.options.url")
    require_loopback(url.host, "target.options.url", options)
    return Endpoints(servers=((url.host, url.port),), origin="target.options.url")


class Client:
    def __init__(self, r: Any) -> None:
        self.r = r

    async def get(self, key: bytes) -> bytes | None:
        return await self.r.get(key)

    async def set(self, key: bytes, value: Any, ttl: float | None) -> None:
        await self.r.set(key, bytes(value))

    async def delete(self, key: bytes) -> bool:
        return bool(await self.r.delete(key))

    async def close(self) -> None:
        pass


class Connection:
    def __init__(self, options: Any) -> None:
        (host, port), = endpoints(options).servers
        self.r = aioredis.Redis(host=host, port=port)

    async def client(self) -> Client:
        return Client(self.r)

    async def server_stats(self) -> dict[str, Any]:
        return {"keys": await self.r.dbsize()}

    async def close(self) -> None:
        await self.r.aclose()


async def connect(system: Any, strategy: Any) -> Connection:
    return Connection(system)


plugin = CacheSystem(
    name="respkv",
    description="a RESP server reached as kv://HOST:PORT (a test's own plugin)",
    options=OptionSet((Option("url", "str", "kv://127.0.0.1:6379", "the server"),)),
    strategies=(
        Strategy("plain", "redis.asyncio, one connection per worker", connect),
        Strategy(
            "native", "the native engine", runs_in_native_engine, engine="native",
            connections=per_client, protocol=RESP,
        ),
    ),
    default_strategy="plain",
    endpoints=endpoints,
)
"""


@pytest.fixture
def plugin_site(tmp_path: Path) -> Path:
    """An installed-looking distribution holding the plugin, found by its entry point."""
    site = tmp_path / "site"
    info = site / "wb_respkv-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wb-respkv\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[workbench.plugins]\nrespkv = wb_respkv:plugin\n")
    (site / "wb_respkv.py").write_text(textwrap.dedent(PLUGIN))
    return site


@pytest.mark.redis
def test_a_plugin_declaring_resp_runs_a_native_step(
    plugin_site: Path, redis_server: ServerProcess, workbench_cli: Any, tmp_path: Path
) -> None:
    server = redis.Redis(host=redis_server.host, port=redis_server.port)
    server.flushall()
    url = f"kv://{redis_server.host}:{redis_server.port}"
    done = workbench_cli(
        "run", "-q", "--set", "target.system=respkv", "--set", f"target.options.url={url}",
        "--set", "strategy.name=native", "--set", 'workload.mix={"set" = 1.0}',
        "-c", "2", "--test-time", "1s",
        env={"PYTHONPATH": str(plugin_site)},
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    (step,) = Store(tmp_path / "runs.sqlite3").load("last").steps
    assert step.resolved["engine"]["name"] == "native"
    assert step.stats.ops > 0 and step.stats.error_count == 0, step.stats.first_errors
    assert server.dbsize() > 0  # the sets reached the server the plugin's URL names
