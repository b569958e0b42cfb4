"""The ``lean`` strategy: a minimal HTTP/1.1 client on asyncio, one connection per client.

aiohttp's client costs several times more per request than the servers under test spend
answering one (PERFORMANCE.md measured the same gap for redis-py), so with it the
workbench measures mostly itself. This client does what ``wrk`` does: each virtual
client holds one keep-alive connection and writes each request in one piece; httptools
(llhttp, as uvicorn uses) parses each response into the same classification as the
aiohttp strategies. Get and delete requests are kept as ready
bytes per key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from typing import Any, cast
from urllib.parse import urlsplit

import httptools

from workbench.sdk import (
    AdapterError,
    TlsSettings,
    closed_after_handshake,
    plain_port_timeout,
    tls_error,
)
from workbench_http.config import CONDITIONS, Config, flatten
from workbench_http.probe import probe
from workbench_http.templates import UrlTemplate
from workbench_http.tls_errors import PLAIN_ON_TLS, address

REQUEST_CACHE_SIZE = 200_000  # ready requests kept per template and worker

# status, reason, is JSON, body, the server closes the connection after it
Answer = tuple[int, str, bool, bytes, bool]


class LeanProtocol(asyncio.Protocol):
    """One connection: at most one request in flight, its answer delivered to `waiter`.

    httptools (llhttp) parses the answer as it arrives: the body comes in pieces that
    are joined once, a 1xx is skipped as an interim answer, and a Content-Length beside
    a Transfer-Encoding (or two lengths) is a protocol error, never a guess.
    """

    def __init__(self, tls: TlsSettings | None = None) -> None:
        self.tls = tls
        self.answered = False  # an answer came on this connection
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[Answer] | None = None
        self.head_only = False
        self.closed = False
        self.reason = b""
        self.is_json = False
        self.delimited = False  # a Content-Length or Transfer-Encoding was given
        self.final_head = False  # the head of the final (not 1xx) answer has been read
        self.body: list[bytes] = []
        self.unsolicited = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream connection (TCP, TLS) is given a Transport, not only a BaseTransport.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(AdapterError("protocol", "the server switched protocols (101)"))
        except httptools.HttpParserError as exc:
            self._fail(AdapterError("protocol", f"not a valid HTTP/1.x answer: {exc}"))
        else:
            if self.unsolicited:
                self._fail(AdapterError("protocol", "an answer to no request"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.final_head and not self.delimited:
            # No length and not chunked: the body ran to the end of the connection.
            self._answer(close=True)
            return
        reason = f"{type(exc).__name__}: {exc}" if exc else "closed by the server"
        if exc is not None and self.tls:
            failed = tls_error(exc, "the server")
            if failed is not None:  # an alert, e.g. a client certificate required
                self._fail(failed)
                return
        if self.tls and not self.tls.cert and not self.answered:
            self._fail(closed_after_handshake("the server", exc))
            return
        if not self.tls and not self.answered:
            reason += PLAIN_ON_TLS
        self._fail(AdapterError("connection", f"connection lost: {reason}"))

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    # llhttp's callbacks, in the order of an answer.

    def on_message_begin(self) -> None:
        if self.waiter is None:
            self.unsolicited = True
        self.reason = b""
        self.is_json = self.delimited = self.final_head = False
        self.body = []

    def on_status(self, reason: bytes) -> None:
        self.reason += reason  # may come in pieces

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"content-type":
            self.is_json = value.partition(b";")[0].strip().lower() == b"application/json"
        elif name == b"content-length" or name == b"transfer-encoding":
            self.delimited = True

    def on_headers_complete(self) -> None:
        if self.parser.get_status_code() < 200:
            return  # 1xx: an interim answer; the final one follows
        self.final_head = True
        if self.head_only:
            # The answer to HEAD has no body, whatever its Content-Length says; llhttp
            # cannot be told so, and gets a fresh parser for the next answer.
            self._answer(close=not self.parser.should_keep_alive())
            self.parser = httptools.HttpResponseParser(self)

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        if self.final_head:
            self._answer(close=not self.parser.should_keep_alive())

    def _answer(self, close: bool) -> None:
        self.final_head = False
        self.answered = True
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            body = b"".join(self.body)
            reason = self.reason.decode("latin-1")
            waiter.set_result((self.parser.get_status_code(), reason, self.is_json, body, close))

    def _fail(self, exc: AdapterError) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)
        self.abort()


class LeanConnection:
    """The worker's side: where to connect, and the ready parts of every request."""

    def __init__(self, config: Config) -> None:
        self.config = config
        parts = urlsplit(config.base_url)
        self.host = parts.hostname or "127.0.0.1"
        default = 443 if parts.scheme == "https" else 80
        self.port = default if parts.port is None else parts.port  # 0 is refused, not 80
        self.ssl: ssl.SSLContext | None = config.ssl_context()
        self.server_hostname = (config.tls.sni or None) if config.tls else None
        # A Host among the user's headers stands for the URL's (aiohttp's way): two made
        # every request a 400.
        given = {k.lower() for k in config.headers}
        host = "" if "host" in given else f"Host: {parts.netloc}\r\n"
        extra = "".join(f"{k}: {v}\r\n" for k, v in config.headers.items())
        self.common = f"{host}{extra}"
        self.clients: list[LeanClient] = []
        self.caches: dict[int, dict[bytes, bytes]] = {}
        self.stats_request = (
            f"GET {urlsplit(config.base_url).path.rstrip('/')}{config.stats_path} HTTP/1.1\r\n"
            f"{self.common}\r\n".encode("latin-1")
            if config.stats_path
            else b""
        )

    def bodyless(self, template: UrlTemplate, key: bytes) -> bytes:
        """A get's or delete's request for `key` ({ttl} is empty there), kept for reuse."""
        cache = self.caches.setdefault(id(template), {})
        request = cache.get(key)
        if request is None:
            request = (
                f"{template.method} {template.target(key, None)} HTTP/1.1\r\n{self.common}\r\n"
            ).encode("latin-1")
            if len(cache) >= REQUEST_CACHE_SIZE:
                cache.clear()
            cache[key] = request
        return request

    async def client(self) -> LeanClient:
        client = LeanClient(self)
        self.clients.append(client)
        if self.ssl is not None:
            # The handshake happens here, before the load, never inside a measured op.
            await client._connect()
        return client

    async def server_stats(self) -> dict[str, Any]:
        if not self.stats_request:
            return {}
        client = LeanClient(self)
        try:
            status, _, _, body, _ = await client.exchange(self.stats_request, "GET")
        finally:
            await client.close()
        if status != 200:
            return {}
        data = json.loads(body)
        return flatten(data) if isinstance(data, dict) else {}

    async def close(self) -> None:
        for client in self.clients:
            await client.close()
        self.clients.clear()


