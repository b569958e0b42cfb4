"""Issue 13 item 3 (the worker part): workers never outlive the coordinator."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from faults_support import children
from support import stopped

COORDINATOR = textwrap.dedent(
    """
    import asyncio, sys
    from workbench.run import session
    from workbench.results.events import Interval
    from workbench.spec.steps import load_spec
    from workbench.results.store import Store

    async def main():
        spec = load_spec(None, ["load.duration=60", "load.warmup=0", "load.interval=0.25",
                                "load.workers=2", "load.concurrency=2"])
        async for e in session.run(spec, Store(sys.argv[1])):
            if isinstance(e, Interval):
                print("measuring", flush=True)

    asyncio.run(main())
    """
)


def _is_meter(pid: int) -> bool:
    """The machine's hiccup meter (native or its Python stand-in), not a worker."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read()
    except OSError:
        return False
    return b"--hiccup" in argv or b"hiccup_fallback" in argv


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_a_worker_dies_with_its_coordinator_even_when_it_cannot_run(tmp_path: Path) -> None:
    """A stopped worker cannot watch its parent: only the kernel (PDEATHSIG) can end it."""
    coordinator = subprocess.Popen(
        [sys.executable, "-c", COORDINATOR, str(tmp_path / "runs.sqlite")],
        stdout=subprocess.PIPE,
        text=True,
    )
    workers: list[int] = []
    try:
        assert coordinator.stdout is not None
        assert coordinator.stdout.readline().strip() == "measuring"
        found = children(coordinator.pid)
        workers += [c for c in found if not _is_meter(c)]
        meters = [c for c in found if _is_meter(c)]
        assert len(workers) == 2 and len(meters) == 1, found
        stopped(workers[0])
        workers += meters  # the meter dies with its coordinator too
        coordinator.kill()
        coordinator.wait(timeout=10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not all(_gone(w) for w in workers):
            time.sleep(0.05)
        assert all(_gone(w) for w in workers), [w for w in workers if not _gone(w)]
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
            coordinator.wait()
        for w in workers:  # only if the test failed: leave nothing behind
            if not _gone(w):
                os.kill(w, signal.SIGKILL)
