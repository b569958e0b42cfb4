"""A server named as memtier_benchmark and redis-benchmark users name it, made into the URL
``-s`` takes: ``-s HOST -p PORT``, ``-h HOST -p PORT``, ``-s HOST:PORT``, ``-p PORT`` alone
(on 127.0.0.1), the scheme from ``-P``/``--protocol`` (memtier's names, which systems
declare as `Urls.tool_protocols`, or a system's scheme) or else from the profile's system
when it has URLs, else that of memtier's default protocol. A URL given whole
(``-s redis://HOST:PORT``) is taken as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from workbench.sdk.adapter import CacheSystem
from workbench.sdk.discovery import plugin_statuses
from workbench.sdk.errors import SpecError
from workbench.spec.model import DEFAULT_SYSTEM

# memtier's default --protocol ("redis", which is RESP2), by the name no system has.
MEMTIER_DEFAULT = "resp2"
# A host name or IPv4 address as a bare -s HOST gives it (IPv6 goes in brackets).
HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")
LOOPBACK = "127.0.0.1"  # memtier's and redis-benchmark's default host


def server_url(
    server: str | None,
    host: str | None,
    port: int | None,
    protocol: str | None,
    system_scheme: Callable[[], str | None],
    scheme_of: Callable[[str], str | None],
) -> str | None:
    """The URL for ``-s``/``-h``/``-p``/``-P`` as given (None: no server named).
    `system_scheme` gives the profile's system's first URL scheme, if it has one;
    `scheme_of` gives the scheme a name means: a system's scheme, or the first scheme of
    the system declaring it among its `tool_protocols` (None: no system)."""
    if server is not None and host is not None:
        raise SpecError("expected -s/--server or -h/--host, not both (they both name the host)",
                        "--host")  # fmt: skip
    given = server if server is not None else host
    if given is None and port is None:
        if protocol is not None:
            raise SpecError("expected -s HOST or -p PORT with it (the server to speak to)",
                            "--protocol")  # fmt: skip
        return None
    given = given or LOOPBACK
    if "://" in given:
        return _with_port(given, port)
    if protocol is not None:
        scheme = _scheme(protocol, scheme_of)
    else:
        scheme = system_scheme() or scheme_of(MEMTIER_DEFAULT) or MEMTIER_DEFAULT
    name, own_port = _host_and_port(given)
    if own_port is not None and port is not None and own_port != port:
        raise SpecError(f"expected one port: {given!r} has {own_port}, -p says {port}",
                        "--port")  # fmt: skip
    chosen = own_port if own_port is not None else port
    return f"{scheme}://{name}" + (f":{chosen}" if chosen is not None else "")


def _with_port(url: str, port: int | None) -> str:
    """A whole URL, with -p's port when the URL has none."""
    if port is None:
        return url
    parts = urlsplit(url)
    try:
        own = parts.port
    except ValueError:
        own = None
    if own is not None and own != port:
        raise SpecError(f"expected one port: {url!r} has {own}, -p says {port}", "--port")
    if own is not None:
        return url
    netloc = f"{parts.netloc}:{port}"
    return parts._replace(netloc=netloc).geturl()


