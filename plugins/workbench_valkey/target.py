"""Where the Valkey server is and how to log in, read once from the system's options.

``valkey://HOST:PORT/DB``, or ``valkeys://`` for TLS (the schemes valkey-py reads). Valkey
speaks RESP as Redis does, so the Python strategies use redis-py and the native engine its
RESP codec. Passwords and ACL users are never options: the options name environment
variables that hold them, so a stored run or an exported report cannot carry a secret.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from redis.asyncio.connection import SSLConnection as AsyncSSL
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.connection import SSLConnection
from redis.retry import Retry

from workbench.sdk import (
    Endpoints,
    Login,
    TargetError,
    TlsSettings,
    require_loopback,
    tls_settings,
)

DEFAULT_PORT = 6379
SCHEMES = ("valkey", "valkeys")
WHERE = "target.options.url"


@dataclass(frozen=True)
class ValkeyTarget:
    host: str
    port: int
    db: int
    tls: TlsSettings | None
    username: str | None
    password: str | None
    connect_timeout: float
    timeout: float

    def kwargs(self, asyncio: bool, pool: bool = False) -> dict[str, Any]:
        """redis-py's arguments for a client of its own connection, or (`pool`) for a
        connection pool, which takes TLS as its connection class.

        Never a retry: redis-py retries a failed command three times by default, which
        would hide an outage that every strategy must show as an error."""
        out: dict[str, Any] = {
            "retry": AsyncRetry(NoBackoff(), 0) if asyncio else Retry(NoBackoff(), 0),
            "host": self.host,
            "port": self.port,
            "db": self.db,
            "username": self.username,
            "password": self.password,
            "socket_connect_timeout": self.connect_timeout,
            "socket_timeout": self.timeout,
        }
        if self.tls:
            if pool:
                out["connection_class"] = AsyncSSL if asyncio else SSLConnection
            else:
                out["ssl"] = True
            out.update(
                ssl_cert_reqs="none" if self.tls.insecure else "required",
                ssl_check_hostname=bool(self.tls.sni) and not self.tls.insecure,
                ssl_ca_certs=self.tls.ca or None,
                ssl_certfile=self.tls.cert or None,
                ssl_keyfile=self.tls.key or None,
            )
        return out


def check_target(options: dict[str, Any], longest_key: bytes) -> None:
    """The spec check's: the URL reads (RESP is binary-safe: any key can be sent)."""
    parse_target(options)


def parse_target(options: dict[str, Any]) -> ValkeyTarget:
    url = str(options["url"])
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or parts.query or parts.fragment:
        raise TargetError(f"expected valkey://HOST:PORT/DB or valkeys:// (TLS); got {url!r}", WHERE)
    host = require_loopback(parts.hostname or "127.0.0.1", WHERE, options)
    try:
        port = DEFAULT_PORT if parts.port is None else parts.port
    except ValueError as exc:
        raise TargetError(f"expected a port from 1 to 65535 in {url!r} ({exc})", WHERE) from None
    path = parts.path.strip("/")
    if port == 0:  # not "the default": the run must load the server it names
        raise TargetError(f"expected a port from 1 to 65535; got 0 in {url!r}", WHERE)
    if path and not (path.isascii() and path.isdigit()):
        raise TargetError(
            f"expected the database as a plain number; got {path!r} in {url!r}", WHERE
        )
    if parts.password is not None:
        raise TargetError(
            "a password in the URL would be stored with the run; put it in the environment "
            f"variable named by target.options.password_env ({options['password_env']})",
            WHERE,
        )
    username = os.environ.get(options["username_env"]) or (
        unquote(parts.username) if parts.username else None
    )
    return ValkeyTarget(
        host=host,
        port=port,
        db=int(path) if path else 0,
        tls=tls_settings(options, "target.options") if parts.scheme == "valkeys" else None,
        username=username,
        password=os.environ.get(options["password_env"]) or None,
        connect_timeout=float(options["connect_timeout"]),
        timeout=float(options["timeout"]),
    )


def endpoints(options: Mapping[str, Any]) -> Endpoints:
    """The server, TLS and login as `parse_target` reads them: the native engine's too."""
    t = parse_target(dict(options))
    return Endpoints(
        servers=((t.host, t.port),),
        origin=WHERE,
        tls=t.tls,
        login=Login(db=t.db, username=t.username, password_env=options["password_env"]),
        cluster=bool(options.get("cluster")),
        tls_advice="use valkeys://",
    )
