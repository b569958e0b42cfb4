"""HTTP caches: a generic adapter on aiohttp, configured by request templates.

A template is ``"METHOD /path?query"`` relative to ``base_url``, with placeholders:

- ``{key}``: the key, percent-encoded (every byte outside ``A-Z a-z 0-9 - . _ ~``); in a
  JSON body, the key as UTF-8 text;
- ``{ttl}``: the TTL in seconds, or empty when the operation has none.

``get`` (default ``GET /lookup?key={key}``, the proxy of ``001_*.txt``) reads a key.
The response status decides: ``hit_status`` (default 200) is a hit, ``miss_status``
(default 404) a miss, anything else an error counted as ``http-NNN``. On a hit the value
is the JSON field ``value_field`` (default ``value``) when the response is JSON, else the
raw body; a JSON hit whose value is null, or that lacks a true ``hit_field`` when one is
set, counts as a miss.

``set`` (default ``POST /``) sends ``set_body``:

- exactly ``{value}``: the value's raw bytes (``application/octet-stream``);
- anything else is a JSON template (default ``{"key": "{key}", "value": "{value}",
  "ttl": {ttl}}``, the store of ``004_*.txt``) where ``{key}`` and ``{value}`` are
  replaced by JSON-escaped text (write them inside quotes) and ``{ttl}`` by a number or
  ``null``. JSON carries text, not bytes, so a value becomes text by ``value_encoding``:
  ``latin-1`` (default; each byte is the code point of the same number, so a server
  stores exactly as many characters as the value has bytes, and any bytes come back
  identical) or ``base64``. Hits are decoded the same way (with latin-1, text holding
  characters beyond U+00FF, written by someone else, is returned as its UTF-8 bytes).

A set succeeds on a ``set_status``; ``delete`` (no default: strategies then reject a
delete at run time, counted as ``unsupported``) answers True on ``delete_status``, False
on a ``miss_status``. Connection failures count as ``connection``, timeouts as
``timeout``, unreadable answers as ``protocol``.

Strategies: ``keep-alive`` (one aiohttp session per worker whose connection pool of
``pool_size`` is shared by the worker's virtual clients), ``new-connection`` (aiohttp, a
new TCP connection for every request) and ``lean`` (no aiohttp: one keep-alive
connection per virtual client and a minimal HTTP/1.1 client, as wrk does, for when the
server rather than the client library is to be measured; see `workbench_http.lean`).
``base_url`` must be a loopback address.

With ``target.managed = true`` the workbench starts one of the reference servers of
`workbench_http.servers` (``target.server.kind``: ``caching-proxy``, with a throw-away
redis-server unless ``redis_url`` is given, or ``kv-store``) and points the templates at it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
from yarl import URL

from workbench.adapter import AdapterError, CacheSystem, ServerLauncher, Strategy
from workbench.engine.native import probe_connect
from workbench.errors import TargetError
from workbench.options import Option, OptionSet
from workbench.servers import (
    ServerProcess,
    process_memory,
    require_loopback,
    start_python_server,
    start_redis,
)
from workbench_http.lean import LeanConnection

DEFAULT_SET_BODY = '{"key": "{key}", "value": "{value}", "ttl": {ttl}}'
RAW_BODY = "{value}"
_PLACEHOLDER = re.compile(r"\{(key|value|ttl)\}")
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
_JSON = "application/json"
URL_CACHE_SIZE = 200_000  # URLs kept per template and worker


def _opt(where: str) -> str:
    return f"target.options.{where}"


def _check_base_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetError(
            f"expected an http:// URL such as http://127.0.0.1:8000; got {url!r}",
            _opt("base_url"),
        )
    require_loopback(parts.hostname, _opt("base_url"))
    return url.rstrip("/")


def _ttl_text(ttl: float | None) -> str:
    if ttl is None:
        return ""
    return str(int(ttl)) if float(ttl).is_integer() else repr(float(ttl))


class UrlTemplate:
    """``METHOD /path?query`` with {key} and {ttl}: renders request targets and URLs."""

    def __init__(self, text: str, base: str, option: str) -> None:
        method, _, path = text.strip().partition(" ")
        method, path = method.upper(), path.strip()
        if method not in _METHODS or not path.startswith("/"):
            raise TargetError(
                f"expected a template such as 'GET /lookup?key={{key}}'; got {text!r}",
                _opt(option),
            )
        if "{value}" in path:
            raise TargetError("{value} belongs in set_body, not in the URL", _opt(option))
        parts = urlsplit(base)
        self.method = method
        self.text = text
        self.origin = f"{parts.scheme}://{parts.netloc}"
        # literal, name, literal, name, ... of the request target (the base URL's own path
        # first, so that http://host/api plus /lookup asks for /api/lookup)
        self.parts = _PLACEHOLDER.split(parts.path.rstrip("/") + path)
        try:
            URL(self.origin + self.target(b"k", 1.0), encoded=True)
        except ValueError as exc:
            raise TargetError(f"not a valid URL template: {exc}", _opt(option)) from None
        self.has_ttl = "ttl" in self.parts[1::2]
        # Keys repeat, so their URLs are kept (quoting and parsing cost more than the
        # request's own formatting); a template with {ttl} is rendered every time.
        self.cache: dict[bytes, URL] = {}

    def target(self, key: bytes, ttl: float | None) -> str:
        """The request target (path and query), placeholders filled in and encoded."""
        parts = self.parts
        out = [parts[0]]
        for i in range(1, len(parts), 2):
            name = parts[i]
            out.append(quote(key, safe="") if name == "key" else quote(_ttl_text(ttl), safe=""))
            out.append(parts[i + 1])
        return "".join(out)

    def url(self, key: bytes, ttl: float | None = None) -> URL:
        if self.has_ttl:
            return URL(self.origin + self.target(key, ttl), encoded=True)
        cache = self.cache
        url = cache.get(key)
        if url is None:
            if len(cache) >= URL_CACHE_SIZE:
                cache.clear()
            url = cache[key] = URL(self.origin + self.target(key, ttl), encoded=True)
        return url


class BodyTemplate:
    """The set body: raw value bytes, or a JSON template with escaped placeholders."""

    def __init__(self, text: str, encoding: str) -> None:
        self.raw = text.strip() == RAW_BODY
        self.content_type = "application/octet-stream" if self.raw else _JSON
        self.parts = _PLACEHOLDER.split(text)
        self.to_text: Callable[[bytes | memoryview], str] = (
            (lambda v: base64.b64encode(v).decode("ascii"))
            if encoding == "base64"
            else (lambda v: bytes(v).decode("latin-1"))
        )
        if not self.raw:
            try:
                json.loads(self.render(b"k", b"v", 1.5))
                json.loads(self.render(b"k", b"v", None))
            except ValueError as exc:
                raise TargetError(
                    f"with placeholders filled in this is not JSON ({exc}); "
                    'write e.g. {"key": "{key}", "value": "{value}"}, or {value} for raw bytes',
                    _opt("set_body"),
                ) from None

    def render(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> bytes:
        if self.raw:
            return bytes(value)
        parts = self.parts
        out = [parts[0]]
        for i in range(1, len(parts), 2):
            name = parts[i]
            if name == "key":
                out.append(json.dumps(key.decode("utf-8", "replace"), ensure_ascii=False)[1:-1])
            elif name == "value":
                out.append(json.dumps(self.to_text(value), ensure_ascii=False)[1:-1])
            else:
                out.append("null" if ttl is None else _ttl_text(ttl))
            out.append(parts[i + 1])
        return "".join(out).encode("utf-8")


@dataclass
class Config:
    """The system options, checked and compiled once per worker."""

    base_url: str
    get: UrlTemplate
    set: UrlTemplate
    delete: UrlTemplate | None
    body: BodyTemplate
    headers: dict[str, str]
    hit_status: frozenset[int]
    miss_status: frozenset[int]
    set_status: frozenset[int]
    delete_status: frozenset[int]
    hit_field: str
    value_field: str
    from_text: Callable[[str], bytes]
    timeout: aiohttp.ClientTimeout
    total_timeout: float  # seconds, 0: none
    connect_timeout: float
    stats_path: str

    @classmethod
    def from_options(cls, o: dict[str, Any]) -> Config:
        base = _check_base_url(o["base_url"])
        headers: dict[str, str] = {}
        for line in o["headers"]:
            name, sep, value = line.partition(":")
            if not sep or not name.strip():
                raise TargetError(f"expected 'Name: value'; got {line!r}", _opt("headers"))
            headers[name.strip()] = value.strip()
        encoding = o["value_encoding"]
        return cls(
            base_url=base,
            get=UrlTemplate(o["get"], base, "get"),
            set=UrlTemplate(o["set"], base, "set"),
            delete=UrlTemplate(o["delete"], base, "delete") if o["delete"].strip() else None,
            body=BodyTemplate(o["set_body"], encoding),
            headers=headers,
            hit_status=_statuses(o["hit_status"], "hit_status"),
            miss_status=_statuses(o["miss_status"], "miss_status"),
            set_status=_statuses(o["set_status"], "set_status"),
            delete_status=_statuses(o["delete_status"], "delete_status"),
            hit_field=o["hit_field"],
            value_field=o["value_field"],
            from_text=(
                (lambda t: base64.b64decode(t, validate=True))
                if encoding == "base64"
                else _latin1_bytes
            ),
            timeout=aiohttp.ClientTimeout(
                total=o["timeout"] or None, sock_connect=o["connect_timeout"] or None
            ),
            total_timeout=o["timeout"],
            connect_timeout=o["connect_timeout"],
            stats_path=o["stats_path"],
        )

    # What an answer means; shared by every strategy.

    def got(
        self, status: int, is_json: bool, body: bytes, target: str, reason: str | None
    ) -> bytes | None:
        """A get's answer: the value, None for a miss, or raise an AdapterError."""
        if status in self.hit_status:
            if not is_json or not self.value_field:
                return None if self.hit_field else body
            try:
                data = json.loads(body)
            except ValueError as exc:
                raise AdapterError("protocol", f"a hit whose body is not JSON: {exc}") from None
            if not isinstance(data, dict):
                raise AdapterError("protocol", "a hit whose JSON body is not an object")
            if self.hit_field and not data.get(self.hit_field):
                return None
            value = data.get(self.value_field)
            if value is None:
                return None
            if not isinstance(value, str):
                value = json.dumps(value)
            try:
                return self.from_text(value)
            except ValueError as exc:
                raise AdapterError(
                    "protocol", f"a value not in {self.value_field!r}: {exc}"
                ) from None
        if status in self.miss_status:
            return None
        raise _status_error(self.get.method, target, status, reason, body)

    def was_set(self, status: int, body: bytes, target: str, reason: str | None) -> None:
        if status not in self.set_status:
            raise _status_error(self.set.method, target, status, reason, body)

    def deleted(self, status: int, body: bytes, target: str, reason: str | None) -> bool:
        if status in self.delete_status:
            return True
        if status in self.miss_status:
            return False
        assert self.delete is not None
        raise _status_error(self.delete.method, target, status, reason, body)

    def no_delete(self) -> AdapterError:
        return AdapterError(
            "unsupported",
            "no delete template: set target.options.delete, e.g. 'DELETE /?key={key}'",
        )


