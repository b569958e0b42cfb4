"""The managed redis-server: a throw-away server on loopback, no persistence, no protected
mode, its defaults stated once.

Built on the process toolkit of `workbench.sdk.servers` (free port, launch and wait, stop by
pid). The plugin's launcher (``target.managed = true``), ``workbench serve redis``, the
HTTP plugin's caching proxy and the tests all start Redis through `start_redis`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from workbench.sdk import (
    LOOPBACK,
    ServerProcess,
    free_port,
    launch,
    make_tls_files,
    program_version,
    require_program,
)

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
    port = port or free_port(host)
    scratch = Path(tempfile.mkdtemp(prefix="workbench-redis-"))  # removed when it stops
    target_options: dict[str, object] = {"url": f"redis://{host}:{port}/0"}
    tls_argv: list[str] = []
    if tls:
        files = make_tls_files(scratch)
        tls_argv = [
            "--tls-port", str(port),
            "--tls-cert-file", str(files.server_cert),
            "--tls-key-file", str(files.server_key),
            "--tls-ca-cert-file", str(files.ca),
            "--tls-auth-clients", "yes" if tls_auth_clients else "no",
        ]  # fmt: skip
        target_options = {"url": f"rediss://{host}:{port}/0", "tls_ca": str(files.ca)}
        if tls_auth_clients:
            target_options.update(tls_cert=str(files.client_cert), tls_key=str(files.client_key))
    argv = [
        program,
        "--port", "0" if tls else str(port),
        "--bind", host,
        "--save", "",
        "--appendonly", "no",
        "--protected-mode", "no",
        "--daemonize", "no",
        "--dir", str(scratch),
    ]  # fmt: skip
    if maxmemory:
        argv += ["--maxmemory", maxmemory, "--maxmemory-policy", policy]
    argv += tls_argv + list(extra)
    raw = program_version([program, "--version"])
    version = next((w[2:] for w in raw.split() if w.startswith("v=")), raw)
    return launch(
        "redis-server",
        argv,
        host,
        port,
        version=f"redis {version}" if version else "redis",
        target_options=target_options,
        scratch=scratch,
    )
