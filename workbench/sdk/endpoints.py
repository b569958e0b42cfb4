"""Where a system's servers are: its plugin's one reading of its options.

A plugin states it as ``CacheSystem(endpoints=...)``: a function of the system options that
returns `Endpoints`, raising a TargetError naming the option when it cannot read them. That
one reading decides everywhere: the remote check (every server host on loopback unless the
spec allowed a remote target), the native engine's step order (it receives the servers, TLS
and login parsed, and parses no URL itself), and the plugin's own connections, which should
be made from the same reading. A plugin reads a URL with `read_url`, which refuses what it
cannot read exactly: a query, a fragment, a user part holding an ``@``, a port that is not
1-65535, text where the host or the port should be.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from workbench.sdk.errors import TargetError
from workbench.sdk.tls import TlsSettings

__all__ = ["Endpoints", "Login", "Url", "read_host_port", "read_url"]


@dataclass(frozen=True)
class Login:
    """What a RESP connection says first: AUTH as `username` with the password held by the
    environment variable `password_env` (never the password itself: an order or a stored
    run must not carry it), then SELECT `db` when it is not 0."""

    db: int = 0
    username: str | None = None
    password_env: str | None = None


@dataclass(frozen=True)
class Endpoints:
    """A system's servers as its plugin read them from its options."""

    servers: tuple[tuple[str, int], ...]  # host and port, in the order placement follows
    origin: str  # the option they came from, named in errors: "target.options.url"
    tls: TlsSettings | None = None
    login: Login = field(default_factory=Login)
    cluster: bool = False  # a Redis Cluster: the servers are where its slot map is read
    # An HTTP/1.1 target's host header, base path, templates and statuses (the native
    # engine's http1 codec reads them by these names: docs/frames.md).
    http1: Mapping[str, Any] | None = None
    # Said to a plain connection closed before any reply, a TLS port's sign: "use rediss://".
    tls_advice: str = ""


@dataclass(frozen=True)
class Url:
    """A URL read exactly: nothing of it is left unread."""

    scheme: str
    host: str
    port: int
    path: str  # as written, from the first "/" (empty when there is none)
    username: str | None  # the user part, percent-encoded as written
    password: str | None
    netloc: str  # host and port as written, without the user part: a Host header's value


_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<netloc>[^/?#]*)(?P<path>[^?#]*)")
_HOST_PORT = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]*))(?::(?P<port>[^:]*))?"
)


def read_url(
    url: str, schemes: Mapping[str, int], where: str, default_host: str = ""
) -> Url:
    """`url` read exactly, its scheme one of `schemes` (each with its default port); a
    TargetError naming `where` and what could not be read otherwise."""

    def refuse(what: str) -> TargetError:
        return TargetError(f"{what} in {url!r}", where)

    m = _URL.match(url)
    if m is None or m.group("scheme").lower() not in schemes:
        known = " or ".join(f"{s}://" for s in schemes)
        raise TargetError(f"expected a {known} URL; got {url!r}", where)
    rest = url[m.end() :]
    if rest.startswith("?"):
        raise refuse("a query (?...) cannot be read as an address: expected none")
    if rest:
        raise refuse("a fragment (#...) cannot be read as an address: expected none")
    scheme = m.group("scheme").lower()
    user, at, hostport = m.group("netloc").rpartition("@")
    if "@" in user:
        raise refuse("a user part holding '@' cannot be read as one user: expected at most one '@'")
    username, colon, password = user.partition(":")
    host, port = _host_port(hostport, schemes[scheme], default_host, refuse)
    return Url(
        scheme=scheme,
        host=host,
        port=port,
        path=m.group("path"),
        username=username if at else None,
        password=password if colon else None,
        netloc=hostport,
    )


def read_host_port(text: str, default_port: int, where: str) -> tuple[str, int]:
    """``HOST[:PORT]`` read exactly (``[::1]:PORT`` for IPv6, or a bare IPv6 address): a
    TargetError naming `where` for anything else, such as a port that is not 1-65535 in
    plain digits or text around the host."""

    def refuse(what: str) -> TargetError:
        return TargetError(f"{what} in {text!r}", where)

    try:  # a bare IPv6 address: its colons are not a port's
        return str(ipaddress.IPv6Address(text)), default_port
    except ValueError:
        return _host_port(text, default_port, "", refuse)


def _host_port(
    text: str, default_port: int, default_host: str, refuse: Callable[[str], TargetError]
) -> tuple[str, int]:
    hp = _HOST_PORT.fullmatch(text)
    if hp is None:
        raise refuse(f"expected HOST[:PORT]; got {text!r}")
    host = hp.group("v6") or hp.group("name") or default_host
    if not host:
        raise refuse("expected a host")
    if hp.group("v6") is not None:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise refuse(f"expected an IPv6 address inside [...]; got {host!r}") from None
    return host, _port(hp.group("port"), default_port, refuse)


def _port(text: str | None, default: int, refuse: Callable[[str], TargetError]) -> int:
    if text is None or text == "":
        return default
    if not text.isascii() or not text.isdigit() or not 0 < int(text) < 65536:
        raise refuse(f"expected a port from 1 to 65535; got {text!r}")
    return int(text)
