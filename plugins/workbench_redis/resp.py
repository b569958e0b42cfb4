"""A lean RESP2 connection that many virtual clients share: automatic pipelining.

Commands issued during one turn of the event loop are written with a single write, and
replies (Redis answers in order) are matched to their callers first in, first out,
parsed by hiredis. This is what makes one connection as fast as a pool of them in
`000_*.txt`: the cost of a round trip and a system call is shared by every command in
flight. Nothing here reads the clock except the watchdog that turns a silent server
into timeouts instead of a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import hiredis

from workbench.sdk import (
    AdapterError,
    closed_after_handshake,
    host_port,
    plain_port_timeout,
    tls_error,
)
from workbench_redis.conditional import ConditionalCommands
from workbench_redis.target import RedisTarget

P = TypeVar("P", bound=asyncio.Protocol)


def pack(*args: bytes | memoryview | str | int) -> bytes:
    """A command in RESP form (arguments as bulk strings)."""
    out = bytearray(b"*%d\r\n" % len(args))
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = b"%d" % a
        out += b"$%d\r\n" % len(a)
        out += a
        out += b"\r\n"
    return bytes(out)


def check(reply: Any) -> Any:
    """A reply, or AdapterError('server') for an error reply."""
    if isinstance(reply, hiredis.ReplyError):
        raise AdapterError("server", str(reply))
    return reply


def _refusal(reply: hiredis.ReplyError) -> bool:
    """An error Redis sends before closing a connection it will not serve."""
    return str(reply).startswith(("DENIED", "ERR max number of clients"))


def unasked(reply: Any) -> Exception:
    """Why a reply came that no command asked for, or a refusal ahead of the replies.
    Redis speaks first only to refuse a connection (protected mode, too many clients),
    and closes it after the error: the connection's every command fails with that."""
    if isinstance(reply, hiredis.ReplyError):
        first = str(reply).split(". ", 1)[0].rstrip(".")  # protected mode's advice runs on
        return AdapterError("refused", f"redis closed the connection after refusing it: {first}")
    return ConnectionError(
        f"bad reply stream from redis: a reply no command asked for ({reply!r:.80})"
    )


class RespProtocol(asyncio.Protocol):
    """One TCP connection: a write buffer flushed once per loop turn, FIFO reply futures."""

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float) -> None:
        self.loop = loop
        self.timeout = timeout
        self.reader = hiredis.Reader()
        self.pending: deque[asyncio.Future[Any]] = deque()
        self.out = bytearray()
        self.flush_scheduled = False
        self.transport: asyncio.Transport | None = None
        self.lost: BaseException | None = None
        self.last_progress = loop.time()
        self.watchdog: asyncio.TimerHandle | None = None

    # -- asyncio callbacks --
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        if self.timeout > 0:
            self.watchdog = self.loop.call_later(self.timeout / 4, self._watch)

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        self.last_progress = self.loop.time()
        pending = self.pending
        try:
            while True:
                reply = self.reader.gets()
                if reply is False:
                    return
                if not pending or (type(reply) is hiredis.ReplyError and _refusal(reply)):
                    self._abort(unasked(reply))
                    return
                fut = pending.popleft()
                if not fut.done():
                    fut.set_result(reply)
        except hiredis.ProtocolError as exc:
            self._abort(ConnectionError(f"bad reply stream from redis: {exc!r}"))

    def connection_lost(self, exc: BaseException | None) -> None:
        failed = tls_error(exc, "redis") if exc is not None else None
        if failed is not None:  # e.g. the server wanted a client certificate (mutual TLS)
            self._fail(failed)
            return
        self._fail(ConnectionError(f"connection to redis lost: {exc or 'closed by the server'}"))

    # -- commands --
    def command(self, frame: bytes) -> asyncio.Future[Any]:
        """Queue one packed command; the future resolves with its reply."""
        return self.command_with_value(frame, b"", b"")

    def command_with_value(
        self, head: bytes, value: bytes | memoryview, tail: bytes
    ) -> asyncio.Future[Any]:
        """Queue head + value + tail without first joining a large value into one bytes."""
        fut = self.loop.create_future()
        if self.lost is not None:
            fut.set_exception(self.lost)
            return fut
        if not self.pending:
            self.last_progress = self.loop.time()
        self.pending.append(fut)
        out = self.out
        out += head
        out += value
        out += tail
        if not self.flush_scheduled:
            self.flush_scheduled = True
            self.loop.call_soon(self._flush)
        return fut

    def _flush(self) -> None:
        self.flush_scheduled = False
        if self.out and self.transport is not None and self.lost is None:
            self.transport.write(bytes(self.out))
        self.out.clear()

    def _watch(self) -> None:
        if self.lost is not None:
            return
        if self.pending and self.loop.time() - self.last_progress > self.timeout:
            self._abort(TimeoutError(f"redis did not answer within {self.timeout:g}s"))
            return
        self.watchdog = self.loop.call_later(self.timeout / 4, self._watch)

    def _abort(self, exc: BaseException) -> None:
        self._fail(exc)
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, exc: BaseException) -> None:
        if self.lost is None:
            self.lost = exc
        if self.watchdog is not None:
            self.watchdog.cancel()
        while self.pending:
            fut = self.pending.popleft()
            if not fut.done():
                fut.set_exception(self.lost)
        self.out.clear()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self._fail(ConnectionError("connection closed by the workbench"))


