"""The wire protocols the native engine speaks, by stable name.

A strategy says which one it speaks (`Strategy.protocol`); the step order tells the native
engine that protocol, never the system, so a plugin whose server speaks one of these runs
on the native engine with no change to the engine. A strategy that speaks something else
declares no protocol and runs in the Python engine, through its own adapter.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.sdk.errors import PluginError


@dataclass(frozen=True)
class WireProtocol:
    """One protocol the native engine can speak: its stable name and what it is."""

    name: str  # stable: plugins declare it, the step order carries it
    title: str
    description: str


RESP = "resp"
MEMCACHE_TEXT = "memcache-text"
MEMCACHE_META = "memcache-meta"
HTTP1 = "http1"

PROTOCOLS: tuple[WireProtocol, ...] = (
    WireProtocol(
        RESP,
        "RESP",
        "the Redis serialization protocol (Redis and the servers that speak it): "
        "GET/SET/DEL/PUBLISH, SUBSCRIBE, Redis Cluster's MOVED/ASK",
    ),
    WireProtocol(
        MEMCACHE_TEXT, "memcached text", "memcached's text protocol: get/set/delete, stats"
    ),
    WireProtocol(MEMCACHE_META, "memcached meta", "memcached's meta protocol: mg/ms/md, stats"),
    WireProtocol(
        HTTP1,
        "HTTP/1.1",
        "HTTP/1.1 keep-alive requests from the target's URL templates",
    ),
)

BY_NAME: dict[str, WireProtocol] = {p.name: p for p in PROTOCOLS}


def protocol(name: str) -> WireProtocol:
    """The protocol of that name; an unknown name is a plugin error listing the known."""
    try:
        return BY_NAME[name]
    except KeyError:
        known = ", ".join(BY_NAME)
        raise PluginError(
            f"unknown wire protocol {name!r}; the native engine speaks {known}", "protocol"
        ) from None
