"""What Varnish declares about itself for the core: its URL, the option that sizes its
storage, the cores its server may use and which of its figures mean what."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from workbench.sdk import CacheSize, ServerCores, ServerFigures, TargetError, Urls


def url_options(url: str) -> dict[str, Any]:
    """``varnish://HOST:PORT`` names a Varnish answering plain HTTP there."""
    rest = url.split("://", 1)[1]
    if not rest or "/" in rest.rstrip("/"):
        raise TargetError(f"expected varnish://HOST:PORT; got {url!r}", "--system")
    return {"base_url": "http://" + rest.rstrip("/")}


def server_cores(server: Mapping[str, Any], managed: bool) -> ServerCores | None:
    """varnishd serves each connection on a thread of its pools: a managed one may use
    every core this process may."""
    return ServerCores(float(len(os.sched_getaffinity(0)))) if managed else None


URLS = Urls(schemes=("varnish",), options=url_options, forms=("varnish://HOST:PORT",))
CACHE_SIZE = CacheSize("memory")  # bytes of malloc storage (-s malloc,SIZE)
FIGURES = ServerFigures(used_bytes="bytes_stored", limit_bytes="storage_limit", items="n_object")
LIBRARIES = ("aiohttp",)
