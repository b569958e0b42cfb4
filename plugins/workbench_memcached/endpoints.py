"""Where the memcached servers are, read once from the system's options (`parse_servers`):
the remote check, the native engine's order and the clients all take them from here, and
the wire protocol the native strategy speaks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workbench.sdk import MEMCACHE_META, MEMCACHE_TEXT, Endpoints, tls_settings
from workbench_memcached.protocol import Rendezvous, address_text, parse_servers


def endpoints(options: Mapping[str, Any]) -> Endpoints:
    """Each server's host and port, and TLS when the options ask for it."""
    servers = parse_servers(options["servers"], options=options)
    return Endpoints(
        servers=tuple(servers),
        origin="target.options.servers",
        tls=tls_settings(dict(options), "target.options") if options.get("tls") else None,
        tls_advice="set target.options.tls = true",
    )


def placement(options: Mapping[str, Any]) -> tuple[int, ...]:
    """Each server's rendezvous seed, as every strategy here hashes keys over them."""
    servers = parse_servers(options["servers"], options=options)
    return tuple(Rendezvous([address_text(a) for a in servers]).seeds)


def native_protocol(system: Mapping[str, Any], strategy: Mapping[str, Any]) -> str:
    """The native strategy's `protocol` option names the wire protocol it speaks."""
    return MEMCACHE_META if strategy["protocol"] == "meta" else MEMCACHE_TEXT
