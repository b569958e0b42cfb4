"""redis-py connect callbacks for a TLS target given no client certificate: one answered
PING right after the handshake, so a server that requires a client certificate refuses
there, before any measured op, and the refusal is named under the ``tls`` kind whether the
client read the server's alert or only the reset that follows it (TLS 1.3, see
`workbench.sdk.tls.closed_after_handshake`)."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import redis

from workbench.sdk.servers import host_port
from workbench.sdk.tls import closed_after_handshake, tls_cause


def _refusal(conn: Any, exc: redis.ConnectionError) -> Exception:
    """The alert when it was read; else (a reset, or OpenSSL's EOF on a write) the close."""
    address = host_port(conn.host, conn.port)
    failed = tls_cause(exc, address)
    if failed is None or _eof(exc):
        return closed_after_handshake(address, exc)
    return failed


def _eof(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):  # bounded: a chain of wrapped errors is short
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLEOFError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


async def _check_async(conn: Any) -> None:
    try:
        await conn.on_connect()  # its first command (CLIENT SETINFO, AUTH …) meets the refusal
        await conn.send_command("PING")
        await conn.read_response()
    except redis.ConnectionError as exc:
        await conn.disconnect()
        raise _refusal(conn, exc) from exc


def _check_sync(conn: Any) -> None:
    try:
        conn.on_connect()
        conn.send_command("PING")
        conn.read_response()
    except redis.ConnectionError as exc:
        conn.disconnect()
        raise _refusal(conn, exc) from exc


def connect_check(asyncio: bool) -> Callable[[Any], Awaitable[None] | None]:
    """The `redis_connect_func` of a redis-py connection (async or blocking)."""
    return _check_async if asyncio else _check_sync
