"""What Valkey declares about itself for the core: its URLs, the option that sizes its
cache, the cores its server may use, its INFO figures and the refusals it gives."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from workbench.sdk import CacheSize, Refusal, ServerCores, ServerFigures, Urls

DEFAULT_URL = "valkey://127.0.0.1:6379/0"


def url_options(url: str) -> dict[str, Any]:
    return {"url": url}


def with_tls(options: Mapping[str, Any]) -> dict[str, Any]:
    """The given target over TLS: its URL as valkeys://."""
    return {"url": re.sub(r"^valkey://", "valkeys://", str(options.get("url", DEFAULT_URL)))}


def server_cores(server: Mapping[str, Any], managed: bool) -> ServerCores:
    """Valkey runs commands on its main thread; with io_threads = N, N - 1 more threads
    read, parse and write for it, so a managed server may use N cores."""
    threads = server.get("io_threads") if managed else None
    cores = float(threads) if isinstance(threads, int) and threads > 0 else 1.0
    return ServerCores(cores, single_threaded=cores == 1.0)


URLS = Urls(
    schemes=("valkey", "valkeys"),
    options=url_options,
    forms=("valkey://HOST:PORT[/DB]",),
    tls_schemes={"valkey": "valkeys"},
    with_tls=with_tls,
)
CACHE_SIZE = CacheSize("maxmemory")
FIGURES = ServerFigures(
    cpu=("used_cpu_user", "used_cpu_sys"),
    used_bytes="used_memory",
    limit_bytes="maxmemory",
    items="keys",
    version="valkey_version",
)
REFUSALS = (
    Refusal(
        "oom command not allowed",
        "Valkey refused writes at maxmemory (OOM): raise target.server.maxmemory (managed) or "
        "maxmemory, or let it evict with maxmemory_policy = allkeys-lru",
    ),
    Refusal(
        "max number of clients",
        "Valkey refused connections over its client limit: raise maxclients, or lower "
        "load.concurrency",
    ),
)
LIBRARIES = ("redis", "hiredis")