def _ssl_context(target: RedisTarget) -> ssl.SSLContext | None:
    return target.tls.context() if target.tls else None


async def _connect(target: RedisTarget, protocol: Callable[[], P]) -> P:
    """A connection to the target; a refused or failed connect names the address."""
    loop = asyncio.get_running_loop()
    ctx = _ssl_context(target)
    server_hostname = (target.tls.sni or None) if target.tls else None
    connect = loop.create_connection(
        protocol,
        target.host,
        target.port,
        ssl=ctx,
        server_hostname=server_hostname if ctx else None,
    )
    try:
        _, proto = await asyncio.wait_for(connect, timeout=target.connect_timeout)
    except TimeoutError:
        if target.tls:
            raise plain_port_timeout(
                host_port(target.host, target.port), target.connect_timeout
            ) from None
        raise TimeoutError(
            f"connecting to redis at {host_port(target.host, target.port)} timed out after "
            f"{target.connect_timeout:g}s"
        ) from None
    except OSError as exc:
        failed = tls_error(exc, host_port(target.host, target.port))
        if failed is not None:
            raise failed from None
        raise ConnectionRefusedError(
            f"cannot connect to redis at {host_port(target.host, target.port)}: "
            f"{exc.strerror or exc}"
        ) from None
    return proto


async def open_resp(target: RedisTarget) -> RespProtocol:
    """Connect, log in and select the database; errors name what went wrong."""
    loop = asyncio.get_running_loop()
    proto = await _connect(target, lambda: RespProtocol(loop, target.timeout))
    try:
        if target.password is not None:
            auth = (target.username, target.password) if target.username else (target.password,)
            check(await proto.command(pack("AUTH", *auth)))
        if target.db:
            check(await proto.command(pack("SELECT", target.db)))
        # One answered command before the load: a TLS port drops a plain client here, and a
        # server that wants a client certificate says so here, outside any measured op.
        check(await proto.command(pack("PING")))
    except ConnectionError as exc:
        proto.close()
        if target.tls and not target.tls.cert:
            raise closed_after_handshake(host_port(target.host, target.port), exc) from None
        if target.tls:
            raise
        raise ConnectionError(
            f"redis at {host_port(target.host, target.port)} dropped the connection before "
            f"answering ({exc}): is it a TLS port? (use rediss://)"
        ) from None
    except BaseException:
        proto.close()
        raise
    return proto


class Multiplexed:
    """K shared RESP connections, used round robin, reopened after a failure."""

    def __init__(self, target: RedisTarget, connections: int) -> None:
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
                self.protos[i] = await pending
            finally:
                self.opening[i] = None
            return self.protos[i]  # type: ignore[return-value]
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
        return await self.call(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key))  # type: ignore[no-any-return]

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


class _PushProtocol(RespProtocol):
    """A subscribed connection: every reply is a push, handed to a queue."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop, timeout=0)
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while (reply := self.reader.gets()) is not False:
            self.queue.put_nowait(reply)

    def connection_lost(self, exc: BaseException | None) -> None:
        super().connection_lost(exc)
        self.queue.put_nowait(self.lost)


async def subscribe(target: RedisTarget, channels: Sequence[bytes]) -> AsyncIterator[bytes]:
    """A dedicated connection subscribed to `channels`; returns once Redis confirmed them all."""
    loop = asyncio.get_running_loop()
    proto = await _connect(target, lambda: _PushProtocol(loop))
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
