"""The memcached servers a target names, and which one holds a key: ``host:port`` parsing
(loopback unless allowed), the text protocol's key rule, and rendezvous hashing of keys
over several servers, the same in every strategy (`workbench_memcached.protocol`)."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.sdk import KeyRule, TargetError, read_host_port, require_loopback

DEFAULT_PORT = 11211
_MASK = 0xFFFFFFFF

Address = tuple[str, int]


def parse_servers(
    values: Sequence[str],
    where: str = "target.options.servers",
    options: Mapping[str, Any] | None = None,
) -> list[Address]:
    """``host:port`` strings (``[::1]:port`` for IPv6; port 11211 if left out), loopback
    only unless `options` (the system's) allow remote targets."""
    if not values:
        raise TargetError("expected at least one memcached server such as 127.0.0.1:11211", where)
    out: list[Address] = []
    for text in values:
        try:
            host, port = read_host_port(str(text).strip(), DEFAULT_PORT, where)
        except TargetError:
            raise TargetError(
                f"expected host:port such as 127.0.0.1:11211; got {text!r}", where
            ) from None
        require_loopback(host, where, options)
        out.append((host, port))
    return out


MAX_KEY = 250  # bytes, the text protocol's limit
# A space or a control character would end a key (or the command) early, so a prefix or a
# trace's key could inject commands of its own.
KEYS = KeyRule(max_bytes=MAX_KEY, text=True)


def check_key(key: bytes, where: str = "workload.key_prefix") -> None:
    """A key the text protocol can carry (`KEYS`)."""
    problem = KEYS.problem(key)
    if problem is not None:
        raise TargetError(f"expected memcached keys {problem}", where)


def check_target(options: Mapping[str, Any], longest_key: bytes) -> None:
    """The spec check's: the servers parse, and every key fits the text protocol."""
    parse_servers(options["servers"], options=options)
    check_key(longest_key)


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    return h ^ (h >> 16)


class Rendezvous:
    """Highest-random-weight hashing of keys over servers, the same in every strategy.

    Removing a server moves only its own keys; the async client and the blocking one
    place every key on the same server.
    """

    def __init__(self, nodes: Sequence[str]) -> None:
        self.nodes = list(nodes)
        self.seeds = [zlib.crc32(n.encode()) for n in self.nodes]

    def index(self, key: bytes) -> int:
        base = zlib.crc32(key)
        best, winner = -1, 0
        for i, seed in enumerate(self.seeds):
            score = _fmix32(base ^ seed)
            if score > best:
                best, winner = score, i
        return winner


def address_text(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
