"""The managed varnishd: a memory-limited Varnish in front of the workbench's reference
origin (`workbench.sdk.origin`), both on loopback.

varnishd runs in the foreground (``-F``) with a private working directory (``-n``) in a
scratch directory of its own, which is removed when it stops, so instances never share
their shared-memory log or statistics; its storage is ``-s mem=malloc,SIZE``. It is
stopped by its pid, which ends its cache process too, then the origin is stopped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.sdk import (
    LOOPBACK,
    ServerProcess,
    TargetError,
    free_port,
    launch,
    process_memory,
    program_version,
)
from workbench.sdk.scratch import scratch_dir
from workbench_varnish.vcl import render

STORAGE = "mem"  # the storage's name: varnishstat reports it as SMA.mem.*
START_TIMEOUT = 60.0  # varnishd compiles its VCL with the C compiler before it listens
# Debian installs varnishd in /usr/sbin, which is not on every user's PATH.
SBIN = ("/usr/sbin", "/usr/local/sbin")


def find(program: str, given: str = "") -> str:
    """The path of a Varnish program: `given`, else from PATH or the sbin folders."""
    if given:
        found = shutil.which(given)
        if found is None:
            raise TargetError(f"{given!r} is not an executable program", "target.server.binary")
        return found
    found = shutil.which(program, path=os.pathsep.join([os.environ.get("PATH", ""), *SBIN]))
    if found is None:
        raise TargetError(
            f"{program} is not installed (apt-get install varnish); or point the target at "
            "a running Varnish and set target.managed = false",
            "target.managed",
        )
    return found


def _cache_process(manager: int) -> int:
    """The pid of varnishd's cache process (the child its manager forks), else the
    manager's: the cache process is the one whose CPU and memory are the cache's."""
    with contextlib.suppress(OSError, ValueError):
        children = Path(f"/proc/{manager}/task/{manager}/children").read_text().split()
        if children:
            return int(children[0])
    return manager


@dataclass
class VarnishServer:
    """varnishd and the origin behind it. `pid` is the cache process's."""

    varnishd: ServerProcess
    origin: ServerProcess
    pid: int

    @property
    def version(self) -> str:
        return self.varnishd.version

    @property
    def target_options(self) -> dict[str, Any]:
        return self.varnishd.target_options

    @property
    def address(self) -> str:
        return self.varnishd.address

    @property
    def log_path(self) -> Path | None:
        return self.varnishd.log_path

    @property
    def build(self) -> tuple[str, ...]:
        return self.varnishd.build

    @property
    def notes(self) -> tuple[str, ...]:
        base = self.target_options["base_url"]
        return (
            f"in front of the reference origin at {self.origin.address}",
            f"curl -X PUT --data-binary v '{base}/?key=k' ; curl '{base}/?key=k'",
        )

    def alive(self) -> bool:
        return self.varnishd.alive() and self.origin.alive()

    def memory(self) -> dict[str, int]:
        out = process_memory(self.pid)
        return out | {f"origin_{k}": v for k, v in self.origin.memory().items()}

    def stop(self) -> None:
        try:
            self.varnishd.stop()
        finally:
            self.origin.stop()


def _argv(program: str, workdir: Path, vcl: Path, listen: str, memory: int) -> list[str]:
    return [
        program,
        "-F",  # in the foreground: the workbench holds its pid and stops it
        "-n", str(workdir),
        "-a", listen,
        "-f", str(vcl),
        "-s", f"{STORAGE}=malloc,{memory}",
        "-j", "none",  # no privilege separation: its files stay in the scratch directory
        "-p", "vsl_space=1M",  # the shared-memory log, 80 MB by default
        "-p", "default_grace=0",
        "-p", "default_keep=0",
    ]  # fmt: skip


def start_varnish(
    memory: int, port: int = 0, host: str = LOOPBACK, binary: str = ""
) -> VarnishServer:
    """varnishd with `memory` bytes of malloc storage, in front of a new origin."""
    # The origin's module imports aiohttp (its CAs load at import): only when one starts.
    from workbench.sdk.origin import start_origin

    program = find("varnishd", binary)
    origin = start_origin()
    try:
        port = port or free_port(host)
        scratch = scratch_dir("varnish")  # removed at its stop, or swept once we are gone
        vcl = scratch / "cache.vcl"
        vcl.write_text(render(origin.host, origin.port))
        listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        workdir = scratch / "varnishd"
        raw = program_version([program, "-V"])  # varnishd (varnish-7.1.1 revision ...)
        version = raw.split("(", 1)[-1].split()[0].replace("-", " ") if "(" in raw else "varnish"
        varnishd = launch(
            "varnishd",
            _argv(program, workdir, vcl, listen, memory),
            host,
            port,
            version=version,
            target_options={"base_url": f"http://{listen}", "instance": str(workdir)},
            timeout=START_TIMEOUT,
            scratch=scratch,
        )
    except BaseException:
        origin.stop()
        raise
    varnishd.build = (f"storage: malloc, {memory} bytes", "origin: workbench.sdk.origin")
    return VarnishServer(varnishd, origin, _cache_process(varnishd.pid))
