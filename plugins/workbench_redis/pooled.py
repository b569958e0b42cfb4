"""The strategies built on redis-py itself: the way most applications talk to Redis.

- sync-per-client: one blocking connection per virtual client (one thread each);
- sync-pool: one blocking connection pool shared by the threads;
- async-pool: one asyncio connection pool shared by the worker's virtual clients;
- pipeline: commands of concurrent clients gathered into explicit pipelines of up to N,
  one pipeline in flight at a time (send, wait for all replies, send the next).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from typing import Any

import redis
import redis.asyncio as aredis

from workbench.sdk import AdapterError, host_port, tls_cause
from workbench_redis.info import InfoReader
from workbench_redis.resp import subscribe
from workbench_redis.target import RedisTarget


def _px(ttl: float | None) -> int | None:
    return max(1, round(ttl * 1000)) if ttl else None


def _tls_or_same(exc: redis.ConnectionError) -> Exception:
    """A wrapped handshake failure as a ``tls`` error; any other lost connection unchanged."""
    return tls_cause(exc, "redis") or exc


class SyncClient:
    """Blocking get/set/delete over a redis.Redis (one connection or a shared pool)."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r

    def get(self, key: bytes) -> bytes | None:
        try:
            return self.r.get(key)  # type: ignore[return-value]
        except redis.ResponseError as exc:
            raise AdapterError("server", str(exc)) from exc
        except redis.ConnectionError as exc:
            raise _tls_or_same(exc) from exc

    def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        try:
            self.r.set(key, value, px=_px(ttl))
        except redis.ResponseError as exc:
            raise AdapterError("server", str(exc)) from exc
        except redis.ConnectionError as exc:
            raise _tls_or_same(exc) from exc

    def delete(self, key: bytes) -> bool:
        try:
            return bool(self.r.delete(key))
        except redis.ResponseError as exc:
            raise AdapterError("server", str(exc)) from exc
        except redis.ConnectionError as exc:
            raise _tls_or_same(exc) from exc

    def close(self) -> None:
        return None


class SyncConnection:
    def __init__(self, target: RedisTarget, pool_size: int | None) -> None:
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
            return SyncClient(self.shared)
        r = redis.Redis(single_connection_client=True, **self.target.redis_py_kwargs(False))
        self.own.append(r)
        return SyncClient(r)

    async def server_stats(self) -> dict[str, Any]:
        return await self.info.read()

    async def close(self) -> None:
        await self.info.close()
        for r in self.own:
            await asyncio.to_thread(r.close)
        if self.shared is not None:
            await asyncio.to_thread(self.shared.connection_pool.disconnect)


class AsyncClient:
    """get/set/delete/publish over redis.asyncio, through a shared pool or a batcher."""

    def __init__(self, call: Any, target: RedisTarget) -> None:
        self.call = call
        self.target = target

    async def get(self, key: bytes) -> bytes | None:
        return await self.call("GET", key)  # type: ignore[no-any-return]

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        if ttl:
            await self.call("SET", key, value, "PX", _px(ttl))
        else:
            await self.call("SET", key, value)

    async def delete(self, key: bytes) -> bool:
        return bool(await self.call("DEL", key))

    async def publish(self, channel: bytes, message: bytes) -> None:
        await self.call("PUBLISH", channel, message)

    async def subscribe(self, channels: Sequence[bytes]) -> AsyncIterator[bytes]:
        return await subscribe(self.target, channels)

    async def close(self) -> None:
        return None


class _AsyncConnection(ABC):
    """What the redis.asyncio strategies share: clients over `_call`, INFO, closing."""

    target: RedisTarget
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


class AsyncPoolConnection(_AsyncConnection):
    def __init__(self, target: RedisTarget, pool_size: int) -> None:
        self.target = target
        self.info = InfoReader(target)
        pool = aredis.BlockingConnectionPool(
            max_connections=pool_size, timeout=target.timeout, **target.pool_kwargs(True)
        )
        self.r = aredis.Redis(connection_pool=pool)

    async def _call(self, *args: Any) -> Any:
        try:
            return await self.r.execute_command(*args)
        except redis.ResponseError as exc:
            raise AdapterError("server", str(exc)) from exc
        except redis.ConnectionError as exc:
            failed = tls_cause(exc, host_port(self.target.host, self.target.port))
            if failed is None:
                raise
            raise failed from exc


class PipelineConnection(_AsyncConnection):
    """Gathers the commands of concurrent clients into pipelines of at most `batch`."""

    def __init__(self, target: RedisTarget, batch: int) -> None:
        self.target = target
        self.batch = batch
        self.info = InfoReader(target)
        self.r = aredis.Redis(**target.redis_py_kwargs(True))
        self.queue: list[tuple[tuple[Any, ...], asyncio.Future[Any]]] = []
        self.flusher: asyncio.Task[None] | None = None

    async def _call(self, *args: Any) -> Any:
        fut = asyncio.get_running_loop().create_future()
        self.queue.append((args, fut))
        if self.flusher is None:
            self.flusher = asyncio.ensure_future(self._flush())
        return await fut

    async def _flush(self) -> None:
        try:
            while self.queue:
                batch, self.queue = self.queue[: self.batch], self.queue[self.batch :]
                pipe = self.r.pipeline(transaction=False)
                for args, _ in batch:
                    pipe.execute_command(*args)
                try:
                    replies = await pipe.execute(raise_on_error=False)
                except Exception as exc:
                    address = host_port(self.target.host, self.target.port)
                    failed = tls_cause(exc, address) or exc
                    for _, fut in batch:
                        if not fut.done():
                            fut.set_exception(failed)
                    continue
                for (_, fut), reply in zip(batch, replies, strict=True):
                    if fut.done():
                        continue
                    if isinstance(reply, redis.ResponseError):
                        fut.set_exception(AdapterError("server", str(reply)))
                    elif isinstance(reply, Exception):
                        fut.set_exception(reply)
                    else:
                        fut.set_result(reply)
        finally:
            self.flusher = None

    async def close(self) -> None:
        if self.flusher is not None:
            self.flusher.cancel()
        await super().close()
