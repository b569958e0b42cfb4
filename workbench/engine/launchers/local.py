"""Worker processes on this machine: how they start, and the handle the coordinator holds."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from workbench.engine.wire import pack, read_frame
from workbench.sdk.servers import python_module


class WorkerHandle:
    """A running worker: send orders, read frames, see its last stderr lines, stop it."""

    def __init__(self, index: int, proc: asyncio.subprocess.Process) -> None:
        self.index = index
        self.proc = proc
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=30)
        self.broken: str = ""  # why its stream of frames could not be read, if it could not
        self.engine: dict[str, str] = {"name": "python", "version": ""}  # from its ready frame
        self._stderr_task = asyncio.create_task(self._collect_stderr())

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def _collect_stderr(self) -> None:
        assert self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            self.stderr_tail.append(line.decode(errors="replace").rstrip())

    async def send(self, message: dict[str, Any]) -> bool:
        """False when the worker is gone."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(pack(message))
            await self.proc.stdin.drain()
            return True
        except (ConnectionError, BrokenPipeError, RuntimeError):
            return False

    async def wait(self) -> None:
        """Until the process has exited (its exit code is then known)."""
        await self.proc.wait()

    async def receive(self) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        try:
            return await read_frame(self.proc.stdout)
        except (ValueError, ConnectionError) as exc:
            # The stream is out of step: nothing more from it can be trusted.
            self.broken = f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGKILL)
            return None

    def describe_exit(self) -> str:
        code = self.proc.returncode
        tail = " | ".join(list(self.stderr_tail)[-3:])
        if self.broken:
            what = f"sent an unreadable frame ({self.broken})"
        elif code is not None and code < 0:
            what = f"was killed by {signal.Signals(-code).name}"
        else:
            what = f"exited with code {code}"
        return f"worker {self.index} (pid {self.pid}) {what}" + (f": {tail}" if tail else "")

    def kill(self) -> None:
        """Abandon the worker at once (a second Ctrl-C): no goodbye, no waiting."""
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGKILL)
        self._stderr_task.cancel()

    async def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()  # the worker ends at end of input
        try:
            await asyncio.wait_for(self.proc.wait(), timeout=10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGKILL)
            await self.proc.wait()
        self._stderr_task.cancel()


async def launch_local(count: int, command: list[str] | None = None) -> list[WorkerHandle]:
    """Start `count` worker processes and wait until each says it is ready.

    `command`: another worker program (the native engine's binary) instead of the Python
    worker."""
    handles = []
    argv = command or python_module("workbench.engine.worker")
    # A worker dies with this process (PR_SET_PDEATHSIG); it checks it has the right parent.
    env = {**os.environ, "WORKBENCH_PARENT_PID": str(os.getpid())}
    for i in range(count):
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            # Own session: a Ctrl-C in the terminal reaches the coordinator only, which then
            # stops the workers in order and keeps what they measured.
            start_new_session=True,
            limit=2**26,
        )
        handles.append(WorkerHandle(i, proc))
    for h in handles:
        first = await asyncio.wait_for(h.receive(), timeout=60)
        if not first or first.get("type") != "ready":
            await h.proc.wait()
            raise RuntimeError(f"worker did not start: {h.describe_exit()}")
        h.engine = first.get("engine") or {"name": "python", "version": ""}
    return handles


class LocalLauncher:
    """Worker processes on this machine."""

    @property
    def cpus(self) -> int:
        return os.cpu_count() or 1

    async def launch(
        self, count: int, first_index: int = 0, command: list[str] | None = None
    ) -> list[WorkerHandle]:
        handles = await launch_local(count, command)
        for offset, h in enumerate(handles):
            h.index = first_index + offset
        return handles

    def nodes(self, handles: list[Any]) -> list[dict[str, Any]]:
        return []

    @property
    def log_path(self) -> Path | None:
        return None

    async def host_times(self, handles: list[Any]) -> dict[str, tuple[int, int, int]]:
        return {}

    async def close(self) -> None:
        return None
