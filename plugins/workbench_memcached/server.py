"""The managed memcached: a throw-away server on loopback (UDP off), its defaults stated once.

Built on the process toolkit of `workbench.servers` (free port, launch and wait, stop by
pid). The plugin's launcher (``target.managed = true``), ``workbench serve memcached`` and
the tests all start memcached through `start_memcached`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from workbench.servers import (
    LOOPBACK,
    ServerProcess,
    free_port,
    launch,
    program_version,
    require_program,
)

MEMORY_MB = 256  # -m: memory for items, MiB
MAX_ITEM_SIZE = 2 * 1024 * 1024  # -I: the largest item, bytes
THREADS = 4  # -t


def start_memcached(
    port: int = 0,
    host: str = LOOPBACK,
    memory_mb: int = MEMORY_MB,
    max_item_size: int | str = MAX_ITEM_SIZE,
    threads: int = THREADS,
    extra: Sequence[str] = (),
    binary: str = "",
) -> ServerProcess:
    """A throw-away memcached on loopback (UDP off)."""
    program = require_program("memcached", "memcached", binary)
    port = port or free_port(host)
    argv = [
        program,
        "-l", host,
        "-p", str(port),
        "-U", "0",
        "-m", str(memory_mb),
        "-I", str(max_item_size),
        "-t", str(threads),
    ]  # fmt: skip
    if os.geteuid() == 0:
        argv += ["-u", "root"]  # memcached refuses to run as root without it
    argv += list(extra)
    raw = program_version([program, "-V"])
    return launch(
        "memcached",
        argv,
        host,
        port,
        version=raw or "memcached",
        target_options={"servers": [f"{host}:{port}"]},
    )
