"""What the HTTP plugin declares about itself for the core: its URLs and the cores of its
managed reference servers."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from workbench.sdk import ServerCores, Urls


def url_options(url: str) -> dict[str, Any]:
    return {"base_url": url.rstrip("/")}


def with_tls(options: Mapping[str, Any]) -> dict[str, Any] | None:
    """The given base URL as https://; nothing to change when none is given."""
    if "base_url" not in options:
        return None
    return {"base_url": re.sub(r"^http://", "https://", str(options["base_url"]))}


def server_cores(server: Mapping[str, Any], managed: bool) -> ServerCores | None:
    """The managed reference servers (caching proxy, key-value store) are one asyncio
    process; another HTTP server's cores are unknown."""
    return ServerCores(1.0, single_threaded=True) if managed else None


URLS = Urls(
    schemes=("http", "https"),
    options=url_options,
    forms=("http://HOST:PORT[/PATH]",),
    tls_schemes={"http": "https"},
    with_tls=with_tls,
)
LIBRARIES = ("aiohttp",)