def _expire(waiter: asyncio.Future[Answer], proto: LeanProtocol, seconds: float) -> None:
    if not waiter.done():
        waiter.set_exception(AdapterError("timeout", f"no answer within {seconds:g}s"))
        proto.abort()  # a late answer must not be taken for the next request's


class LeanClient:
    """A virtual client: one keep-alive connection, opened on first use and after a close."""

    __slots__ = ("config", "conn", "proto")

    def __init__(self, conn: LeanConnection) -> None:
        self.conn = conn
        self.config = conn.config
        self.proto: LeanProtocol | None = None

    async def _connect(self) -> LeanProtocol:
        conn = self.conn
        loop = asyncio.get_running_loop()
        try:
            _, proto = await asyncio.wait_for(
                loop.create_connection(
                    lambda: LeanProtocol(self.config.tls),
                    conn.host,
                    conn.port,
                    ssl=conn.ssl,
                    server_hostname=conn.server_hostname,
                ),
                self.config.connect_timeout or None,
            )
        except TimeoutError:
            if conn.ssl is not None:  # a plain port waits for a request, never answering
                seconds = self.config.connect_timeout
                raise plain_port_timeout(address(self.config), seconds) from None
            raise AdapterError("timeout", "connecting timed out") from None
        except OSError as exc:
            failed = tls_error(exc, address(self.config))
            if failed is not None:
                raise failed from None
            raise AdapterError("connection", f"{type(exc).__name__}: {exc}") from None
        self.proto = proto
        return proto

    async def exchange(self, request: bytes, method: str, body: bytes = b"") -> Answer:
        proto = self.proto
        if proto is None or proto.closed:
            proto = await self._connect()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Answer] = loop.create_future()
        proto.waiter = waiter
        proto.head_only = method == "HEAD"
        transport = proto.transport
        assert transport is not None
        if body:
            transport.writelines((request, body))
        else:
            transport.write(request)
        seconds = self.config.total_timeout
        timer = loop.call_later(seconds, _expire, waiter, proto, seconds) if seconds else None
        try:
            answer = await waiter
        finally:
            if timer is not None:
                timer.cancel()
        if answer[4]:
            proto.abort()
        return answer

    async def get(self, key: bytes) -> bytes | None:
        c = self.config
        t = c.get
        status, reason, is_json, body, _ = await self.exchange(self.conn.bodyless(t, key), t.method)
        return c.got(status, is_json, body, t.text, reason)

    async def _store(
        self, key: bytes, value: bytes | memoryview, ttl: float | None, condition: str = ""
    ) -> tuple[int, bytes, str, str | None]:
        """The set request (a conditional write's precondition header in `condition`)."""
        c = self.config
        t = c.set
        data = c.body.render(key, value, ttl)
        request = (
            f"{t.method} {t.target(key, ttl)} HTTP/1.1\r\n{self.conn.common}{condition}"
            f"Content-Type: {c.body.content_type}\r\nContent-Length: {len(data)}\r\n\r\n"
        ).encode("latin-1")
        status, reason, _, body, _ = await self.exchange(request, t.method, data)
        return status, body, t.text, reason

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        self.config.was_set(*await self._store(key, value, ttl))

    async def add(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        condition = f"{CONDITIONS['add']}: *\r\n"
        return self.config.stored_if(*await self._store(key, value, ttl, condition))

    async def replace(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        condition = f"{CONDITIONS['replace']}: *\r\n"
        return self.config.stored_if(*await self._store(key, value, ttl, condition))

    async def delete(self, key: bytes) -> bool:
        c = self.config
        t = c.delete
        if t is None:
            raise c.no_delete()
        status, reason, _, body, _ = await self.exchange(self.conn.bodyless(t, key), t.method)
        return c.deleted(status, body, t.text, reason)

    async def close(self) -> None:
        proto, self.proto = self.proto, None
        if proto is not None and proto.transport is not None:
            with contextlib.suppress(Exception):
                proto.transport.close()


async def connect_lean(system: dict[str, Any], strategy: dict[str, Any]) -> LeanConnection:
    config = Config.from_options(system)
    await probe(config)
    return LeanConnection(config)
