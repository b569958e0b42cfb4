"""One TCP connection to the server before a run, so that an absent server is one line."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit

from workbench.sdk import TargetError
from workbench_http.config import Config
from workbench_http.templates import option_where


async def probe(config: Config) -> None:
    """One TCP connection to the server, so that a server that is not there is one line."""
    parts = urlsplit(config.base_url)
    port = (443 if parts.scheme == "https" else 80) if parts.port is None else parts.port
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(parts.hostname, port), timeout=config.connect_timeout or 5
        )
    except (TimeoutError, OSError) as exc:
        raise TargetError(
            f"cannot reach {config.base_url}: {str(exc) or type(exc).__name__}",
            option_where("base_url"),
        ) from None
    writer.close()
    with contextlib.suppress(Exception):
        await writer.wait_closed()
