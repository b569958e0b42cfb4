"""Where Varnish is: its base URL, read once from the system's options, and the varnishd
instance whose statistics are read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from workbench.sdk import Endpoints, TargetError, require_loopback

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


# The requests the managed VCL answers, for the native engine's http1 codec (the Python
# strategy sends the same: `workbench_varnish.client`).
HTTP1 = {
    "get": "GET /?key={key}",
    "set": "PUT /?key={key}&ttl={ttl}",
    "delete": "DELETE /?key={key}",
    "set_body": "{value}",
    "value_encoding": "latin-1",
    "hit_status": ["200"],
    "miss_status": ["404"],
    "set_status": ["204"],
    "delete_status": ["200"],
    "hit_field": "",
    "value_field": "",
    "headers": [],
}


def endpoints(options: Mapping[str, Any]) -> Endpoints:
    """Varnish as `parse_target` reads it, and the requests its VCL answers."""
    t = parse_target(dict(options))
    netloc = t.base_url.split("://", 1)[1]
    return Endpoints(
        servers=((t.host, t.port),),
        origin=WHERE,
        http1={**HTTP1, "host_header": netloc, "base_path": ""},
    )
