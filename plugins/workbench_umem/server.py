"""The managed umem-cache: built for its options (or given), started on ``::1``.

umem-cache listens on IPv6 only (it binds every IPv6 address of the machine; clients
here reach it on ``::1``) and takes nothing but its port on the command line: memory,
threads and connections are compiled in (see `workbench_umem.build`). With
``binary`` the options are what the user states that binary was built with.

It is started like every managed server (`workbench.sdk.servers.launch`): stopped by its pid
and at interpreter exit, and killed by the kernel if the workbench dies outright.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from workbench.sdk import ServerProcess, TargetError, free_port, host_port, launch
from workbench_umem.build import BuildConfig, build, find_source

HOST = "::1"


def start_umem(options: dict[str, Any]) -> ServerProcess:
    """A throw-away umem-cache for the managed options (memory, threads, max_conn, ...)."""
    config = BuildConfig(
        memory=int(options["memory"]),
        threads=int(options["threads"]),
        max_conn=int(options["max_conn"]),
    )
    if config.max_conn < config.threads:
        raise TargetError(
            f"max_conn ({config.max_conn}) is shared by the threads: expected at least "
            f"threads ({config.threads})",
            "target.server.max_conn",
        )
    binary, source = str(options["binary"]), str(options["source"])
    if binary and source:
        raise TargetError("give binary or source, not both", "target.server")
    if binary:
        path = Path(binary).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise TargetError(f"{binary!r} is not an executable program", "target.server.binary")
        program, version = str(path), "umem-cache (given binary)"
        built = path.parent / "commit"
        with contextlib.suppress(OSError):
            version = f"umem-cache {built.read_text().strip()}"
    else:
        result = build(find_source(source), config)
        program, version = str(result.binary), f"umem-cache {result.commit}"
    port = free_port(HOST)
    server = launch(
        "umem-cache",
        [program, str(port)],
        HOST,
        port,
        version=version,
        target_options={
            "address": host_port(HOST, port),
            "threads": config.threads,
            "limit": config.memory,
        },
    )
    given = " (a given binary, as stated)" if binary else ""
    server.build = (
        f"commit: {version.removeprefix('umem-cache ')}",
        f"built{given}: MEM_LIMIT={config.memory} THREAD_NR={config.threads} "
        f"MAX_CONN={config.max_conn}",
    )
    return server
