"""What Redis declares about itself for the core: its URLs, the option that sizes its cache,
the cores its server may use, its INFO figures and the refusals it gives."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from workbench.sdk import CacheSize, Refusal, ServerCores, ServerFigures, Urls

DEFAULT_URL = "redis://127.0.0.1:6379/0"


def url_options(url: str) -> dict[str, Any]:
    return {"url": url}


def with_tls(options: Mapping[str, Any]) -> dict[str, Any]:
    """The given target over TLS: its URL as rediss://."""
    url = str(options.get("url", DEFAULT_URL))
    return {"url": re.sub(r"^redis://", "rediss://", url)}


def server_cores(server: Mapping[str, Any], managed: bool) -> ServerCores:
    """Redis runs commands on one thread; a managed server's I/O threads add cores."""
    threads = server.get("io_threads") if managed else None
    cores = float(threads) if isinstance(threads, int) and threads > 0 else 1.0
    return ServerCores(cores, single_threaded=cores == 1.0)


URLS = Urls(
    schemes=("redis", "rediss"),
    options=url_options,
    forms=("redis://HOST:PORT[/DB]",),
    tls_schemes={"redis": "rediss"},
    with_tls=with_tls,
)
CACHE_SIZE = CacheSize("maxmemory")
FIGURES = ServerFigures(
    cpu=("used_cpu_user", "used_cpu_sys"),
    used_bytes="used_memory",
    limit_bytes="maxmemory",
    version="redis_version",
)
REFUSALS = (
    Refusal(
        "oom command not allowed",
        "Redis refused writes at maxmemory (OOM): raise target.server.maxmemory (managed) or "
        "maxmemory, or let it evict with maxmemory_policy = allkeys-lru",
    ),
    Refusal(
        "max number of clients",
        "Redis refused connections over its client limit: raise maxclients, or lower "
        "load.concurrency",
    ),
)
LIBRARIES = ("redis", "hiredis")
