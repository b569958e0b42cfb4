"""`workbench serve`: run a reference server, or a managed redis/memcached, in the foreground.

The server is started the way runs start managed servers (the plugins' recipes, on the
toolkit of `workbench.sdk.servers`): on
loopback, waited on until it accepts connections, and stopped by its pid when this
command ends: on Ctrl-C (SIGINT), SIGTERM or SIGHUP, with exit status 0; killed
outright, the servers die with it. If the server dies on its own, the command ends with
status 1 and the end of the server's log.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from types import FrameType
from typing import Annotated, Any

import typer
from workbench_memcached.server import MEMORY_MB, THREADS, start_memcached
from workbench_redis.server import POLICY, start_redis

from workbench.cli.common import ExitStatus, fail, one_line_errors, out
from workbench.sdk.servers import LOOPBACK, ServerProcess, start_python_server

app = typer.Typer(
    help="Run a server in the foreground to point experiments at; Ctrl-C stops it.",
    no_args_is_help=True,
)

PortOption = Annotated[int, typer.Option("--port", help="port to listen on (0: a free one)")]
HostOption = Annotated[
    str, typer.Option("--host", help="loopback address to listen on (127.0.0.1 or ::1)")
]
LoopOption = Annotated[
    str, typer.Option("--loop", help="event loop of the server: auto, uvloop or asyncio")
]


# A closed terminal (SIGHUP) stops the servers as Ctrl-C does. Should this process die
# without stopping them (SIGKILL), they die with it (`workbench.sdk.servers.launch`).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def _foreground(servers: list[ServerProcess], lines: list[str]) -> None:
    """Print what runs, wait until a signal or a server's death, stop them all."""
    previous = {s: signal.signal(s, _raise_stop) for s in STOP_SIGNALS}
    try:
        for line in lines:
            out(line)
        out("Ctrl-C stops it.")
        while all(s.alive() for s in servers):
            time.sleep(0.2)
        dead = next(s for s in servers if not s.alive())
        log = dead.log_path.read_text(errors="replace").splitlines()[-8:] if dead.log_path else []
        for s in servers:
            s.stop()
        raise fail(
            f"{dead.name} exited with status {dead.process.returncode}"
            + "".join(f"\n  {line}" for line in log),
            ExitStatus.ERROR,
        )
    except (_Stop, KeyboardInterrupt):
        for s in reversed(servers):
            s.stop()
        out("stopped")
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _guarded(start: Callable[[], Any]) -> Any:
    """Start servers with Ctrl-C held off, so that none is left half-started."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return start()
    finally:
        signal.signal(signal.SIGINT, previous)


@app.command("kv-store")
@one_line_errors
def kv_store(
    port: PortOption = 0,
    host: HostOption = LOOPBACK,
    mode: Annotated[
        str, typer.Option("--mode", help="storage: dict (one dict) or partitioned")
    ] = "dict",
    partitions: Annotated[int, typer.Option("--partitions", help="partitions")] = 16,
    expiration: Annotated[
        str, typer.Option("--expiration", help="TTL of keys stored without one (0: never)")
    ] = "0",
    cleanup_interval: Annotated[
        str, typer.Option("--cleanup-interval", help="sweep of expired keys (0: off)")
    ] = "10s",
    loop: LoopOption = "auto",
) -> None:
    """The key-value store of 004: POST / to store, GET /?key=K to read, expiry."""
    args = [
        "--mode", mode, "--partitions", str(partitions), "--expiration", expiration,
        "--cleanup-interval", cleanup_interval, "--loop", loop,
    ]  # fmt: skip
    server = _guarded(
        lambda: start_python_server("workbench_http.servers.kv_store", args, port, host)
    )
    url = f"http://{_display(host)}:{server.port}"
    _foreground(
        [server],
        [
            f"kv-store ({mode}) listening on {url} (pid {server.pid}, log {server.log_path})",
            f'  curl -d \'{{"key": "k", "value": "v"}}\' {url}/ ; curl \'{url}/?key=k\'',
            f"  workbench run --set target.system=http --set target.options.base_url={url} "
            "--set 'target.options.get=GET /?key={key}'",
        ],
    )


@app.command("caching-proxy")
@one_line_errors
def caching_proxy(
    port: PortOption = 0,
    host: HostOption = LOOPBACK,
    redis_url: Annotated[
        str,
        typer.Option(
            "--redis-url", help="backing Redis (default: start a throw-away redis-server too)"
        ),
    ] = "",
    max_keys: Annotated[int, typer.Option("--max-keys", help="LRU capacity")] = 1000,
    ttl: Annotated[
        str, typer.Option("--ttl", help="LRU entry lifetime (0: until evicted)")
    ] = "10s",
    rate_limit: Annotated[
        float, typer.Option("--rate-limit", help="requests/s per client (0: off)")
    ] = 0.0,
    loop: LoopOption = "auto",
) -> None:
    """The Redis caching proxy of 001: GET /lookup?key=K, an LRU in front of Redis."""

    def start() -> list[ServerProcess]:

        started: list[ServerProcess] = []
        url = redis_url
        try:
            if not url:
                started.append(start_redis())
                url = started[0].target_options["url"]
            args = [
                "--redis-url", url, "--max-keys", str(max_keys), "--ttl", ttl,
                "--rate-limit", f"{rate_limit:g}", "--loop", loop,
            ]  # fmt: skip
            started.append(
                start_python_server("workbench_http.servers.caching_proxy", args, port, host)
            )
        except BaseException:
            for s in started:
                s.stop()
            raise
        return started

    servers = _guarded(start)
    proxy = servers[-1]
    url = f"http://{_display(host)}:{proxy.port}"
    lines = [f"caching-proxy listening on {url} (pid {proxy.pid}, log {proxy.log_path})"]
    if len(servers) == 2:
        lines.append(f"  backed by a throw-away redis on {servers[0].target_options['url']}")
    else:
        lines.append(f"  backed by {redis_url}")
    lines += [
        f"  curl '{url}/lookup?key=k' ; curl {url}/stats",
        f"  workbench run --set target.system=http --set target.options.base_url={url}",
    ]
    _foreground(servers, lines)


@app.command("redis")
@one_line_errors
def redis(
    port: PortOption = 0,
    host: HostOption = LOOPBACK,
    maxmemory: Annotated[str, typer.Option("--maxmemory", help="e.g. 64mb (empty: none)")] = "",
    policy: Annotated[str, typer.Option("--policy", help="eviction policy")] = POLICY,
) -> None:
    """A throw-away redis-server (no persistence) from PATH."""

    server = _guarded(lambda: start_redis(port, host, maxmemory, policy))
    _foreground(
        [server],
        [
            f"{server.version} listening on {server.target_options['url']} (pid {server.pid})",
            f"  workbench run --set target.system=redis "
            f"--set target.options.url={server.target_options['url']}",
        ],
    )


@app.command("memcached")
@one_line_errors
def memcached(
    port: PortOption = 0,
    host: HostOption = LOOPBACK,
    memory_mb: Annotated[int, typer.Option("--memory-mb", help="memcached -m")] = MEMORY_MB,
    threads: Annotated[int, typer.Option("--threads", help="memcached -t")] = THREADS,
) -> None:
    """A throw-away memcached (UDP off) from PATH."""

    server = _guarded(lambda: start_memcached(port, host, memory_mb, threads=threads))
    address = server.target_options["servers"][0]
    _foreground(
        [server],
        [
            f"{server.version} listening on {address} (pid {server.pid})",
            f"  workbench run --set target.system=memcached "
            f"--set 'target.options.servers=[\"{address}\"]'",
        ],
    )


def _display(host: str) -> str:
    return f"[{host}]" if ":" in host else host
