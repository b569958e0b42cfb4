"""The managed redis-server: a throw-away server on loopback, no persistence, no protected
mode, its defaults stated once.

Built on the process toolkit of `workbench.servers` (free port, launch and wait, stop by
pid). The plugin's launcher (``target.managed = true``), ``workbench serve redis``, the
HTTP plugin's caching proxy and the tests all start Redis through `start_redis`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from workbench.servers import (
    LOOPBACK,
    ServerProcess,
    free_port,
    launch,
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
) -> ServerProcess:
    """A throw-away redis-server: no persistence, no protected mode, on loopback."""
    program = require_program("redis-server", "redis-server", binary)
    port = port or free_port(host)
    scratch = Path(tempfile.mkdtemp(prefix="workbench-redis-"))  # removed when it stops
    argv = [
        program,
        "--port", str(port),
        "--bind", host,
        "--save", "",
        "--appendonly", "no",
        "--protected-mode", "no",
        "--daemonize", "no",
        "--dir", str(scratch),
    ]  # fmt: skip
    if maxmemory:
        argv += ["--maxmemory", maxmemory, "--maxmemory-policy", policy]
    argv += list(extra)
    raw = program_version([program, "--version"])
    version = next((w[2:] for w in raw.split() if w.startswith("v=")), raw)
    return launch(
        "redis-server",
        argv,
        host,
        port,
        version=f"redis {version}" if version else "redis",
        target_options={"url": f"redis://{host}:{port}/0"},
        scratch=scratch,
    )
