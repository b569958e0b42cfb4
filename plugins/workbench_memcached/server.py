"""The managed memcached: a throw-away server on loopback (UDP off), its defaults stated once.

Built on the process toolkit of `workbench.sdk.servers` (free port, launch and wait, stop by
pid). The plugin's launcher (``target.managed = true``), ``workbench serve memcached`` and
the tests all start memcached through `start_memcached`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from workbench.sdk import (
    LOOPBACK,
    ServerProcess,
    free_port,
    launch,
    make_tls_files,
    program_version,
    require_program,
)
from workbench.sdk.scratch import scratch_dir

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
    tls: bool = False,
    tls_auth_clients: bool = False,
) -> ServerProcess:
    """A throw-away memcached on loopback (UDP off). With `tls`, TLS only (-Z) with
    certificates made in its scratch directory; `tls_auth_clients` requires a client
    certificate (mutual TLS)."""
    program = require_program("memcached", "memcached", binary)
    port = port or free_port(host)
    target_options: dict[str, object] = {"servers": [f"{host}:{port}"]}
    scratch = None
    tls_argv: list[str] = []
    if tls:
        scratch = scratch_dir("memcached")  # removed at its stop, or swept once we are gone
        files = make_tls_files(scratch)
        verify = "2" if tls_auth_clients else "0"  # 2: require a client certificate
        tls_argv = [
            "-Z",
            "-o", f"ssl_chain_cert={files.server_cert},ssl_key={files.server_key},"
            f"ssl_ca_cert={files.ca},ssl_verify_mode={verify}",
        ]  # fmt: skip
        target_options = {**target_options, "tls": True, "tls_ca": str(files.ca)}
        if tls_auth_clients:
            target_options.update(tls_cert=str(files.client_cert), tls_key=str(files.client_key))
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
    argv += tls_argv + list(extra)
    raw = program_version([program, "-V"])
    return launch(
        "memcached",
        argv,
        host,
        port,
        version=raw or "memcached",
        target_options=target_options,
        scratch=scratch,
    )
