"""A lean RESP2 connection: one TCP (or TLS) connection whose commands are written once per
turn of the event loop and whose replies (a RESP server answers in order) are matched to
their callers first in, first out, parsed by hiredis.

Any system that speaks RESP uses it as it is: errors name the system (`RespSystem`).
Nothing here reads the clock except the watchdog that turns a silent server into timeouts
instead of a hang.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar, cast

import hiredis

from workbench.sdk.adapter import AdapterError
from workbench.sdk.resp.target import RespTarget
from workbench.sdk.servers import host_port
from workbench.sdk.tls import closed_after_handshake, plain_port_timeout, tls_error

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
    """An error a RESP server sends before closing a connection it will not serve."""
    return str(reply).startswith(("DENIED", "ERR max number of clients"))


def unasked(reply: Any, system: str) -> Exception:
    """Why a reply came that no command asked for, or a refusal ahead of the replies.
    A RESP server speaks first only to refuse a connection (protected mode, too many clients),
    and closes it after the error: the connection's every command fails with that."""
    if isinstance(reply, hiredis.ReplyError):
        first = str(reply).split(". ", 1)[0].rstrip(".")  # protected mode's advice runs on
        return AdapterError("refused", f"{system} closed the connection after refusing it: {first}")
    return ConnectionError(
        f"bad reply stream from {system}: a reply no command asked for ({reply!r:.80})"
    )


class RespProtocol(asyncio.Protocol):
    """One TCP connection: a write buffer flushed once per loop turn, FIFO reply futures."""

    def __init__(self, loop: asyncio.AbstractEventLoop, timeout: float, system: str) -> None:
        self.loop = loop
        self.system = system
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
        # A stream connection (TCP, TLS) is given a Transport, not only a BaseTransport.
        self.transport = cast(asyncio.Transport, transport)
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
                    self._abort(unasked(reply, self.system))
                    return
                fut = pending.popleft()
                if not fut.done():
                    fut.set_result(reply)
        except hiredis.ProtocolError as exc:
            self._abort(ConnectionError(f"bad reply stream from {self.system}: {exc!r}"))

    def connection_lost(self, exc: BaseException | None) -> None:
        failed = tls_error(exc, self.system) if exc is not None else None
        if failed is not None:  # e.g. the server wanted a client certificate (mutual TLS)
            self._fail(failed)
            return
        self._fail(
            ConnectionError(f"connection to {self.system} lost: {exc or 'closed by the server'}")
        )

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
            self._abort(TimeoutError(f"{self.system} did not answer within {self.timeout:g}s"))
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


def _ssl_context(target: RespTarget) -> ssl.SSLContext | None:
    return target.tls.context() if target.tls else None


async def connect(target: RespTarget, protocol: Callable[[], P]) -> P:
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
            f"connecting to {target.system.name} at {host_port(target.host, target.port)} "
            f"timed out after {target.connect_timeout:g}s"
        ) from None
    except OSError as exc:
        failed = tls_error(exc, host_port(target.host, target.port))
        if failed is not None:
            raise failed from None
        raise ConnectionRefusedError(
            f"cannot connect to {target.system.name} at {host_port(target.host, target.port)}: "
            f"{exc.strerror or exc}"
        ) from None
    return proto


async def open_resp(target: RespTarget) -> RespProtocol:
    """Connect, log in and select the database; errors name what went wrong."""
    loop = asyncio.get_running_loop()
    proto = await connect(target, lambda: RespProtocol(loop, target.timeout, target.system.name))
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
            f"{target.system.name} at {host_port(target.host, target.port)} dropped the connection "
            f"before answering ({exc}): is it a TLS port? ({target.system.advice})"
        ) from None
    except BaseException:
        proto.close()
        raise
    return proto