def _latin1_bytes(text: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:  # text another writer stored: its UTF-8 bytes
        return text.encode("utf-8", errors="surrogatepass")


def _statuses(values: list[str], option: str) -> frozenset[int]:
    try:
        codes = frozenset(int(v) for v in values)
    except ValueError:
        raise TargetError(f"expected HTTP status codes; got {values!r}", _opt(option)) from None
    if not all(100 <= c <= 599 for c in codes):
        raise TargetError(f"expected HTTP status codes; got {values!r}", _opt(option))
    return codes


def _status_error(
    method: str, target: str, status: int, reason: str | None, body: bytes
) -> AdapterError:
    snippet = body[:120].decode("utf-8", errors="replace")
    return AdapterError(f"http-{status}", f"{method} {target}: {status} {reason or ''} {snippet}")


def _io_error(exc: Exception) -> Exception:
    """aiohttp's exceptions in the engine's kinds."""
    if isinstance(exc, asyncio.TimeoutError | aiohttp.ServerTimeoutError):
        return AdapterError("timeout", str(exc) or "timed out")
    if isinstance(exc, aiohttp.ClientConnectionError):
        return AdapterError("connection", f"{type(exc).__name__}: {exc}")
    return AdapterError("protocol", f"{type(exc).__name__}: {exc}")


class HttpConnection:
    """One aiohttp session per worker; every virtual client of the worker shares it."""

    def __init__(self, config: Config, connector: aiohttp.TCPConnector) -> None:
        self.config = config
        self.session = aiohttp.ClientSession(
            connector=connector,
            timeout=config.timeout,
            headers=config.headers,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            skip_auto_headers=("User-Agent",),
        )

    async def client(self) -> HttpClient:
        return HttpClient(self)

    async def server_stats(self) -> dict[str, Any]:
        if not self.config.stats_path:
            return {}
        url = URL(self.config.base_url + self.config.stats_path, encoded=True)
        async with self.session.get(url) as resp:
            if resp.status != 200:
                return {}
            data = await resp.json(content_type=None)
        return _flatten(data) if isinstance(data, dict) else {}

    async def close(self) -> None:
        await self.session.close()


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        elif isinstance(v, int | float | str | bool):
            out[f"{prefix}{k}"] = v
    return out


class HttpClient:
    """A virtual client: the templates over the worker's shared session."""

    __slots__ = ("config", "session")

    def __init__(self, conn: HttpConnection) -> None:
        self.config = conn.config
        self.session = conn.session

    async def get(self, key: bytes) -> bytes | None:
        c = self.config
        url = c.get.url(key)
        try:
            async with self.session.request(c.get.method, url) as resp:
                status = resp.status
                body = await resp.read()
                is_json = resp.content_type == _JSON
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _io_error(exc) from exc
        return c.got(status, is_json, body, url.path_qs, resp.reason)

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        c = self.config
        url = c.set.url(key, ttl)
        data = c.body.render(key, value, ttl)
        try:
            async with self.session.request(
                c.set.method, url, data=data, headers={"Content-Type": c.body.content_type}
            ) as resp:
                status = resp.status
                body = await resp.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _io_error(exc) from exc
        c.was_set(status, body, url.path_qs, resp.reason)

    async def delete(self, key: bytes) -> bool:
        c = self.config
        if c.delete is None:
            raise c.no_delete()
        url = c.delete.url(key)
        try:
            async with self.session.request(c.delete.method, url) as resp:
                status = resp.status
                body = await resp.read()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise _io_error(exc) from exc
        return c.deleted(status, body, url.path_qs, resp.reason)

    async def close(self) -> None:
        return None


async def _probe(config: Config) -> None:
    """One TCP connection to the server, so that a server that is not there is one line."""
    parts = urlsplit(config.base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(parts.hostname, port), timeout=config.timeout.sock_connect or 5
        )
    except (TimeoutError, OSError) as exc:
        raise TargetError(
            f"cannot reach {config.base_url}: {str(exc) or type(exc).__name__}", _opt("base_url")
        ) from None
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()


async def _connect_keep_alive(system: dict[str, Any], strategy: dict[str, Any]) -> HttpConnection:
    config = Config.from_options(system)
    await _probe(config)
    connector = aiohttp.TCPConnector(
        limit=strategy["pool_size"], limit_per_host=0, keepalive_timeout=60, ttl_dns_cache=None
    )
    return HttpConnection(config, connector)


async def _connect_new(system: dict[str, Any], strategy: dict[str, Any]) -> HttpConnection:
    config = Config.from_options(system)
    await _probe(config)
    return HttpConnection(config, aiohttp.TCPConnector(limit=0, force_close=True))


async def _connect_lean(system: dict[str, Any], strategy: dict[str, Any]) -> LeanConnection:
    config = Config.from_options(system)
    await _probe(config)
    return LeanConnection(config)


# ---- the managed reference servers -------------------------------------------------------


@dataclass
class ProxyServer:
    """The caching proxy and, when the workbench started one for it, its redis-server."""

    proxy: ServerProcess
    redis: ServerProcess | None

    @property
    def pid(self) -> int:
        return self.proxy.pid

    @property
    def version(self) -> str:
        return self.proxy.version

    @property
    def target_options(self) -> dict[str, Any]:
        return self.proxy.target_options

    def memory(self) -> dict[str, int]:
        out = self.proxy.memory()
        if self.redis is not None:
            out |= {f"redis_{k}": v for k, v in process_memory(self.redis.pid).items()}
        return out

    def stop(self) -> None:
        try:
            self.proxy.stop()
        finally:
            if self.redis is not None:
                self.redis.stop()


def _duration_arg(seconds: float) -> str:
    return f"{seconds:g}s"


def start_server(options: dict[str, Any]) -> ServerProcess | ProxyServer:
    """Start the reference server `options["kind"]` on a free loopback port."""
    loop = ["--loop", options["loop"]]
    if options["kind"] == "kv-store":
        args = [
            "--mode", options["mode"],
            "--partitions", str(options["partitions"]),
            "--expiration", _duration_arg(options["expiration"]),
            "--cleanup-interval", _duration_arg(options["cleanup_interval"]),
            *loop,
        ]  # fmt: skip
        server = start_python_server(
            "workbench_http.servers.kv_store", args, version=f"kv-store ({options['mode']})"
        )
        server.target_options = {
            "base_url": f"http://{server.host}:{server.port}",
            "get": "GET /?key={key}",
            "delete": "DELETE /?key={key}",
            "stats_path": "/stats",
        }
        return server
    redis: ServerProcess | None = None
    url = options["redis_url"]
    if not url:
        redis = start_redis()
        url = redis.target_options["url"]
    args = [
        "--redis-url", url,
        "--max-keys", str(options["max_keys"]),
        "--ttl", _duration_arg(options["lru_ttl"]),
        "--rate-limit", f"{options['rate_limit']:g}",
        "--throttle-status", str(options["throttle_status"]),
        *loop,
    ]  # fmt: skip
    try:
        proxy = start_python_server(
            "workbench_http.servers.caching_proxy", args, version="caching-proxy"
        )
    except BaseException:
        if redis is not None:
            redis.stop()
        raise
    # get and set are the defaults; leaving them out lets a profile override them
    # (a get of "GET /lookup" is the document's bad-query scenario).
    proxy.target_options = {
        "base_url": f"http://{proxy.host}:{proxy.port}",
        "delete": "DELETE /lookup?key={key}",
        "stats_path": "/stats",
    }
    return ProxyServer(proxy, redis)


SERVER_OPTIONS = OptionSet(
    (
        Option(
            "kind",
            "choice",
            "caching-proxy",
            "reference server: the Redis caching proxy of 001 or the key-value store of 004",
            choices=("caching-proxy", "kv-store"),
        ),
        Option(
            "loop", "choice", "auto", "server event loop", choices=("auto", "uvloop", "asyncio")
        ),
        Option("mode", "choice", "dict", "kv-store storage", choices=("dict", "partitioned")),
        Option("partitions", "int", 16, "kv-store partitions (partitioned mode)", minimum=1),
        Option("expiration", "duration", 0.0, "kv-store TTL of keys set without one (0: never)"),
        Option("cleanup_interval", "duration", 10.0, "kv-store sweep of expired keys (0: off)"),
        Option("max_keys", "int", 1000, "caching-proxy LRU capacity (0: no LRU)", minimum=0),
        Option("lru_ttl", "duration", 10.0, "caching-proxy LRU entry lifetime (0: until evicted)"),
        Option(
            "rate_limit", "float", 0.0, "caching-proxy requests/s per client (0: off)", minimum=0
        ),
        Option(
            "throttle_status",
            "choice",
            "503",
            "caching-proxy status for a throttled request",
            choices=("503", "429"),
        ),
        Option(
            "redis_url",
            "str",
            "",
            "caching-proxy backing Redis (empty: a throw-away redis-server is started too)",
        ),
    )
)


plugin = CacheSystem(
    name="http",
    description="HTTP caches through request templates (aiohttp); reference proxy and store",
    options=OptionSet(
        (
            Option(
                "base_url",
                "str",
                "http://127.0.0.1:8000",
                "server URL, loopback only; the templates' paths are appended",
            ),
            Option("get", "str", "GET /lookup?key={key}", "get request; {key} is percent-encoded"),
            Option("set", "str", "POST /", "set request; {key} and {ttl} may appear in the URL"),
            Option(
                "set_body",
                "str",
                DEFAULT_SET_BODY,
                "set body: a JSON template with {key} {value} {ttl}, or {value} for raw bytes",
            ),
            Option("delete", "str", "", "delete request, e.g. 'DELETE /?key={key}' (empty: none)"),
            Option(
                "value_encoding",
                "choice",
                "latin-1",
                "how value bytes travel as JSON text (one code point per byte, or base64)",
                choices=("latin-1", "base64"),
            ),
            Option("value_field", "str", "value", "JSON field of a hit's value (empty: raw body)"),
            Option("hit_field", "str", "", "JSON field that must be present and true for a hit"),
            Option("hit_status", "list", ["200"], "statuses of a hit"),
            Option("miss_status", "list", ["404"], "statuses of a miss"),
            Option("set_status", "list", ["200", "201", "204"], "statuses of a successful set"),
            Option("delete_status", "list", ["200", "202", "204"], "statuses of a deletion"),
            Option("headers", "list", [], "extra request headers, each 'Name: value'"),
            Option("timeout", "duration", 10.0, "whole-request timeout (0: none)"),
            Option("connect_timeout", "duration", 5.0, "connection timeout (0: none)"),
            Option("stats_path", "str", "", "path of a JSON statistics endpoint, e.g. /stats"),
        )
    ),
    strategies=(
        Strategy(
            "keep-alive",
            "one aiohttp session per worker; its keep-alive pool is shared by the clients",
            _connect_keep_alive,
            options=OptionSet(
                (
                    Option(
                        "pool_size",
                        "int",
                        0,
                        "connections per worker (0: as many as clients are busy at once)",
                        minimum=0,
                    ),
                )
            ),
        ),
        Strategy(
            "new-connection",
            "a new TCP connection for every request (Connection: close)",
            _connect_new,
        ),
        Strategy(
            "lean",
            "one keep-alive connection per client, a minimal HTTP/1.1 client (no aiohttp)",
            _connect_lean,
        ),
        Strategy(
            "native",
            "native engine (Rust): one keep-alive connection per client, as wrk",
            probe_connect("http"),
            engine="native",
        ),
    ),
    default_strategy="keep-alive",
    server=ServerLauncher(options=SERVER_OPTIONS, start=start_server),
)
