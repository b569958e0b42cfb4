"""The managed redis-server: a throw-away server on loopback, no persistence, no protected
mode, its defaults stated once.

Built on the SDK's recipe for Redis-compatible servers (`workbench.sdk.resp_server`). The
plugin's launcher (``target.managed = true``), ``workbench serve redis``, the HTTP plugin's
caching proxy and the tests all start Redis through `start_redis`.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench.sdk import LOOPBACK, ServerProcess, program_version, require_program
from workbench.sdk.resp_server import start_resp_server

POLICY = "allkeys-lru"  # what Redis evicts at maxmemory


def start_redis(
    port: int = 0,
    host: str = LOOPBACK,
    maxmemory: str = "",
    policy: str = POLICY,
    extra: Sequence[str] = (),
    binary: str = "",
    tls: bool = False,
    tls_auth_clients: bool = False,
) -> ServerProcess:
    """A throw-away redis-server: no persistence, no protected mode, on loopback. With `tls`
    it listens only for TLS (`--port 0 --tls-port`), with certificates made in its scratch
    directory; `tls_auth_clients` makes it require a client certificate (mutual TLS)."""
    program = require_program("redis-server", "redis-server", binary)
    raw = program_version([program, "--version"])
    version = next((w[2:] for w in raw.split() if w.startswith("v=")), raw)
    return start_resp_server(
        program,
        "redis",
        ("redis", "rediss"),
        version=f"redis {version}" if version else "redis",
        port=port,
        host=host,
        maxmemory=maxmemory,
        policy=policy,
        extra=extra,
        tls=tls,
        tls_auth_clients=tls_auth_clients,
    )
