"""The process toolkit for servers the workbench starts: a free loopback port, launch and
wait until it accepts connections, its memory, stop by its pid.

The recipes (which program, which flags, which defaults) live with their plugins
(`workbench_redis.server`, `workbench_memcached.server`, the HTTP plugin's reference
servers); the adapters' launchers (``target.managed = true``), ``workbench serve`` and the
tests all start servers through them, so all three start a server the same way. Every
server started here is stopped at interpreter exit, and dies with the process that
started it (the kernel's PR_SET_PDEATHSIG), so neither a crashed nor a killed run leaves
one behind.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from workbench.sdk.errors import TargetError
from workbench.sdk.remote import is_loopback
from workbench.sdk.start_deadline import StartDeadline

LOOPBACK = "127.0.0.1"
START_TIMEOUT = 15.0
STOP_TIMEOUT = 5.0

_running: dict[int, subprocess.Popen[bytes]] = {}
_scratch: dict[int, Path] = {}  # pid -> a server's own temporary directory, removed at its stop
# pid -> the server's log: removed when the workbench stops the server, kept when the server
# ended on its own (a crash), so that what it said can still be read.
_logs: dict[int, Path] = {}


PR_SET_PDEATHSIG = 1
T = TypeVar("T")


@functools.cache
def _libc() -> Any:
    """The C library this interpreter is linked with (no search: that would run ldconfig)."""
    return ctypes.CDLL(None, use_errno=True)


def dies_with_this_process() -> Callable[[], None]:
    """A ``preexec_fn``: the child is sent SIGKILL by the kernel when its parent dies.

    The kernel's "parent" is the thread that forked, so start such children with `spawn`,
    which forks from a thread that lives as long as the process. If the parent died before
    the call, the child exits at once rather than serve with nobody to stop it.
    """
    parent = os.getpid()
    libc = _libc()  # loaded before the fork: nothing in the child but a system call

    def preexec() -> None:
        try:
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: the parent's atexit stop remains
            return
        if os.getppid() != parent:
            os._exit(1)

    return preexec


class _Spawner:
    """One daemon thread that starts children for threads that may end before them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    def run(self, start: Callable[[], T]) -> T:
        with self.lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self._serve, name="spawner", daemon=True)
                self.thread.start()
        done: Future[T] = Future()
        self.jobs.put((start, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            start, done = self.jobs.get()
            try:
                done.set_result(start())
            except BaseException as exc:  # handed to the caller's thread
                done.set_exception(exc)


_SPAWNER = _Spawner()


def spawn(start: Callable[[], T]) -> T:
    """Call `start` (a Popen) from a thread that lives as long as the process, so that a
    child started with `dies_with_this_process` outlives the calling thread (a pool or
    TUI worker thread that ends) and dies only with the process."""
    if threading.current_thread() is threading.main_thread():
        return start()
    return _SPAWNER.run(start)


def host_port(host: str, port: int) -> str:
    """`host:port`, with an IPv6 address in brackets (``[::1]:11211``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port nobody listens on right now on `host`, IPv4 or IPv6 (the kernel picks it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def require_program(name: str, package: str, given: str = "") -> str:
    """The path of a server program (`given`, else from PATH), or a TargetError saying why."""
    if given:
        found = shutil.which(given)
        if found is None:
            raise TargetError(f"{given!r} is not an executable program", "target.server.binary")
        return found
    path = shutil.which(name)
    if path is None:
        raise TargetError(
            f"{name} is not installed (apt-get install {package}); "
            "or point the target at a running server and set target.managed = false",
            "target.managed",
        )
    return path


def process_memory(pid: int) -> dict[str, int]:
    """Resident and peak resident memory of a process in bytes, read from /proc."""
    out: dict[str, int] = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            parts = rest.split()
            if parts:
                out["rss_bytes" if name == "VmRSS" else "peak_rss_bytes"] = int(parts[0]) * 1024
    return out


@dataclass
class ServerProcess:
    """A running server: what the engine's ManagedServer protocol asks for, and a log."""

    name: str
    process: subprocess.Popen[bytes]
    host: str
    port: int
    version: str
    target_options: dict[str, Any] = field(default_factory=dict)
    log_path: Path | None = None
    # How it was built, for reports (umem-cache's commit and compiled-in configuration).
    build: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what `workbench serve` says beside its address

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def address(self) -> str:
        return host_port(self.host, self.port)

    def alive(self) -> bool:
        return self.process.poll() is None

    def memory(self) -> dict[str, int]:
        return process_memory(self.pid)

    def stop(self) -> None:
        stop_process(self.process)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it does not go within STOP_TIMEOUT; always reaped."""
    _running.pop(process.pid, None)
    log = _logs.pop(process.pid, None)
    if process.poll() is None:
        if log is not None:
            log.unlink(missing_ok=True)  # the open file lives on until the server exits
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait()
    scratch = _scratch.pop(process.pid, None)
    if scratch is not None:
        shutil.rmtree(scratch, ignore_errors=True)


@atexit.register
def _stop_all() -> None:
    for process in list(_running.values()):
        stop_process(process)


def _log_file(name: str) -> Path:
    directory = Path(os.environ.get("TMPDIR", "/tmp")) / "workbench-servers"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{name}-{os.getpid()}-{time.monotonic_ns()}.log"


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def launch(
    name: str,
    argv: Sequence[str],
    host: str,
    port: int,
    *,
    version: str = "",
    target_options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = START_TIMEOUT,
    scratch: Path | None = None,
) -> ServerProcess:
    """Start ``argv`` and wait until it accepts connections on host:port. `scratch`, the
    server's own temporary directory, is removed when the server stops (or fails to start)."""
    try:
        server = _launch(name, argv, host, port, version, target_options, env, timeout)
    except BaseException:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    if scratch is not None:
        _scratch[server.pid] = scratch
    return server


def _launch(
    name: str,
    argv: Sequence[str],
    host: str,
    port: int,
    version: str,
    target_options: dict[str, Any] | None,
    env: dict[str, str] | None,
    timeout: float,
) -> ServerProcess:
    if not is_loopback(host):  # never on another interface, whatever a run may load
        raise TargetError(
            f"servers the workbench starts listen on loopback only (127.0.0.1, ::1, "
            f"localhost); got {host!r}",
            "target.server",
        )
    log_path = _log_file(name)
    with log_path.open("wb") as log:
        process = spawn(
            lambda: subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                start_new_session=True,  # Ctrl-C in the terminal reaches the workbench only
                # Killed by the kernel if the workbench dies without stopping it (SIGKILL, a
                # closed terminal): the atexit stop covers every other ending.
                preexec_fn=dies_with_this_process(),
            )
        )
    _running[process.pid] = process
    _logs[process.pid] = log_path
    _wait_accepting(name, process, host, port, log_path, timeout)
    return ServerProcess(
        name=name,
        process=process,
        host=host,
        port=port,
        version=version,
        target_options=dict(target_options or {}),
        log_path=log_path,
    )


def _wait_accepting(
    name: str, process: subprocess.Popen[bytes], host: str, port: int, log_path: Path,
    timeout: float,
) -> None:  # fmt: skip
    """Until the server accepts connections; a TargetError with its log's end if it exits
    first or does not within `timeout` seconds and stops using CPU (then it is stopped):
    see `StartDeadline`."""
    deadline = StartDeadline(process.pid, timeout)
    while not _accepts(host, port):
        if process.poll() is not None:
            _running.pop(process.pid, None)
            _logs.pop(process.pid, None)  # kept: it says why
            raise TargetError(
                f"{name} exited with status {process.returncode} before accepting connections"
                f" on {host_port(host, port)}:\n{_tail(log_path)}",
                "target.server",
            )
        if deadline.expired():
            said = _tail(log_path)  # before the stop removes the log
            stop_process(process)
            raise TargetError(
                f"{name} did not accept connections on {host_port(host, port)} within "
                f"{deadline.waited():.0f}s:\n{said}",
                "target.server",
            )
        time.sleep(0.02)


def program_version(argv: Sequence[str]) -> str:
    """First line a program prints for its version flag, or '' if it prints nothing."""
    try:
        done = subprocess.run(list(argv), capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (done.stdout or done.stderr).decode(errors="replace").strip()
    return text.splitlines()[0] if text else ""


# Where `workbench serve --host/--port` asks a launcher's server to listen: keys it adds to
# the server options it hands `ServerLauncher.start` (a run's managed server has neither:
# a free loopback port).
LISTEN_HOST, LISTEN_PORT = "listen_host", "listen_port"


def listen_address(options: Mapping[str, Any]) -> tuple[str, int]:
    """(host, port) a launcher's server should listen on: as `workbench serve` asked, else
    loopback and 0 (a free port)."""
    return str(options.get(LISTEN_HOST) or LOOPBACK), int(options.get(LISTEN_PORT) or 0)


def python_module(module: str, *args: str) -> list[str]:
    """The argv of a child process running `module` in this Python, with nothing of the
    current directory importable: ``python -m`` puts it first on sys.path, so a
    `zstandard.py` or `uvloop.py` lying there ran inside every worker and server. -P
    (Python 3.11) leaves it out; the environment (PYTHONPATH) still counts."""
    return [sys.executable, "-P", "-m", module, *args]


def start_python_server(
    module: str,
    args: Sequence[str] = (),
    port: int = 0,
    host: str = LOOPBACK,
    target_options: dict[str, Any] | None = None,
    version: str = "",
    scratch: Path | None = None,
) -> ServerProcess:
    """A Python server module run as ``python -m module --host H --port P ARGS``; `scratch`
    as for `launch`."""
    port = port or free_port(host)
    argv = python_module(module, "--host", host, "--port", str(port), *args)
    return launch(
        module.rsplit(".", 1)[-1],
        argv,
        host,
        port,
        version=version or module,
        target_options=target_options or {"base_url": f"http://{host}:{port}"},
        scratch=scratch,
    )
