"""`workbench serve NAME`: run a system's managed server in the foreground.

NAME is a system with a server launcher (`workbench serve redis`) or a recipe one declares
(`ServerLauncher.recipes`: the HTTP plugin's `kv-store` and `caching-proxy`); `--set
OPTION=VALUE` sets its server options as `target.server.OPTION` does in a profile. The
server is started the way runs start managed servers (the plugin's own launcher, on the
toolkit of `workbench.sdk.servers`): on loopback, waited on until it accepts connections,
and stopped by its pid when this command ends: on Ctrl-C (SIGINT), SIGTERM or SIGHUP, with
exit status 0; killed outright, the servers die with it. If the server dies on its own, the
command ends with status 1 and the end of the server's log.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Annotated, Any

import typer

from workbench.cli import stop_signals
from workbench.cli.common import ExitStatus, fail, one_line_errors, out
from workbench.sdk.adapter import CacheSystem, ManagedServer
from workbench.sdk.discovery import plugin_statuses
from workbench.sdk.errors import SpecError
from workbench.sdk.remote import require_loopback
from workbench.sdk.servers import LISTEN_HOST, LISTEN_PORT, LOOPBACK

# A closed terminal (SIGHUP, unless under nohup) stops the servers as Ctrl-C does. Should
# this process die without stopping them (SIGKILL), they die with it
# (`workbench.sdk.servers.launch`).


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def _alive(server: ManagedServer) -> bool:
    alive = getattr(server, "alive", None)
    if callable(alive):
        return bool(alive())
    try:
        os.kill(server.pid, 0)
    except OSError:
        return False
    return True


def _foreground(server: ManagedServer, lines: list[str]) -> None:
    """Print what runs, wait until a signal or the server's death, stop it."""
    previous = {s: signal.signal(s, _raise_stop) for s in stop_signals.handled()}
    try:
        for line in lines:
            out(line)
        out("Ctrl-C stops it.")
        while _alive(server):
            time.sleep(0.2)
        log_path = getattr(server, "log_path", None)
        log = log_path.read_text(errors="replace").splitlines()[-8:] if log_path else []
        server.stop()
        if log_path:  # its end is printed below: nothing is left in workbench-servers/
            log_path.unlink(missing_ok=True)
        raise fail(
            f"the server (pid {server.pid}) exited" + "".join(f"\n  {line}" for line in log),
            ExitStatus.ERROR,
        )
    except (_Stop, KeyboardInterrupt):
        server.stop()
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


def _check_free(host: str, port: int) -> None:
    """A port another process listens on is refused before starting: the server failed to
    bind, but the other one answered the readiness check, so "listening" was printed."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise SpecError(
                f"port {port} on {host} is taken ({exc.strerror}); choose another, or 0 for a "
                "free one",
                "--port",
            ) from None


def servable() -> dict[str, tuple[CacheSystem, dict[str, Any]]]:
    """What `serve` can start, by name: each system with a server launcher, and each recipe
    a launcher declares, with the server options it stands for."""
    found: dict[str, tuple[CacheSystem, dict[str, Any]]] = {}
    for row in plugin_statuses():
        system = row.system
        if system is None or system.server is None:
            continue
        found[system.name] = (system, {})
        for recipe, options in system.server.recipes.items():
            found.setdefault(recipe, (system, dict(options)))
    return found


def _settings(texts: list[str]) -> dict[str, Any]:
    """`--set OPTION=VALUE` texts, each VALUE read as JSON when it is, else as text."""
    out: dict[str, Any] = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise SpecError(f"expected OPTION=VALUE; got {text!r}", "--set")
        try:
            out[name.strip()] = json.loads(value)
        except ValueError:
            out[name.strip()] = value
    return out


def _run_line(system: CacheSystem, target_options: Mapping[str, Any]) -> str:
    """The `workbench run` that points at this server."""
    sets = "".join(
        f" --set 'target.options.{k}={json.dumps(v) if not isinstance(v, str) else v}'"
        for k, v in target_options.items()
    )
    return f"  workbench run --set target.system={system.name}{sets}"


@one_line_errors
def command(
    name: Annotated[str, typer.Argument(help="a system with a managed server, or a recipe")],
    port: Annotated[int, typer.Option("--port", help="port to listen on (0: a free one)")] = 0,
    host: Annotated[
        str, typer.Option("--host", help="loopback address to listen on (127.0.0.1 or ::1)")
    ] = LOOPBACK,
    settings: Annotated[
        list[str] | None,
        typer.Option("--set", help="a server option, OPTION=VALUE (as target.server.OPTION)"),
    ] = None,
) -> None:
    """Run a system's managed server in the foreground to point experiments at; Ctrl-C
    stops it. `workbench plugins` lists each system's server options."""
    known = servable()
    if name not in known:
        raise SpecError(f"expected one of {', '.join(sorted(known))}; got {name!r}", "NAME")
    system, recipe = known[name]
    launcher = system.server
    assert launcher is not None
    require_loopback(host, "--host")
    if not 0 <= port <= 65535:  # the kernel would pick one, and the server then be lost
        raise SpecError(f"expected a port from 0 (a free one) to 65535; got {port}", "--port")
    if port:
        _check_free(host, port)
    given = {**recipe, **_settings(settings or [])}
    options = launcher.options.resolve(given, "target.server")
    options |= {LISTEN_HOST: host, LISTEN_PORT: port}
    server = _guarded(lambda: launcher.start(options))
    address = getattr(server, "address", "") or "loopback"
    log = getattr(server, "log_path", None)
    lines = [
        f"{server.version or name} listening on {address} (pid {server.pid}"
        + (f", log {log})" if log else ")"),
        *(f"  {note}" for note in getattr(server, "notes", ())),
        _run_line(system, server.target_options),
    ]
    _foreground(server, lines)
