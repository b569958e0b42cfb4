"""Publish/subscribe over RESP: a subscribed connection of its own, whose every reply is a
push (a subscribed RESP2 connection takes no other command)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from workbench.sdk.resp.target import RespTarget
from workbench.sdk.resp.wire import RespProtocol, check, connect, pack


class _PushProtocol(RespProtocol):
    """A subscribed connection: every reply is a push, handed to a queue."""

    def __init__(self, loop: asyncio.AbstractEventLoop, system: str) -> None:
        super().__init__(loop, timeout=0, system=system)
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            self.queue.put_nowait(reply)

    def connection_lost(self, exc: BaseException | None) -> None:
        super().connection_lost(exc)
        self.queue.put_nowait(self.lost)


async def subscribe(target: RespTarget, channels: Sequence[bytes]) -> AsyncIterator[bytes]:
    """A dedicated connection subscribed to `channels`; returns once the server confirmed
    them all."""
    loop = asyncio.get_running_loop()
    proto = await connect(target, lambda: _PushProtocol(loop, target.system.name))
    assert proto.transport is not None
    if target.password is not None:
        auth = (target.username, target.password) if target.username else (target.password,)
        proto.transport.write(pack("AUTH", *auth))
        check(await asyncio.wait_for(proto.queue.get(), target.timeout))
    proto.transport.write(pack(b"SUBSCRIBE", *channels))
    for _ in channels:  # one confirmation per channel
        reply = check(await asyncio.wait_for(proto.queue.get(), target.timeout))
        if isinstance(reply, BaseException):
            raise reply
    return _messages(proto)


async def _messages(proto: _PushProtocol) -> AsyncIterator[bytes]:
    try:
        while True:
            reply = await proto.queue.get()
            if isinstance(reply, BaseException):
                raise reply
            if isinstance(reply, list) and len(reply) == 3 and reply[0] == b"message":
                yield reply[2]
    finally:
        with contextlib.suppress(Exception):
            proto.close()
