"""Where a caching proxy's backing Redis may be: this machine only. Apart from the reference
servers (`workbench_http.servers`) so that checking a spec does not import aiohttp."""

from __future__ import annotations

from urllib.parse import urlsplit

from workbench.sdk import is_loopback


def is_loopback_redis(url: str) -> bool:
    """A backing Redis URL on this machine (a socket file, or a loopback host), so that a
    reference server never sends its traffic elsewhere."""
    if url.startswith("unix://"):
        return True
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return url.startswith(("redis://", "rediss://")) and is_loopback(host)
