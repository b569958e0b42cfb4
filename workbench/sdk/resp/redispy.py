"""Strategies on redis-py itself, the way most applications talk to a RESP server:

- `SyncConnection`: blocking clients, one connection each (one thread each) or one
  blocking pool shared by the threads;
- `AsyncPoolConnection`: one redis.asyncio pool shared by the worker's virtual clients;
- `AsyncConnectionBase`: what any redis.asyncio strategy shares (clients over one call,
  INFO, closing), for a plugin's own (Redis's explicit pipelines).

Every one reports the server's INFO figures (`InfoReader`) and names a failure as the
adapter contract asks: an error reply as ``server``, a failed handshake as ``tls``.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, NoReturn

import redis
import redis.asyncio as aredis

from workbench.sdk.adapter import AdapterError
from workbench.sdk.resp.info import InfoReader
from workbench.sdk.resp.pubsub import subscribe
from workbench.sdk.resp.target import RespTarget
from workbench.sdk.servers import host_port
from workbench.sdk.tls import tls_cause

Call = Callable[..., Awaitable[Any]]
_RESET = "Connection reset by peer"


def px(ttl: float | None) -> int | None:
    """A TTL in whole milliseconds, never 0 (which a RESP server refuses) for a short one."""
    return max(1, round(ttl * 1000)) if ttl else None


def raise_failure(exc: redis.RedisError, target: RespTarget) -> NoReturn:
    """An error reply as a ``server`` error, a failed handshake as ``tls``, else `exc` as it
    is (the engine counts redis-py's ConnectionError and TimeoutError by their names)."""
    if isinstance(exc, redis.ResponseError):
        raise AdapterError("server", str(exc)) from exc
    failed = tls_cause(exc, host_port(target.host, target.port))
    if failed is not None:
        raise failed from exc
    if not target.tls and isinstance(exc, redis.ConnectionError) and _RESET in str(exc):
        # A TLS port resets a plain client whose request it left unread (a server that is
        # stopped or killed closes, or refuses, instead).
        raise type(exc)(f"{exc}: is it a TLS port? ({target.system.advice})") from exc
    raise exc


class SyncClient:
    """Blocking get/set/delete over a redis.Redis (one connection or a shared pool)."""

    def __init__(self, r: redis.Redis, target: RespTarget) -> None:
        self.r = r
        self.target = target

    def _call(self, *args: Any) -> Any:
        try:
            return self.r.execute_command(*args)
        except (redis.ResponseError, redis.ConnectionError) as exc:
            raise_failure(exc, self.target)

    def get(self, key: bytes) -> bytes | None:
        reply: bytes | None = self._call("GET", key)
        return reply

    def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        args = ("PX", px(ttl)) if ttl else ()
        self._call("SET", key, value, *args)

    def delete(self, key: bytes) -> bool:
        return bool(self._call("DEL", key))

    def close(self) -> None:
        return None


class SyncConnection:
    """Blocking clients: a connection each (`pool_size` None) or one shared blocking pool."""

    def __init__(self, target: RespTarget, pool_size: int | None = None) -> None:
        self.target = target
        self.info = InfoReader(target)
        self.shared: redis.Redis | None = None
        self.own: list[redis.Redis] = []
        if pool_size is not None:
            pool = redis.BlockingConnectionPool(
                max_connections=pool_size, timeout=target.timeout, **target.pool_kwargs(False)
            )
            self.shared = redis.Redis(connection_pool=pool)

    async def client(self) -> SyncClient:
        if self.shared is not None:
            return SyncClient(self.shared, self.target)
        try:  # a single-connection client connects here
            r = redis.Redis(single_connection_client=True, **self.target.redis_py_kwargs(False))
        except redis.ConnectionError as exc:
            raise_failure(exc, self.target)
        self.own.append(r)
        return SyncClient(r, self.target)

    async def server_stats(self) -> dict[str, Any]:
        return await self.info.read()

    async def close(self) -> None:
        await self.info.close()
        for r in self.own:
            await asyncio.to_thread(r.close)
        if self.shared is not None:
            await asyncio.to_thread(self.shared.connection_pool.disconnect)


class AsyncClient:
    """get/set/delete/publish/subscribe, each command through `call` (a shared pool, a
    batcher, a cluster client)."""

    def __init__(self, call: Call, target: RespTarget) -> None:
        self.call = call
        self.target = target

    async def get(self, key: bytes) -> bytes | None:
        reply: bytes | None = await self.call("GET", key)
        return reply

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        args = ("PX", px(ttl)) if ttl else ()
        await self.call("SET", key, value, *args)

    async def delete(self, key: bytes) -> bool:
        return bool(await self.call("DEL", key))

    async def publish(self, channel: bytes, message: bytes) -> None:
        await self.call("PUBLISH", channel, message)

    async def subscribe(self, channels: Sequence[bytes]) -> AsyncIterator[bytes]:
        return await subscribe(self.target, channels)

    async def close(self) -> None:
        return None


class AsyncConnectionBase(ABC):
    """What the redis.asyncio strategies share: clients over `_call`, INFO, closing."""

    target: RespTarget
    info: InfoReader
    r: aredis.Redis

    @abstractmethod
    async def _call(self, *args: Any) -> Any:
        """Run one command (name and arguments) and return its reply."""

    async def client(self) -> AsyncClient:
        return AsyncClient(self._call, self.target)

    async def server_stats(self) -> dict[str, Any]:
        return await self.info.read()

    async def close(self) -> None:
        await self.info.close()
        await self.r.aclose()


class AsyncPoolConnection(AsyncConnectionBase):
    """The worker's clients share one blocking redis.asyncio pool of `pool_size`."""

    def __init__(self, target: RespTarget, pool_size: int) -> None:
        self.target = target
        self.info = InfoReader(target)
        pool = aredis.BlockingConnectionPool(
            max_connections=pool_size, timeout=target.timeout, **target.pool_kwargs(True)
        )
        self.r = aredis.Redis(connection_pool=pool)

    async def _call(self, *args: Any) -> Any:
        try:
            return await self.r.execute_command(*args)
        except (redis.ResponseError, redis.ConnectionError) as exc:
            raise_failure(exc, self.target)
