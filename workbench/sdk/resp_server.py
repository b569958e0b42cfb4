"""The managed-server recipe every Redis-compatible server shares (redis-server and the
forks that keep its flags): a throw-away server on loopback, no persistence, no protected
mode, TLS only when asked, in a scratch directory removed at its stop.

A plugin names its program, how its URLs are spelled and its version, and adds its own
flags (``--io-threads``); `start_resp_server` does the rest through `launch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.sdk.scratch import scratch_dir
from workbench.sdk.servers import LOOPBACK, ServerProcess, free_port, host_port, launch
from workbench.sdk.tls_certs import make_tls_files


def _tls_argv(port: int, scratch: Path, auth_clients: bool) -> tuple[list[str], dict[str, Any]]:
    """The server's TLS arguments (TLS only: the plain port is 0) and what a client needs:
    the throw-away CA, and with `auth_clients` a client certificate."""
    files = make_tls_files(scratch)
    argv = [
        "--port", "0",
        "--tls-port", str(port),
        "--tls-cert-file", str(files.server_cert),
        "--tls-key-file", str(files.server_key),
        "--tls-ca-cert-file", str(files.ca),
        "--tls-auth-clients", "yes" if auth_clients else "no",
    ]  # fmt: skip
    client: dict[str, Any] = {"tls_ca": str(files.ca)}
    if auth_clients:
        client.update(tls_cert=str(files.client_cert), tls_key=str(files.client_key))
    return argv, client


def start_resp_server(
    program: str,
    name: str,
    schemes: tuple[str, str],
    version: str = "",
    port: int = 0,
    host: str = LOOPBACK,
    maxmemory: str = "",
    policy: str = "allkeys-lru",
    extra: Sequence[str] = (),
    tls: bool = False,
    tls_auth_clients: bool = False,
) -> ServerProcess:
    """`program` (a path) on `host`:`port` (0: a free one). `schemes` are the plain and TLS
    URL schemes of the target options it returns (``("redis", "rediss")``): ``url`` is
    ``SCHEME://HOST:PORT/0``, with ``tls_ca`` (and a client certificate) under TLS. With
    `tls` it listens only for TLS, with certificates made in its scratch directory;
    `tls_auth_clients` makes it require a client certificate (mutual TLS)."""
    port = port or free_port(host)
    scratch = scratch_dir(name)  # removed when it stops, or swept once this process is gone
    client: dict[str, Any] = {}
    scheme, listen = schemes[0], ["--port", str(port)]
    if tls:
        listen, client = _tls_argv(port, scratch, tls_auth_clients)
        scheme = schemes[1]
    argv = [
        program,
        *listen,
        "--bind", host,
        "--save", "",
        "--appendonly", "no",
        "--protected-mode", "no",
        "--daemonize", "no",
        "--dir", str(scratch),
    ]  # fmt: skip
    if maxmemory:
        argv += ["--maxmemory", maxmemory, "--maxmemory-policy", policy]
    return launch(
        Path(program).name,
        [*argv, *extra],
        host,
        port,
        version=version,
        target_options={"url": f"{scheme}://{host_port(host, port)}/0", **client},
        scratch=scratch,
    )
