"""The managed reference servers: the caching proxy (with its redis-server) or the kv-store."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.sdk import (
    Option,
    OptionSet,
    ServerProcess,
    SpecError,
    listen_address,
    make_tls_files,
    process_memory,
    require_program,
    start_python_server,
)
from workbench.sdk.resp_server import start_resp_server
from workbench.sdk.scratch import scratch_dir
from workbench_http.loopback import is_loopback_redis


@dataclass
class ProxyServer:
    """The caching proxy and, when the workbench started one for it, its redis-server."""

    proxy: ServerProcess
    redis: ServerProcess | None
    backing: str = ""  # the Redis URL behind it

    @property
    def pid(self) -> int:
        return self.proxy.pid

    @property
    def address(self) -> str:
        return self.proxy.address

    @property
    def log_path(self) -> Path | None:
        return self.proxy.log_path

    @property
    def notes(self) -> tuple[str, ...]:
        """What `workbench serve` says beside its address."""
        throw_away = "a throw-away redis on " if self.redis is not None else ""
        base = self.proxy.target_options.get("base_url", "")
        return (
            f"backed by {throw_away}{self.backing}",
            f"curl '{base}/lookup?key=k' ; curl {base}/stats",
        )

    def alive(self) -> bool:
        return self.proxy.alive() and (self.redis is None or self.redis.alive())

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


class _Tls:
    """With `tls`: a throw-away CA and certificates in a scratch directory that is removed
    when the server stops, the server's arguments and the client's options."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.scratch: Path | None = None
        self.args: list[str] = []
        self.client: dict[str, Any] = {}
        if not options["tls"]:
            return
        self.scratch = scratch_dir("http")
        try:
            files = make_tls_files(self.scratch)
        except BaseException:
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise
        self.args = ["--tls-cert", str(files.server_cert), "--tls-key", str(files.server_key)]
        self.client = {"tls_ca": str(files.ca)}
        if options["tls_auth_clients"]:
            self.args += ["--tls-client-ca", str(files.ca)]
            self.client.update(tls_cert=str(files.client_cert), tls_key=str(files.client_key))

    def base_url(self, server: ServerProcess) -> str:
        return f"{'https' if self.scratch else 'http'}://{server.host}:{server.port}"


def start_server(options: dict[str, Any]) -> ServerProcess | ProxyServer:
    """Start the reference server `options["kind"]` on a free loopback port (or where
    `workbench serve` asks)."""
    host, port = listen_address(options)
    tls = _Tls(options)
    if options["kind"] == "kv-store":
        return _start_kv_store(options, host, port, tls)
    return _start_caching_proxy(options, host, port, tls)


def _start_kv_store(options: dict[str, Any], host: str, port: int, tls: _Tls) -> ServerProcess:
    args = [
        "--mode", options["mode"],
        "--partitions", str(options["partitions"]),
        "--expiration", _duration_arg(options["expiration"]),
        "--cleanup-interval", _duration_arg(options["cleanup_interval"]),
        "--loop", options["loop"],
        *tls.args,
    ]  # fmt: skip
    server = start_python_server(
        "workbench_http.servers.kv_store",
        args,
        port,
        host,
        version=f"kv-store ({options['mode']})",
        scratch=tls.scratch,
    )
    server.target_options = {
        **tls.client,
        "base_url": tls.base_url(server),
        "get": "GET /?key={key}",
        "delete": "DELETE /?key={key}",
        "stats_path": "/stats",
    }
    base = server.target_options["base_url"]
    server.notes = (f'curl -d \'{{"key": "k", "value": "v"}}\' {base}/ ; curl \'{base}/?key=k\'',)
    return server


def _start_caching_proxy(options: dict[str, Any], host: str, port: int, tls: _Tls) -> ProxyServer:
    redis: ServerProcess | None = None
    url = _loopback_redis(options["redis_url"])
    if not url:
        # The caching proxy's store: a throw-away redis-server on the SDK's recipe (a
        # plugin imports no other plugin's package).
        program = require_program("redis-server", "redis-server")
        redis = start_resp_server(program, "redis", ("redis", "rediss"), version="redis")
        url = redis.target_options["url"]
    args = [
        "--redis-url", url,
        "--max-keys", str(options["max_keys"]),
        "--ttl", _duration_arg(options["lru_ttl"]),
        "--rate-limit", f"{options['rate_limit']:g}",
        "--throttle-status", str(options["throttle_status"]),
        "--loop", options["loop"],
        *tls.args,
    ]  # fmt: skip
    try:
        proxy = start_python_server(
            "workbench_http.servers.caching_proxy",
            args,
            port,
            host,
            version="caching-proxy",
            scratch=tls.scratch,
        )
    except BaseException:
        if redis is not None:
            redis.stop()
        raise
    # get and set are the defaults; leaving them out lets a profile override them
    # (a get of "GET /lookup" is the document's bad-query scenario).
    proxy.target_options = {
        **tls.client,
        "base_url": tls.base_url(proxy),
        "delete": "DELETE /lookup?key={key}",
        "stats_path": "/stats",
    }
    return ProxyServer(proxy, redis, url)


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
        Option("tls", "bool", False, "HTTPS only, with a throw-away CA the client trusts"),
        Option(
            "tls_auth_clients",
            "bool",
            False,
            "with tls: require a client certificate (mutual TLS)",
        ),
    )
)


def _loopback_redis(url: str) -> str:
    """The proxy's backing Redis is on this machine: a managed server never sends its
    traffic elsewhere (nothing else in the workbench may either, without --allow-remote)."""
    if url and not is_loopback_redis(url):
        raise SpecError(
            f"expected a redis:// URL on this machine (127.0.0.1, ::1, localhost); got {url!r}",
            "target.server.redis_url",
        )
    return url
