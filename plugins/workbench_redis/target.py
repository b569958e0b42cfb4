"""Where the Redis server is and how to log in: parsed once from the system's options.

Passwords and ACL users are never options: the options name environment variables that
hold them, so a stored run or an exported report cannot carry a secret.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from workbench.sdk import TargetError, TlsSettings, require_loopback, tls_settings


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


def check_target(options: dict[str, Any], longest_key: bytes) -> None:
    """The spec check's: the URL parses (RESP is binary-safe: any key can be sent)."""
    parse_target(options)


def parse_target(options: dict[str, Any]) -> RedisTarget:
    url = str(options["url"])
    where = "target.options.url"
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        raise TargetError(f"expected a redis:// or rediss:// URL; got {url!r}", where)
    host = parts.hostname or "127.0.0.1"
    require_loopback(host, where, options)
    try:
        port = DEFAULT_PORT if parts.port is None else parts.port
        path = parts.path.strip("/")
        db = int(path) if path else 0
    except ValueError as exc:
        raise TargetError(f"expected redis://HOST:PORT/DB; got {url!r} ({exc})", where) from None
    if port == 0:  # not "the default": the run must load the server it names
        raise TargetError(f"expected a port from 1 to 65535; got 0 in {url!r}", where)
    if db < 0:
        raise TargetError(f"expected a database number of 0 or more; got {url!r}", where)
    if parts.password:
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
        port=port,
        db=db,
        tls=tls_settings(options, "target.options") if parts.scheme == "rediss" else None,
        username=username,
        password=password,
        connect_timeout=float(options["connect_timeout"]),
        timeout=float(options["timeout"]),
    )
