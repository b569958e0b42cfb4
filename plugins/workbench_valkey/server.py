"""The managed valkey-server: a throw-away server on loopback, no persistence, no
protected mode.

The program is ``binary``, else ``valkey-server`` from PATH, else one built from the
source tarball (or directory) named by ``source`` (``valkey-8.0.1.tar.gz``), with TLS
compiled in, once, into ``$XDG_CACHE_HOME/cache-workbench/valkey/``
(`workbench.sdk.builds`). ``io_threads`` above 1 gives the server that many threads doing
I/O (the main thread counts as one), so it may use that many cores.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.sdk import (
    LOOPBACK,
    ServerProcess,
    TargetError,
    program_version,
    require_program,
)
from workbench.sdk.builds import build_program
from workbench.sdk.resp_server import start_resp_server

PROGRAM = "valkey-server"
MAKE_ARGS = ("BUILD_TLS=yes",)  # TLS compiled in, so `tls = true` works with a built server
BUILT = ("src/valkey-server", "src/valkey-cli")


def find_program(options: dict[str, Any]) -> str:
    """The valkey-server to run: given, built from the given source, or from PATH."""
    binary, source = str(options["binary"]), str(options["source"])
    if binary and source:
        raise TargetError("give binary or source, not both", "target.server")
    if source:
        path = Path(source).expanduser()
        if not path.exists():
            raise TargetError(f"no such file or directory: {source!r}", "target.server.source")
        return str(build_program("valkey", path, MAKE_ARGS, BUILT).program(PROGRAM))
    if binary or shutil.which(PROGRAM):
        return require_program(PROGRAM, "valkey-server", binary)
    raise TargetError(
        "valkey-server is not installed (apt-get install valkey-server); set "
        "target.server.source to a Valkey source tarball (valkey-8.0.1.tar.gz) to build it, "
        "or point the target at a running server and set target.managed = false",
        "target.managed",
    )


def version_of(program: str) -> str:
    """``valkey 8.0.1`` from ``Valkey server v=8.0.1 sha=...``."""
    raw = program_version([program, "--version"])
    number = next((w[2:] for w in raw.split() if w.startswith("v=")), "")
    return f"valkey {number}" if number else "valkey"


def memory_argv(maxmemory: int, policy: str) -> list[str]:
    return ["--maxmemory", str(maxmemory), "--maxmemory-policy", policy] if maxmemory else []


def io_threads_argv(io_threads: int) -> list[str]:
    return ["--io-threads", str(io_threads)] if io_threads > 1 else []


def start_valkey(
    program: str,
    port: int = 0,
    host: str = LOOPBACK,
    maxmemory: int = 0,
    policy: str = "allkeys-lru",
    io_threads: int = 1,
    tls: bool = False,
    tls_auth_clients: bool = False,
    extra: Sequence[str] = (),
) -> ServerProcess:
    """A throw-away valkey-server on `host`: with `tls`, TLS only (the SDK's recipe for
    Redis-compatible servers, `workbench.sdk.resp_server`)."""
    return start_resp_server(
        program,
        "valkey",
        ("valkey", "valkeys"),
        version=version_of(program),
        port=port,
        host=host,
        maxmemory=str(maxmemory) if maxmemory else "",
        policy=policy,
        extra=[*io_threads_argv(io_threads), *extra],
        tls=tls,
        tls_auth_clients=tls_auth_clients,
    )
