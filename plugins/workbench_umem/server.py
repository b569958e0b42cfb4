"""The managed umem-cache: built for its options (or given), started on ``::1``.

umem-cache listens on IPv6 only (it binds every IPv6 address of the machine; clients
here reach it on ``::1``) and takes nothing but its port on the command line: memory,
threads and connections are compiled in (see `workbench_umem.build`). With
``binary`` the options are what the user states that binary was built with.

The server dies with the workbench: besides being stopped by its pid (and at interpreter
exit), it is started with PR_SET_PDEATHSIG, so a workbench killed outright takes it along.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.errors import TargetError
from workbench.servers import START_TIMEOUT, ServerProcess, stop_process
from workbench_umem.build import BuildConfig, build, find_source

HOST = "::1"
PR_SET_PDEATHSIG = 1


def free_port6(host: str = HOST) -> int:
    """A TCP port nobody listens on right now on an IPv6 address (the kernel picks it)."""
    with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> Callable[[], None]:
    """A preexec_fn: the child gets SIGKILL when the process that started it dies."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


def _log_path() -> Path:
    directory = Path(os.environ.get("TMPDIR", "/tmp")) / "workbench-servers"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"umem-cache-{os.getpid()}-{time.monotonic_ns()}.log"


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.2):
            return True
    except OSError:
        return False


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def launch(program: str, version: str, target_options: dict[str, Any]) -> ServerProcess:
    """Start ``program PORT`` and wait until it accepts connections on [::1]:PORT."""
    port = free_port6()
    log_path = _log_path()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [program, str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in the terminal reaches the workbench only
            preexec_fn=_die_with_parent(),
        )
    atexit.register(stop_process, process)
    deadline = time.monotonic() + START_TIMEOUT
    while not _accepts(port):
        if process.poll() is not None:
            raise TargetError(
                f"umem-cache exited with status {process.returncode} before accepting "
                f"connections on [{HOST}]:{port}: {_tail(log_path) or 'no output'} "
                f"(log: {log_path})",
                "target.server",
            )
        if time.monotonic() > deadline:
            stop_process(process)
            raise TargetError(
                f"umem-cache did not accept connections on [{HOST}]:{port} within "
                f"{START_TIMEOUT:g}s (log: {log_path})",
                "target.server",
            )
        time.sleep(0.02)
    return ServerProcess(
        name="umem-cache",
        process=process,
        host=HOST,
        port=port,
        version=version,
        target_options={"address": f"[{HOST}]:{port}", **target_options},
        log_path=log_path,
    )


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
    return launch(
        program,
        version,
        {"threads": config.threads, "limit": config.memory},
    )
