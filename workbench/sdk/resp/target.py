"""Where a RESP server is and how to log in, read once from a system's options.

``SCHEME://HOST:PORT/DB``, with a plain scheme and a TLS one (``redis``/``rediss``,
``valkey``/``valkeys``). Passwords and ACL users are never options: the options
``password_env`` and ``username_env`` name environment variables that hold them, so a
stored run or an exported report cannot carry a secret.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.driver_info import DriverInfo
from redis.retry import Retry

from workbench.sdk.endpoints import Endpoints, Login, read_url
from workbench.sdk.errors import TargetError
from workbench.sdk.options import Option, OptionSet
from workbench.sdk.remote import require_loopback
from workbench.sdk.tls import TLS_OPTIONS, TlsSettings, tls_settings

DEFAULT_PORT = 6379
WHERE = "target.options.url"


@dataclass(frozen=True)
class RespSystem:
    """What differs between RESP servers for a client: the name said in errors ("cannot
    connect to redis at ..."), the plain and TLS URL schemes, and the INFO field holding
    the server's version (reported with its figures; "" for none)."""

    name: str
    plain: str
    tls: str
    version: str = ""

    @property
    def advice(self) -> str:
        """Said when a plain connection meets a TLS port."""
        return f"use {self.tls}://"

    def target(self, options: Mapping[str, Any]) -> RespTarget:
        """The system's options read (`read_target`)."""
        return read_target(options, self)

    def check(self, options: Mapping[str, Any], longest_key: bytes) -> None:
        """`CacheSystem.check`: the URL reads (RESP is binary-safe: any key can be sent)."""
        read_target(options, self)

    def endpoints(self, options: Mapping[str, Any]) -> Endpoints:
        """`CacheSystem.endpoints`: `resp_endpoints`."""
        return resp_endpoints(options, self)


def no_retries(asyncio: bool) -> Any:
    """redis-py's policy of never retrying a command.

    redis-py retries failed commands by default (three times, with backoff), which hides
    an outage: every strategy must show a failed command as an error.
    """
    return AsyncRetry(NoBackoff(), 0) if asyncio else Retry(NoBackoff(), 0)


@functools.cache
def driver_info() -> DriverInfo:
    """What redis-py tells the server it is (CLIENT SETINFO), read once per process.

    Left to itself, redis-py reads its own version from the installed package's metadata
    for every client and every connection it makes: about 40% of what creating a client
    costs, seconds for a step of 2,000 blocking clients.
    """
    return DriverInfo()


@dataclass(frozen=True)
class RespTarget:
    system: RespSystem
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
            kwargs.update(ssl=True, **self.ssl_kwargs())
        return kwargs

    def cluster_kwargs(self) -> dict[str, Any]:
        """Arguments for redis.asyncio's RedisCluster: no database (a cluster has one)."""
        kwargs = self._login(True)
        del kwargs["db"], kwargs["host"], kwargs["port"]
        if self.tls:
            kwargs.update(ssl=True, **self.ssl_kwargs())
        return kwargs

    def ssl_kwargs(self) -> dict[str, Any]:
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

                kwargs.update(connection_class=AsyncSSL, **self.ssl_kwargs())
            else:
                from redis.connection import SSLConnection

                kwargs.update(connection_class=SSLConnection, **self.ssl_kwargs())
        return kwargs

    def _common(self, asyncio: bool) -> dict[str, Any]:
        kwargs = self._login(asyncio)
        if self.tls and not self.tls.cert:
            # Imported only for TLS without a client certificate (see handshake.py).
            from workbench.sdk.resp.handshake import connect_check

            kwargs["redis_connect_func"] = connect_check(asyncio)
        return kwargs

    def _login(self, asyncio: bool) -> dict[str, Any]:
        return {
            "retry": no_retries(asyncio),
            "driver_info": driver_info(),
            "host": self.host,
            "port": self.port,
            "db": self.db,
            "username": self.username,
            "password": self.password,
            "socket_connect_timeout": self.connect_timeout,
            "socket_timeout": self.timeout,
        }


def read_target(options: Mapping[str, Any], system: RespSystem) -> RespTarget:
    """The URL read exactly (`read_url`: no query, no fragment, one user at most), a
    database that is a plain integer, no password in it; the one reading both engines, the
    remote check and the server figures use (`resp_endpoints`)."""
    url = str(options["url"])
    known = {system.plain: DEFAULT_PORT, system.tls: DEFAULT_PORT}
    parts = read_url(url, known, WHERE, default_host="127.0.0.1")
    host = require_loopback(parts.host, WHERE, options)
    path = parts.path.strip("/")
    if path and not (path.isascii() and path.isdigit()):
        raise TargetError(
            f"expected the database as a plain number such as {system.plain}://HOST:PORT/3; "
            f"got {path!r} in {url!r}",
            WHERE,
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
    return RespTarget(
        system=system,
        host=host,
        port=parts.port,
        db=int(path) if path else 0,
        tls=tls_settings(dict(options), "target.options") if parts.scheme == system.tls else None,
        username=username,
        password=os.environ.get(options["password_env"]) or None,
        connect_timeout=float(options["connect_timeout"]),
        timeout=float(options["timeout"]),
    )


def resp_endpoints(options: Mapping[str, Any], system: RespSystem) -> Endpoints:
    """The server, TLS and login as `read_target` reads them: the native engine's too."""
    t = read_target(options, system)
    return Endpoints(
        servers=((t.host, t.port),),
        origin=WHERE,
        tls=t.tls,
        login=Login(db=t.db, username=t.username, password_env=options["password_env"]),
        cluster=bool(options.get("cluster")),
        tls_advice=system.advice,
    )


POLICIES = (
    "noeviction",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
)  # what a RESP server may evict at maxmemory (its maxmemory-policy)


def target_options(system: RespSystem, title: str, default_url: str) -> OptionSet:
    """A RESP system's options: where its server is, the login's environment variables,
    timeouts, TLS, and whether it is a cluster."""
    upper = system.name.upper()
    return OptionSet(
        (
            Option(
                "url",
                "str",
                default_url,
                f"{system.plain}://HOST:PORT/DB or {system.tls}:// for TLS (loopback only)",
            ),
            Option(
                "password_env",
                "str",
                f"{upper}_PASSWORD",
                "environment variable holding the password (never stored)",
            ),
            Option(
                "username_env",
                "str",
                f"{upper}_USERNAME",
                "environment variable holding the ACL user (never stored)",
            ),
            Option("connect_timeout", "duration", 5.0, "give up connecting after", minimum=0.001),
            Option("timeout", "duration", 5.0, "fail a command unanswered so long", minimum=0.001),
            *TLS_OPTIONS,
            Option(
                "cluster", "bool", False, f"a {title} Cluster: the cluster strategy follows slots"
            ),
        )
    )
