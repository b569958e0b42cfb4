"""The Python engine's strategies for Valkey, on redis-py (Valkey speaks Redis's RESP).

- ``async-pool``: redis.asyncio with one blocking connection pool shared by the worker's
  virtual clients;
- ``sync-per-client``: redis.Redis, one blocking connection per virtual client (one
  thread each).

Server statistics come from INFO on a connection of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import redis
import redis.asyncio as aredis

from workbench.sdk import AdapterError, host_port, tls_cause
from workbench_valkey.target import ValkeyTarget, parse_target

# The INFO fields reported, as integers; CPU seconds are decimals.
FIELDS = (
    "used_memory",
    "used_memory_rss",
    "used_memory_peak",
    "maxmemory",
    "evicted_keys",
    "expired_keys",
    "keyspace_hits",
    "keyspace_misses",
    "connected_clients",
    "total_commands_processed",
    "instantaneous_ops_per_sec",
    "io_threads_active",
)
CPU_FIELDS = ("used_cpu_user", "used_cpu_sys")


def px(ttl: float | None) -> int | None:
    """A TTL in whole milliseconds, never 0 (which Valkey refuses) for a short one."""
    return max(1, round(ttl * 1000)) if ttl else None


def failure(exc: Exception, target: ValkeyTarget) -> Exception:
    """An error reply as a ``server`` error, a failed handshake as ``tls``, else as it is
    (the engine counts redis-py's ConnectionError and TimeoutError by their names)."""
    if isinstance(exc, redis.ResponseError):
        return AdapterError("server", str(exc))
    return tls_cause(exc, host_port(target.host, target.port)) or exc


def stats_of(info: dict[str, Any], db: int) -> dict[str, Any]:
    """The figures reported from a parsed INFO reply (redis-py parses it into a dict)."""
    out: dict[str, Any] = {k: int(info[k]) for k in FIELDS if isinstance(info.get(k), int)}
    out |= {k: float(info[k]) for k in CPU_FIELDS if isinstance(info.get(k), int | float)}
    keyspace = info.get(f"db{db}")
    out["keys"] = int(keyspace.get("keys", 0)) if isinstance(keyspace, dict) else 0
    for name in ("valkey_version", "redis_version"):
        if name in info:
            out[name] = str(info[name])
    return out


class InfoReader:
    """INFO on a side connection, opened on first use and again after a failure."""

    def __init__(self, target: ValkeyTarget) -> None:
        self.target = target
        self.r: aredis.Redis | None = None

    async def read(self) -> dict[str, Any]:
        if self.r is None:
            self.r = aredis.Redis(single_connection_client=True, **self.target.kwargs(True))
        try:
            return stats_of(await self.r.info(), self.target.db)
        except Exception:
            await self.close()
            raise

    async def close(self) -> None:
        r, self.r = self.r, None
        if r is not None:
            with contextlib.suppress(Exception):
                await r.aclose()


class AsyncClient:
    """get/set/delete on the worker's shared redis.asyncio pool."""

    def __init__(self, r: aredis.Redis, target: ValkeyTarget) -> None:
        self.r = r
        self.target = target

    async def _call(self, *args: Any) -> Any:
        try:
            return await self.r.execute_command(*args)
        except (redis.ResponseError, redis.ConnectionError) as exc:
            raise failure(exc, self.target) from exc

    async def get(self, key: bytes) -> bytes | None:
        return await self._call("GET", key)  # type: ignore[no-any-return]

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        args = ("PX", px(ttl)) if ttl else ()
        await self._call("SET", key, value, *args)

    async def delete(self, key: bytes) -> bool:
        return bool(await self._call("DEL", key))

    async def close(self) -> None:
        return None


class AsyncPoolConnection:
    def __init__(self, target: ValkeyTarget, pool_size: int) -> None:
        self.target = target
        self.info = InfoReader(target)
        pool = aredis.BlockingConnectionPool(
            max_connections=pool_size, timeout=target.timeout, **target.kwargs(True, pool=True)
        )
        self.r = aredis.Redis(connection_pool=pool)

    async def client(self) -> AsyncClient:
        return AsyncClient(self.r, self.target)

    async def server_stats(self) -> dict[str, Any]:
        return await self.info.read()

    async def close(self) -> None:
        await self.info.close()
        await self.r.aclose()


class SyncClient:
    """Blocking get/set/delete on a connection of its own."""

    def __init__(self, target: ValkeyTarget) -> None:
        self.target = target
        self.r = redis.Redis(single_connection_client=True, **target.kwargs(False))

    def _call(self, *args: Any) -> Any:
        try:
            return self.r.execute_command(*args)
        except (redis.ResponseError, redis.ConnectionError) as exc:
            raise failure(exc, self.target) from exc

    def get(self, key: bytes) -> bytes | None:
        return self._call("GET", key)  # type: ignore[no-any-return]

    def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        args = ("PX", px(ttl)) if ttl else ()
        self._call("SET", key, value, *args)

    def delete(self, key: bytes) -> bool:
        return bool(self._call("DEL", key))

    def close(self) -> None:
        self.r.close()


class SyncConnection:
    def __init__(self, target: ValkeyTarget) -> None:
        self.target = target
        self.info = InfoReader(target)
        self.clients: list[SyncClient] = []

    async def client(self) -> SyncClient:
        self.clients.append(SyncClient(self.target))
        return self.clients[-1]

    async def server_stats(self) -> dict[str, Any]:
        return await self.info.read()

    async def close(self) -> None:
        await self.info.close()
        for c in self.clients:
            await asyncio.to_thread(c.close)


async def connect_async_pool(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return AsyncPoolConnection(parse_target(system), strategy["pool_size"])


async def connect_sync_per_client(system: dict[str, Any], strategy: dict[str, Any]) -> Any:
    return SyncConnection(parse_target(system))