def _host_and_port(text: str) -> tuple[str, int | None]:
    """``HOST``, ``HOST:PORT``, ``[V6]:PORT`` or a bare IPv6 address, as (host, port)."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return f"[{host}]", _port(rest.removeprefix(":")) if rest else None
    if text.count(":") > 1:  # a bare IPv6 address such as ::1
        return f"[{text}]", None
    host, colon, port = text.partition(":")
    if not HOST_NAME.fullmatch(host):  # `-s load.duration=1`: once the short form of --set
        raise SpecError(f"expected a URL (redis://HOST:PORT...) or HOST[:PORT]; got {text!r}",
                        "--server")  # fmt: skip
    return host, _port(port) if colon else None


def _port(text: str) -> int:
    if text.isdigit() and 0 < int(text) < 65536:
        return int(text)
    raise SpecError(f"expected a port from 1 to 65535; got {text!r}", "--server")


def _scheme(protocol: str, scheme_of: Callable[[str], str | None]) -> str:
    """memtier's protocol name (redis, resp2, resp3, memcache_text) or a system's scheme."""
    name = protocol.strip().lower()
    scheme = scheme_of(name)
    if scheme is not None:
        return scheme
    if name.isdigit():
        raise SpecError(f"expected a protocol name: -P is memtier's --protocol; redis-benchmark's "
                        f"-P {name} is --pipeline {name} here", "--protocol")  # fmt: skip
    if name == "memcache_binary":
        raise SpecError("expected memcache_text: the text and meta protocols are spoken, not "
                        "the binary one", "--protocol")  # fmt: skip
    raise SpecError(f"expected a protocol name of memtier's (resp2, memcache_text...) or a "
                    f"system's URL scheme (`workbench plugins`); got {protocol!r}",
                    "--protocol")  # fmt: skip


def scheme_named(name: str, systems: Iterable[CacheSystem]) -> str | None:
    """The URL scheme `name` means: a system's own scheme, else the first scheme of the
    system that declares it among its `Urls.tool_protocols` (memtier's ``resp2``...)."""
    name = name.lower()
    declared = [s.urls for s in systems if s.urls is not None]
    if any(name in urls.schemes for urls in declared):
        return name
    return next((urls.schemes[0] for urls in declared if name in urls.tool_protocols), None)


def profile_scheme(target: Mapping[str, Any], load: Callable[[str], CacheSystem],
                   default_system: str) -> str | None:  # fmt: skip
    """The first URL scheme of the profile's system, if it declares URLs."""
    try:
        system = load(str(target.get("system", default_system)))
    except Exception:  # an unknown system is the spec check's to report
        return None
    return system.urls.schemes[0] if system.urls and system.urls.schemes else None


def login_advice(system: CacheSystem) -> str:
    """Where `system` takes a user and password instead: the options it declares that read
    them from the environment; none said, the advice named another system's."""
    env = [f"target.options.{n}" for n in system.options.names() if n.endswith("_env")]
    if env:
        return f"give them through {' and '.join(env)} (read from the environment, never stored)"
    return f"{system.name} takes none there (`workbench plugins` lists its options)"


def quoted(text: str) -> str:
    """A TOML basic string (JSON escapes are TOML escapes)."""
    return json.dumps(text)


def systems() -> list[CacheSystem]:
    """Every plugin that loads (a broken one is `workbench plugins`' to report)."""
    return [row.system for row in plugin_statuses() if row.system is not None]


def system_of_scheme(scheme: str) -> CacheSystem | None:
    """The system whose URLs have this scheme (`CacheSystem.urls`), if one declares it."""
    scheme = scheme.lower()
    return next((s for s in systems() if s.urls and scheme in s.urls.schemes), None)


def target_of(profile: Mapping[str, Any]) -> Mapping[str, Any]:
    target = profile.get("target", {})
    return target if isinstance(target, Mapping) else {}


def option_overrides(options: Mapping[str, Any]) -> list[str]:
    """`target.options.NAME=VALUE` for each option, VALUE written as TOML (JSON's strings,
    numbers, booleans and lists are TOML's)."""
    return [f"target.options.{name}={json.dumps(value)}" for name, value in options.items()]


def server_overrides(url: str, profile: Mapping[str, Any]) -> list[str]:
    """``-s URL``: the system whose scheme it is, its options from the rest (as the system
    declares, `CacheSystem.urls`); the run talks to that server, so a managed server of the
    profile is not started."""
    parts = urlsplit(url)
    system = system_of_scheme(parts.scheme)
    if system is None or system.urls is None or not parts.netloc:
        forms = [f for s in systems() if s.urls for f in s.urls.forms]
        raise SpecError(f"expected {' or '.join(forms)}; got {url!r}", "--server")
    if parts.username or parts.password:  # a stored run keeps its spec: no secrets in it
        raise SpecError(
            f"expected no user or password in the URL: {login_advice(system)}", "--server"
        )
    same_system = target_of(profile).get("system", DEFAULT_SYSTEM) == system.name
    out = [f"target.system={quoted(system.name)}", "target.managed=false"]
    if not same_system:  # another system's options would be unknown to this one
        out.append("target.options={}")
        out.append("target.server={}")
        if profile.get("strategy"):
            out.append('strategy.name=""')
            out.append("strategy.options={}")
    return out + option_overrides(system.urls.options(url))


def with_tls_scheme(url: str) -> str:
    """The URL with its system's TLS scheme (redis:// to rediss://), if it declares one."""
    scheme = urlsplit(url).scheme
    system = system_of_scheme(scheme)
    tls = system.urls.tls_schemes.get(scheme.lower()) if system and system.urls else None
    return tls + url[len(scheme) :] if tls else url
