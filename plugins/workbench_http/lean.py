"""The ``lean`` strategy: a minimal HTTP/1.1 client on asyncio, one connection per client.

aiohttp's client costs several times more per request than the servers under test spend
answering one (PERFORMANCE.md measured the same gap for redis-py), so with it the
workbench measures mostly itself. This client does what ``wrk`` does: each virtual
client holds one keep-alive connection and writes each request in one piece; a response
is parsed by hand (status line, ``Content-Length``, ``Transfer-Encoding: chunked``,
``Connection: close``, a body read to the end of the connection) into the same
classification as the aiohttp strategies. Get and delete requests are kept as ready
bytes per key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from typing import Any
from urllib.parse import urlsplit

from workbench.adapter import AdapterError
from workbench_http.config import Config, flatten
from workbench_http.probe import probe
from workbench_http.templates import UrlTemplate

MAX_HEAD = 64 * 1024
REQUEST_CACHE_SIZE = 200_000  # ready requests kept per template and worker

# status, reason, is JSON, body, the server closes the connection after it
Answer = tuple[int, str, bool, bytes, bool]


class LeanProtocol(asyncio.Protocol):
    """One connection: at most one request in flight, its answer delivered to `waiter`."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[Answer] | None = None
        self.head_only = False
        self.closed = False
        self._head_end = -1
        self._head: tuple[int, str, bool, int | None, bool, bool] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        try:
            answer = self._parse()
        except AdapterError as exc:
            self.waiter = None
            waiter.set_exception(exc)
            self.abort()
            return
        if answer is not None:
            self.waiter = None
            waiter.set_result(answer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiter = self.waiter
        self.waiter = None
        if waiter is None or waiter.done():
            return
        head = self._head
        if head is not None and head[3] is None and not head[4]:
            # No length and not chunked: the body ran to the end of the connection.
            status, reason, is_json = head[0], head[1], head[2]
            waiter.set_result(
                (status, reason, is_json, bytes(self.buf[self._head_end + 4 :]), True)
            )
            return
        reason = f"{type(exc).__name__}: {exc}" if exc else "closed by the server"
        waiter.set_exception(AdapterError("connection", f"connection lost: {reason}"))

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _parse(self) -> Answer | None:
        buf = self.buf
        if self._head is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise AdapterError("protocol", "a response head longer than 64 KiB")
                return None
            self._head_end = end
            self._head = _parse_head(bytes(buf[:end]), self.head_only)
        status, reason, is_json, length, chunked, close = self._head
        start = self._head_end + 4
        if chunked:
            parsed = _dechunk(buf, start)
            if parsed is None:
                return None
            body, end = parsed
        elif length is not None:
            end = start + length
            if len(buf) < end:
                return None
            body = bytes(buf[start:end])
        else:
            return None  # read to the end of the connection
        del buf[:end]
        self._head = None
        self._head_end = -1
        return status, reason, is_json, body, close


def _parse_head(head: bytes, head_only: bool) -> tuple[int, str, bool, int | None, bool, bool]:
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise AdapterError("protocol", f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    status = int(code)
    length: int | None = None
    chunked = is_json = False
    close = version == "HTTP/1.0"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            try:
                length = int(value)
            except ValueError:
                raise AdapterError("protocol", f"a bad Content-Length: {value!r}") from None
        elif name == "transfer-encoding":
            chunked = "chunked" in value.lower()
        elif name == "content-type":
            is_json = value.partition(";")[0].strip().lower() == "application/json"
        elif name == "connection":
            token = value.strip().lower()
            close = token == "close" or (close and token != "keep-alive")
    if head_only or status in (204, 304) or 100 <= status < 200:
        length, chunked = 0, False
    return status, reason, is_json, length, chunked, close


def _dechunk(buf: bytearray, start: int) -> tuple[bytes, int] | None:
    """The body of a complete chunked message in `buf` from `start`, and where it ends."""
    parts = []
    pos = start
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size_text = bytes(buf[pos:eol]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise AdapterError("protocol", f"a bad chunk size: {size_text[:20]!r}") from None
        if size == 0:  # the last chunk; then trailers, if any, and an empty line
            p = eol + 2
            if len(buf) < p + 2:
                return None
            if buf[p : p + 2] == b"\r\n":
                return b"".join(parts), p + 2
            end = buf.find(b"\r\n\r\n", p)
            return None if end < 0 else (b"".join(parts), end + 4)
        data_start = eol + 2
        if len(buf) < data_start + size + 2:
            return None
        parts.append(bytes(buf[data_start : data_start + size]))
        pos = data_start + size + 2


class LeanConnection:
    """The worker's side: where to connect, and the ready parts of every request."""

    def __init__(self, config: Config) -> None:
        self.config = config
        parts = urlsplit(config.base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl: ssl.SSLContext | None = (
            ssl.create_default_context() if parts.scheme == "https" else None
        )
        host_header = parts.netloc
        extra = "".join(f"{k}: {v}\r\n" for k, v in config.headers.items())
        self.common = f"Host: {host_header}\r\n{extra}"
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
                loop.create_connection(LeanProtocol, conn.host, conn.port, ssl=conn.ssl),
                self.config.connect_timeout or None,
            )
        except TimeoutError:
            raise AdapterError("timeout", "connecting timed out") from None
        except OSError as exc:
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

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        c = self.config
        t = c.set
        data = c.body.render(key, value, ttl)
        request = (
            f"{t.method} {t.target(key, ttl)} HTTP/1.1\r\n{self.conn.common}"
            f"Content-Type: {c.body.content_type}\r\nContent-Length: {len(data)}\r\n\r\n"
        ).encode("latin-1")
        status, reason, _, body, _ = await self.exchange(request, t.method, data)
        c.was_set(status, body, t.text, reason)

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
