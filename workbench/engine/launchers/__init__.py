"""Where workers run: local processes, or actors on a Ray cluster.

The coordinator asks `open_launcher(load)` for a launcher and from then on sees only
worker handles (send, receive, wait, close, kill, describe_exit, pid). The Ray launcher is
imported only when a spec asks for it: it is the one module that imports `ray`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from workbench.engine.launchers.local import LocalLauncher
from workbench.spec.model import Load


class Handle(Protocol):
    """What the coordinator needs from a running worker, wherever it runs."""

    index: int

    @property
    def pid(self) -> int: ...

    async def send(self, message: dict[str, Any]) -> bool: ...

    async def receive(self) -> dict[str, Any] | None: ...

    async def wait(self) -> None: ...

    def describe_exit(self) -> str: ...

    def kill(self) -> None:
        """Abandon the worker at once: no goodbye, no waiting."""
        ...

    async def close(self) -> None: ...


class Launcher(Protocol):
    """Starts workers and says where they run."""

    @property
    def cpus(self) -> int:
        """CPUs the workers can use: "one worker per core" means one per these."""
        ...

    async def launch(
        self, count: int, first_index: int = 0, command: list[str] | None = None
    ) -> list[Any]:
        """`command`: a worker program instead of the Python worker (the native engine)."""
        ...

    def nodes(self, handles: list[Any]) -> list[dict[str, Any]]:
        """{"host", "cpus", "workers"} per machine the handles run on; [] for this host."""
        ...

    @property
    def log_path(self) -> Path | None:
        """Where the launcher's own log lines go (Ray's), if it has any."""
        ...

    async def host_times(self, handles: list[Any]) -> dict[str, tuple[int, int, int]]:
        """(busy, total) CPU jiffies and CPUs of each machine the handles run on, by the
        name `nodes` gives it; {} for this host (the coordinator reads its own)."""
        ...

    async def hiccups(
        self, handles: list[Any]
    ) -> dict[str, tuple[dict[str, Any], list[Any]]]:
        """The hiccup meter of each machine the handles run on: its ready frame and its new
        slices (`hiccup_meter.Slice`), by the name `nodes` gives it; {} for this host (the
        coordinator's own)."""
        ...

    async def close(self) -> None: ...


RAY_LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": every Ray address on 127.0.0.1


async def open_launcher(load: Load, log_path: Path | None = None) -> Launcher:
    """The launcher the spec asks for, connected and ready to start workers.

    `log_path`: the file the Ray launcher writes Ray's own log lines to."""
    if load.launcher == "ray":
        if load.ray_address == "local":
            # A private Ray on this machine talks over loopback only. Ray reads this when it
            # is imported (otherwise it binds the machine's outward address).
            os.environ.setdefault(RAY_LOOPBACK_ONLY, "0")
        # Imported here: `ray` is an optional extra, and only this launcher needs it.
        from workbench.engine.launchers.ray import RayLauncher

        return await RayLauncher.connect(load.ray_address, load.ray_placement, log_path)
    return LocalLauncher()
