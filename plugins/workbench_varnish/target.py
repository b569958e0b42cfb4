"""Where Varnish is: its base URL, read once from the system's options, and the varnishd
instance whose statistics are read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from workbench.sdk import TargetError, require_loopback

WHERE = "target.options.base_url"
DEFAULT_PORT = 80


@dataclass(frozen=True)
class VarnishTarget:
    base_url: str  # scheme, host and port, no path: the VCL answers at /
    host: str
    port: int
    instance: str  # varnishd's -n, for varnishstat ("" the default instance)
    timeout: float
    connect_timeout: float


def parse_target(options: dict[str, Any]) -> VarnishTarget:
    url = str(options["base_url"]).rstrip("/")
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.path or parts.query or parts.fragment or parts.username:
        raise TargetError(
            f"expected http://HOST:PORT (Varnish serves plain HTTP; no path); got {url!r}",
            WHERE,
        )
    host = require_loopback(parts.hostname or "", WHERE, options)
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError as exc:
        raise TargetError(f"expected a port from 1 to 65535 in {url!r} ({exc})", WHERE) from None
    return VarnishTarget(
        base_url=url,
        host=host,
        port=port,
        instance=str(options["instance"]),
        timeout=float(options["timeout"]),
        connect_timeout=float(options["connect_timeout"]),
    )


def check_target(options: dict[str, Any], longest_key: bytes) -> None:
    """The spec check's: the URL reads (keys travel percent-encoded: any key can be sent)."""
    parse_target(options)
