"""`workbench doctor`: what this machine has for the workbench, each item with what it is
needed for. Looks only: nothing is started, built or installed (GPL tools stay unimported)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import resource
import shutil
import subprocess
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Annotated

import typer

from workbench.cli.common import one_line_errors, out
from workbench.sdk.adapter import CacheSystem
from workbench.sdk.discovery import plugin_statuses

GOVERNOR = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


@dataclass(frozen=True)
class Item:
    name: str
    ok: bool
    found: str  # what was found (a version, a path, a figure) or why not
    needed_for: str


def _version(argv: list[str]) -> str:
    """First line of a program's version output, or "" when it cannot run."""
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if res.returncode != 0 or not (res.stdout or res.stderr).strip():
        return ""
    first = (res.stdout or res.stderr).strip().splitlines()[0]
    return re.split(r" sha=| \(", first)[0]  # the version, not the build details


def _program(name: str, argv: list[str], needed_for: str) -> Item:
    path = shutil.which(name)
    if path is None:
        return Item(name, False, "not on PATH", needed_for)
    return Item(name, True, _version(argv) or path, needed_for)


def _systems() -> list[CacheSystem]:
    return [row.system for row in plugin_statuses() if row.system is not None]


def _native() -> Item:
    from workbench.engine.native import version
    from workbench.spec.native_binary import binary_path, missing_reason

    native = [s.name for s in _systems() if any(t.engine == "native" for t in s.strategies)]
    needed = f"the native strategies: the default of {', '.join(native)} (measures the server)"
    path = binary_path()
    if path is None:
        return Item("native engine (workbench-native)", False, missing_reason(), needed)
    return Item("native engine (workbench-native)", True, f"{version()} at {path}", needed)


def _server_programs() -> list[Item]:
    """The programs the systems' managed servers run (`ServerLauncher.programs`)."""
    found: dict[str, tuple[list[str], list[str]]] = {}
    for system in _systems():
        for program, argv in system.server.programs if system.server else ():
            found.setdefault(program, (list(argv), []))[1].append(system.name)
    return [
        _program(name, argv, f"managed {' and '.join(names)} servers")
        for name, (argv, names) in found.items()
    ]


def _python_package(name: str, needed_for: str) -> Item:
    # Looked up, never imported: Ray is slow to import, libcachesim is GPL (used across a
    # process boundary only).
    if importlib.util.find_spec(name) is None:
        return Item(name, False, "not installed", needed_for)
    try:
        found = metadata.version(name)
    except metadata.PackageNotFoundError:
        found = "installed"
    return Item(name, True, found, needed_for)


def _fd_limit() -> Item:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    hard_text = "unlimited" if hard == resource.RLIM_INFINITY else f"{hard:,}"
    return Item(
        "open files (ulimit -n)",
        soft >= 4096 or hard == resource.RLIM_INFINITY or hard >= 4096,
        f"soft {soft:,}, hard {hard_text} (raised to the hard limit for a run)",
        "many clients: each connection is an open file",
    )


def _governor() -> Item:
    needed = "steady figures: 'performance' keeps the CPU clock from changing under load"
    try:
        governor = GOVERNOR.read_text().strip()
    except OSError:
        return Item("CPU governor", True, "not exposed (a VM or container)", needed)
    return Item("CPU governor", governor == "performance", governor, needed)


def _load() -> Item:
    one, five, _ = os.getloadavg()
    cpus = os.cpu_count() or 1
    return Item(
        "load",
        one < cpus * 0.5,
        f"{one:.2f} (1 min), {five:.2f} (5 min) on {cpus} CPUs",
        "figures of this machine alone: other work takes CPU from the load and the server",
    )


def checks() -> list[Item]:
    return [
        _native(),
        _program("cargo", ["cargo", "--version"], "building the native engine (./dev, pip)"),
        *_server_programs(),
        _python_package("ray", "load.launcher = 'ray' (pip install 'cache-workbench[ray]')"),
        _python_package("libcachesim", "simulated eviction references of hit-rate runs"),
        _fd_limit(),
        _governor(),
        _load(),
    ]


@one_line_errors
def command(
    as_json: Annotated[bool, typer.Option("--json", help="JSON for scripts")] = False,
) -> None:
    """What this machine has for the workbench, and what each item is needed for.

    Exit 0 always: a missing item only limits what can run.
    """
    items = checks()
    if as_json:
        out(json.dumps([asdict(i) for i in items], indent=2))
        return
    width = max(len(i.name) for i in items)
    for i in items:
        mark = "ok  " if i.ok else "--  "
        out(f"{mark}{i.name:<{width}}  {i.found}")
        out(f"    {'':<{width}}  needed for: {i.needed_for}")
