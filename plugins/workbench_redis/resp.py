"""Automatic pipelining: one lean RESP connection (`workbench.sdk.resp.wire`) that many
virtual clients share.

Commands issued during one turn of the event loop are written with a single write, and
replies (Redis answers in order) are matched to their callers first in, first out. This is
what makes one connection as fast as a pool of them in `000_*.txt`: the cost of a round
trip and a system call is shared by every command in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from workbench.sdk.resp import RespProtocol, RespTarget, check, open_resp, pack
from workbench.sdk.resp.pubsub import subscribe
from workbench_redis.conditional import ConditionalCommands


class Multiplexed:
    """K shared RESP connections, used round robin, reopened after a failure."""

    def __init__(self, target: RespTarget, connections: int) -> None:
        self.target = target
        self.protos: list[RespProtocol | None] = [None] * connections
        self.opening: list[asyncio.Future[RespProtocol] | None] = [None] * connections
        self.turn = 0

    async def open(self) -> None:
        for i in range(len(self.protos)):
            await self._reopen(i)

    async def _reopen(self, i: int) -> RespProtocol:
        # Many clients notice a lost connection at once: only the first reconnects.
        pending = self.opening[i]
        if pending is None:
            pending = self.opening[i] = asyncio.ensure_future(open_resp(self.target))
            try:
                proto = self.protos[i] = await pending
            finally:
                self.opening[i] = None
            return proto
        return await asyncio.shield(pending)

    def _pick(self) -> tuple[int, RespProtocol | None]:
        i = self.turn
        self.turn = (i + 1) % len(self.protos)
        p = self.protos[i]
        return i, (p if p is not None and p.lost is None else None)

    async def call(self, frame: bytes) -> Any:
        i, p = self._pick()
        if p is None:
            p = await self._reopen(i)
        return check(await p.command(frame))

    async def call_with_value(self, head: bytes, value: bytes | memoryview, tail: bytes) -> Any:
        i, p = self._pick()
        if p is None:
            p = await self._reopen(i)
        return check(await p.command_with_value(head, value, tail))

    async def close(self) -> None:
        for p in self.protos:
            if p is not None:
                p.close()


class MultiplexedClient(ConditionalCommands):
    """A virtual client: a thin handle on the worker's shared connections."""

    def __init__(self, mux: Multiplexed) -> None:
        self.mux = mux
        self.call = mux.call
        self.call_with_value = mux.call_with_value

    async def get(self, key: bytes) -> bytes | None:
        reply: bytes | None = await self.call(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key))
        return reply

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        head = b"*%d\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n" % (
            5 if ttl else 3,
            len(key),
            key,
            len(value),
        )
        if ttl:
            ms = b"%d" % max(1, round(ttl * 1000))
            tail = b"\r\n$2\r\nPX\r\n$%d\r\n%s\r\n" % (len(ms), ms)
        else:
            tail = b"\r\n"
        await self.call_with_value(head, value, tail)

    async def delete(self, key: bytes) -> bool:
        return bool(await self.call(b"*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n" % (len(key), key)))

    async def publish(self, channel: bytes, message: bytes) -> None:
        await self.call(pack(b"PUBLISH", channel, message))

    async def subscribe(self, channels: Sequence[bytes]) -> AsyncIterator[bytes]:
        return await subscribe(self.mux.target, channels)

    async def close(self) -> None:
        return None
