"""The aiohttp strategies: ``keep-alive`` (a shared pool) and ``new-connection``."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from yarl import URL

from workbench.sdk import AdapterError
from workbench_http.config import CONDITIONS, Config, flatten
from workbench_http.probe import probe
from workbench_http.templates import JSON
from workbench_http.tls_errors import plain_on_tls_hint, refused, tls_failure


def _io_error(exc: Exception, config: Config, answered: bool) -> Exception:
    """aiohttp's exceptions in the engine's kinds."""
    if isinstance(exc, asyncio.TimeoutError | aiohttp.ServerTimeoutError):
        return AdapterError("timeout", str(exc) or "timed out")
    if config.tls is not None:
        failed = tls_failure(exc, config) or refused(exc, config, answered)
        if failed is not None:
            return failed
    if isinstance(exc, aiohttp.ClientConnectionError):
        hint = plain_on_tls_hint(exc, config)
        return AdapterError("connection", f"{type(exc).__name__}: {exc}{hint}")
    return AdapterError("protocol", f"{type(exc).__name__}: {exc}")


def server_name(config: Config) -> str | None:
    """The name sent (SNI) and checked: tls_sni, else none (aiohttp's default: loopback
    certificates rarely name 127.0.0.1, so the name is checked only when tls_sni gives one)."""
    tls = config.tls
    return tls.sni if tls and tls.sni else None


class HttpConnection:
    """One aiohttp session per worker; every virtual client of the worker shares it."""

    def __init__(
        self, config: Config, connector: aiohttp.TCPConnector, pool: int | None = None
    ) -> None:
        self.config = config
        self.pool = pool  # keep-alive: connections the pool may hold (0: no limit)
        self.answered = False  # an answer came: a later drop is no refusal (tls_errors.py)
        self.session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(
                total=config.total_timeout or None, sock_connect=config.connect_timeout or None
            ),
            headers=config.headers,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("User-Agent",),
        )

    async def client(self) -> HttpClient:
        return HttpClient(self)

    async def open_pool(self, clients: int) -> None:
        """Keep-alive: the pool's connections opened before the load, one per client (up to
        the pool's size), so their TCP and TLS handshakes are never inside a measured op.

        Each is opened by a HEAD of the base URL, all at once so that none reuses another's
        connection. A failure is left to the ops, which count it by its kind."""
        if self.pool is None:
            return
        count = min(clients, self.pool) if self.pool else clients
        url = URL(self.config.base_url, encoded=True)
        sni = server_name(self.config)

        async def head() -> None:
            async with self.session.head(url, allow_redirects=False, server_hostname=sni) as resp:
                await resp.read()

        await asyncio.gather(*(head() for _ in range(count)), return_exceptions=True)

    async def server_stats(self) -> dict[str, Any]:
        if not self.config.stats_path:
            return {}
        url = URL(self.config.base_url + self.config.stats_path, encoded=True)
        sni = server_name(self.config)
        async with self.session.get(url, allow_redirects=False, server_hostname=sni) as resp:
            if resp.status != 200:
                return {}
            data = await resp.json(content_type=None)
        return flatten(data) if isinstance(data, dict) else {}

    async def close(self) -> None:
        await self.session.close()


# Every request is sent with allow_redirects=False: a redirect to another host would get
# past the remote-target guard, so a 3xx answer is counted as error http-3xx instead.


class HttpClient:
    """A virtual client: the templates over the worker's shared session."""

    __slots__ = ("config", "conn", "session", "sni")

    def __init__(self, conn: HttpConnection) -> None:
        self.config = conn.config
        self.session = conn.session
        self.conn = conn
        self.sni = server_name(conn.config)

    async def get(self, key: bytes) -> bytes | None:
        c = self.config
        url = c.get.url(key)
        try:
            async with self.session.request(
                c.get.method, url, allow_redirects=False, server_hostname=self.sni
            ) as resp:
                status = resp.status
                self.conn.answered = True
                body = await resp.read()
                is_json = resp.content_type == JSON
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _io_error(exc, c, self.conn.answered) from exc
        return c.got(status, is_json, body, url.path_qs, resp.reason)

    async def _store(
        self, key: bytes, value: bytes | memoryview, ttl: float | None, headers: dict[str, str]
    ) -> tuple[int, bytes, str, str | None]:
        """The set request (with a conditional write's precondition in `headers`)."""
        c = self.config
        url = c.set.url(key, ttl)
        data = c.body.render(key, value, ttl)
        try:
            async with self.session.request(
                c.set.method,
                url,
                data=data,
                headers={"Content-Type": c.body.content_type, **headers},
                allow_redirects=False,
                server_hostname=self.sni,
            ) as resp:
                status = resp.status
                self.conn.answered = True
                body = await resp.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _io_error(exc, c, self.conn.answered) from exc
        return status, body, url.path_qs, resp.reason

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        self.config.was_set(*await self._store(key, value, ttl, {}))

    async def add(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        headers = {CONDITIONS["add"]: "*"}
        return self.config.stored_if(*await self._store(key, value, ttl, headers))

    async def replace(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> str:
        headers = {CONDITIONS["replace"]: "*"}
        return self.config.stored_if(*await self._store(key, value, ttl, headers))

    async def delete(self, key: bytes) -> bool:
        c = self.config
        if c.delete is None:
            raise c.no_delete()
        url = c.delete.url(key)
        try:
            async with self.session.request(
                c.delete.method, url, allow_redirects=False, server_hostname=self.sni
            ) as resp:
                status = resp.status
                self.conn.answered = True
                body = await resp.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _io_error(exc, c, self.conn.answered) from exc
        return c.deleted(status, body, url.path_qs, resp.reason)

    async def close(self) -> None:
        return None


async def connect_keep_alive(system: dict[str, Any], strategy: dict[str, Any]) -> HttpConnection:
    config = Config.from_options(system)
    await probe(config)
    connector = aiohttp.TCPConnector(
        limit=strategy["pool_size"],
        limit_per_host=0,
        keepalive_timeout=60,
        ttl_dns_cache=None,
        ssl=config.ssl_context() or True,
    )
    return HttpConnection(config, connector, pool=strategy["pool_size"])


async def connect_new(system: dict[str, Any], strategy: dict[str, Any]) -> HttpConnection:
    config = Config.from_options(system)
    await probe(config)
    connector = aiohttp.TCPConnector(limit=0, force_close=True, ssl=config.ssl_context() or True)
    return HttpConnection(config, connector)
