"""What memcached declares about itself for the core: its URLs, the option that sizes its
cache, the cores its server may use, its stats figures and the refusals it gives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from workbench.sdk import CacheSize, Refusal, ServerCores, ServerFigures, Urls

MiB = 1024**2
SCHEME = "memcached"  # memcached://HOST:PORT[,HOST:PORT...]: the one place it is spelled
DEFAULT_THREADS = 4.0  # memcached's own default for -t


def url_options(url: str) -> dict[str, Any]:
    """The servers keys hash over, from SCHEME://HOST:PORT[,HOST:PORT...]."""
    servers = [s.strip() for s in urlsplit(url).netloc.split(",") if s.strip()]
    return {"servers": servers}


def with_tls(options: Mapping[str, Any]) -> dict[str, Any]:
    return {"tls": True}


def server_cores(server: Mapping[str, Any], managed: bool) -> ServerCores | None:
    """A managed server's worker threads (-t); one the workbench did not start: unknown."""
    if not managed:
        return None
    threads = server.get("threads")
    return ServerCores(
        float(threads) if isinstance(threads, int) and threads > 0 else DEFAULT_THREADS
    )


URLS = Urls(
    schemes=(SCHEME,),
    options=url_options,
    forms=(f"{SCHEME}://HOST:PORT[,HOST:PORT]",),
    with_tls=with_tls,
    tool_protocols=("memcache_text",),  # memtier_benchmark's -P name for the text protocol
)
CACHE_SIZE = CacheSize("memory_mb", unit=MiB)
FIGURES = ServerFigures(
    cpu=("rusage_user", "rusage_system"),
    used_bytes="bytes",
    limit_bytes="limit_maxbytes",
    items="curr_items",
    version="version",
)
REFUSALS = (
    Refusal(
        "object too large",
        "the server refused values above its item size limit (memcached -I, default 1 MB): "
        "raise target.server.max_item_size (managed) or memcached's -I, or lower "
        "workload.value_size",
    ),
)
LIBRARIES = ("pymemcache",)
