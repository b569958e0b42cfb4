"""The ``pipeline`` strategy: commands of concurrent clients gathered into explicit redis-py
pipelines of up to N, one pipeline in flight at a time (send, wait for all replies, send
the next). The other redis-py strategies are the SDK's (`workbench.sdk.resp.redispy`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis
import redis.asyncio as aredis

from workbench.sdk import AdapterError, host_port, tls_cause
from workbench.sdk.resp import InfoReader, RespTarget
from workbench.sdk.resp.redispy import AsyncConnectionBase


class PipelineConnection(AsyncConnectionBase):
    """Gathers the commands of concurrent clients into pipelines of at most `batch`."""

    def __init__(self, target: RespTarget, batch: int) -> None:
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
