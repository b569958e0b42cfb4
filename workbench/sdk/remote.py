"""The remote-target guard: load goes to this machine unless the spec says otherwise.

A typo in a URL must not send load to someone else's server, so a target off this
machine needs `target.allow_remote = true` (or `workbench run --allow-remote`). The check
reads the addresses in a system's resolved options before anything connects: URLs
(``redis://host:6379/0``, ``http://host:8000``) and ``host:port`` strings, alone or in a
list. Each plugin's own connect code checks again with `require_loopback`, which
honours the opt-in through the `ALLOW_REMOTE` key the engine adds to the system options
of a step that allowed it. Hosts are judged by their text, never looked up: a check that
resolved names would itself reach a DNS server.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from workbench.sdk.errors import SpecError, TargetError

_HOST_PORT = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9][A-Za-z0-9.-]*)):\d+$")
HOST_KEYS = ("host", "hostname", "address", "server", "servers", "hosts")

__all__ = [
    "ALLOW_REMOTE",
    "addresses",
    "check_remote",
    "host_of",
    "is_loopback",
    "require_loopback",
]

# The key the engine adds to a step's system options when the spec allowed remote targets.
ALLOW_REMOTE = "allow_remote"


def is_loopback(host: str) -> bool:
    """True for names and addresses that stay on this machine."""
    if host in ("localhost", "::1", "[::1]"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def require_loopback(host: str, where: str, options: Mapping[str, Any] | None = None) -> str:
    """The host, or a TargetError: load goes to this machine unless the step allowed a
    remote target (the engine then sets `ALLOW_REMOTE` in the system's options)."""
    if not is_loopback(host) and not (options is not None and options.get(ALLOW_REMOTE)):
        raise TargetError(
            f"{host!r} is not a loopback address (127.0.0.1, ::1, localhost); to load a "
            "remote target, set target.allow_remote = true or pass --allow-remote",
            where,
        )
    return host


def host_of(text: str) -> str | None:
    """The host a URL or ``host:port`` string names, or None if it names none."""
    text = text.strip()
    if "://" in text:
        try:
            return urlsplit(text).hostname or None
        except ValueError:
            return None
    m = _HOST_PORT.match(text)
    if m:
        return m.group("v6") or m.group("name")
    return None


def addresses(options: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(option name, value, host) for every address among a system's options."""
    for name, value in options.items():
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if not isinstance(v, str):
                continue
            host = host_of(v)
            if host is None and name in HOST_KEYS and v.strip():
                host = v.strip()  # a bare host name under a name that means one
            if host is not None:
                yield name, v, host


def check_remote(options: Mapping[str, Any], allow_remote: bool, where: str) -> None:
    """Refuse, before any connection, a target off this machine the spec did not allow."""
    if allow_remote:
        return
    for name, value, host in addresses(options):
        if not is_loopback(host):
            raise SpecError(
                f"{value!r} is on {host}, not a loopback address; to load a remote target, "
                "set target.allow_remote = true or pass --allow-remote",
                f"{where}.{name}",
            )
