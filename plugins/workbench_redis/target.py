"""Where the Redis server is and how to log in: parsed once from the system's options.

Passwords and ACL users are never options: the options name environment variables that
hold them, so a stored run or an exported report cannot carry a secret.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from workbench.sdk import (
    Endpoints,
    Login,
    TargetError,
    TlsSettings,
    read_url,
    require_loopback,
    tls_settings,
)


def no_retries(asyncio: bool) -> Any:
    """redis-py's policy of never retrying a command.

    redis-py retries failed commands by default (three times, with backoff), which hides
    an outage: every strategy must show a failed command as an error.
    """
    return AsyncRetry(NoBackoff(), 0) if asyncio else Retry(NoBackoff(), 0)


@dataclass(frozen=True)
class RedisTarget:
    host: str
    port: int
    db: int
    tls: TlsSettings | None
    username: str | None
    password: str | None
    connect_timeout: float
    timeout: float

    def redis_py_kwargs(self, asyncio: bool) -> dict[str, Any]:
        """Arguments for redis.Redis / redis.asyncio.Redis without an explicit pool."""
        kwargs = self._common(asyncio)
        if self.tls:
            kwargs.update(ssl=True, **self._ssl_kwargs())
        return kwargs

    def _ssl_kwargs(self) -> dict[str, Any]:
        tls = self.tls
        assert tls is not None
        return {
            "ssl_cert_reqs": "none" if tls.insecure else "required",
            "ssl_check_hostname": bool(tls.sni) and not tls.insecure,
            "ssl_ca_certs": tls.ca or None,
            "ssl_certfile": tls.cert or None,
            "ssl_keyfile": tls.key or None,
        }

    def pool_kwargs(self, asyncio: bool) -> dict[str, Any]:
        """Arguments for a redis-py connection pool (TLS is a connection class there)."""
        kwargs = self._common(asyncio)
        if self.tls:
            # Imported only for TLS: the SSL classes pull in the ssl module, which plain
            # connections never need.
            if asyncio:
                from redis.asyncio.connection import SSLConnection as AsyncSSL

                kwargs.update(connection_class=AsyncSSL, **self._ssl_kwargs())
            else:
                from redis.connection import SSLConnection

                kwargs.update(connection_class=SSLConnection, **self._ssl_kwargs())
        return kwargs

    def _common(self, asyncio: bool) -> dict[str, Any]:
        kwargs = self._login(asyncio)
        if self.tls and not self.tls.cert:
            # Imported only for TLS without a client certificate (see refusal.py).
            from workbench_redis.refusal import connect_check

            kwargs["redis_connect_func"] = connect_check(asyncio)
        return kwargs

    def _login(self, asyncio: bool) -> dict[str, Any]:
        return {
            "retry": no_retries(asyncio),
            "host": self.host,
            "port": self.port,
            "db": self.db,
            "username": self.username,
            "password": self.password,
            "socket_connect_timeout": self.connect_timeout,
            "socket_timeout": self.timeout,
        }


DEFAULT_PORT = 6379
SCHEMES = {"redis": DEFAULT_PORT, "rediss": DEFAULT_PORT}


def check_target(options: dict[str, Any], longest_key: bytes) -> None:
    """The spec check's: the URL parses (RESP is binary-safe: any key can be sent)."""
    parse_target(options)


def parse_target(options: Mapping[str, Any]) -> RedisTarget:
    """The URL read exactly (`read_url`: no query, no fragment, one user at most), a
    database that is a plain integer, no password in it; the one reading both engines, the
    remote check and the server figures use (`endpoints`)."""
    url = str(options["url"])
    where = "target.options.url"
    parts = read_url(url, SCHEMES, where, default_host="127.0.0.1")
    host = require_loopback(parts.host, where, options)
    path = parts.path.strip("/")
    if path and not (path.isascii() and path.isdigit()):
        raise TargetError(
            f"expected the database as a plain number such as redis://HOST:PORT/3; got "
            f"{path!r} in {url!r}",
            where,
        )
    if parts.password is not None:
        raise TargetError(
            "a password in the URL would be stored with the run; put it in the environment "
            f"variable named by target.options.password_env ({options['password_env']})",
            where,
        )
    username = os.environ.get(options["username_env"]) or (
        unquote(parts.username) if parts.username else None
    )
    password = os.environ.get(options["password_env"]) or None
    return RedisTarget(
        host=host,
        port=parts.port,
        db=int(path) if path else 0,
        tls=tls_settings(dict(options), "target.options") if parts.scheme == "rediss" else None,
        username=username,
        password=password,
        connect_timeout=float(options["connect_timeout"]),
        timeout=float(options["timeout"]),
    )


def endpoints(options: Mapping[str, Any]) -> Endpoints:
    """The server, TLS and login as `parse_target` reads them: the native engine's too."""
    t = parse_target(options)
    return Endpoints(
        servers=((t.host, t.port),),
        origin="target.options.url",
        tls=t.tls,
        login=Login(db=t.db, username=t.username, password_env=options["password_env"]),
        cluster=bool(options.get("cluster")),
        tls_advice="use rediss://",
    )
