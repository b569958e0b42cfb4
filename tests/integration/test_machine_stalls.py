"""Issue 35 item 2: the verdict tells a machine stall from a server stall, with real causes,
in both engines.

A managed redis-server pinned to one CPU, an open loop at a steady rate, and either
- a real-time busy loop (SCHED_FIFO) pinned to the server's CPU in short bursts: the
  machine takes the server's CPU, every wait is as long as a burst, and the hiccup meter's
  thread on that CPU wakes as late: the verdict must be "machine stalled", naming the CPU;
- the server stopped (SIGSTOP) for far longer than any hiccup, then resumed: "server
  stalled", whatever the machine's own hiccups meanwhile;
- the server itself holding its CPU in the same bursts (made real-time, it runs a script
  that spins): the meter's thread on that CPU wakes as late as with the busy loop, but the
  run's own process held the CPU, so it is not the machine's stall: "server stalled".
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from workbench.results.events import Event, Interval, StepStarted
from workbench.results.live import RunView
from workbench.results.store import Store
from workbench.results.verdict import MACHINE_BOUND, MACHINE_BUSY, MACHINE_STALLED, SERVER_STALLED
from workbench.run import session
from workbench.spec.steps import load_spec

# Stalls timed against intervals: alone, after the parallel pass.
pytestmark = [pytest.mark.serial, pytest.mark.redis, pytest.mark.timeout(120)]
ENGINES = {"python": ("multiplexed", 2000), "native": ("native", 5000)}
# A stopped server's rates: the backlog of a 1 s stop must drain well within the step even
# on a machine shared with others (16 clients answered slowly), or the p50 is the backlog
# itself and Little's law reads it as too few clients, not a stall.
STOPPED_RATES = {"python": 1000, "native": 2000}
BURST, EVERY, BURSTS = 0.08, 0.5, 5  # the busy loop: 80 ms of every 500 ms, five times
SERVER_STOP = 1.0
# The busy loop: pinned, real-time, sleeping between bursts, ending itself after BURSTS.
BUSY = """
import os, sys, time
cpu, burst, every, count, delay = int(sys.argv[1]), *map(float, sys.argv[2:5]), float(sys.argv[5])
os.sched_setaffinity(0, {cpu})
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
except PermissionError:
    sys.exit(77)
time.sleep(delay)
for _ in range(int(count)):
    end = time.monotonic() + burst
    while time.monotonic() < end:
        pass
    time.sleep(every - burst)
"""
# The server's own burst: a script that spins on the server's clock for ARGV[1] µs.
SPIN = (
    "local s = redis.call('TIME') local t0 = s[1] * 1e6 + s[2] "
    "repeat local n = redis.call('TIME') until n[1] * 1e6 + n[2] - t0 >= tonumber(ARGV[1]) "
    "return 1"
)


def _command(*args: str) -> bytes:
    parts = [f"*{len(args)}\r\n".encode()]
    for a in args:
        parts.append(f"${len(a.encode())}\r\n{a}\r\n".encode())
    return b"".join(parts)


def _pin_workers(server: int, cpus: set[int]) -> None:
    """Pin every thread of this run's workers (the processes this one started, but the
    server and the meter) to `cpus`: a worker left on the server's CPU waits for it while
    the server spins, and that is counted as a spell of starvation, apart from hiccups."""
    me = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == server:
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] != me or b"hiccup" in command:
            continue
        for task in (entry / "task").iterdir():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(int(task.name), cpus)


def _spin_server(host: str, port: int, delay: float) -> None:
    """Make the server spin `BURST` s of every `EVERY`, `BURSTS` times, after `delay` s."""
    time.sleep(delay)
    with socket.create_connection((host, port), timeout=10) as conn:
        for _ in range(BURSTS):
            conn.sendall(_command("EVAL", SPIN, "0", str(round(BURST * 1e6))))
            assert conn.recv(64).startswith(b":1"), "the spinning script failed"
            time.sleep(EVERY - BURST)


def _server_cpu() -> int:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs: one for the server and the busy loop, one for the rest")
    return cpus[-1]


async def _run(tmp_path: Path, engine: str, cause: str) -> RunView:
    strategy, rate = ENGINES[engine]
    rate = STOPPED_RATES[engine] if cause == "server" else rate
    spec = load_spec(
        None,
        [
            "target.system=redis",
            "target.managed=true",
            f"strategy.name={strategy}",
            "workload.mix={get=1}",
            "workload.keys=100",
            "load.concurrency=16",
            "load.workers=1",
            f"load.rate={rate}",
            "load.duration=3",
            "load.warmup=0.5",
            "load.interval=0.5",
        ],
    )
    cpu = _server_cpu()
    view, busy = RunView(), []
    stopped: list[int] = []
    threads: list[threading.Thread] = []

    def on_event(event: Event) -> None:
        if isinstance(event, StepStarted):
            pid = int(event.server["pid"])
            os.sched_setaffinity(pid, {cpu})  # the server's CPU is known: pinned
            if cause == "machine":
                argv = [sys.executable, "-c", BUSY, str(cpu), str(BURST), str(EVERY)]
                busy.append(subprocess.Popen([*argv, str(BURSTS), "0.7"]))
            elif cause == "own":
                try:  # so that it holds its CPU as the busy loop does, not yielding it
                    os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(10))
                except PermissionError:
                    pytest.skip("cannot make a real-time task here (SCHED_FIFO needs CAP_SYS_NICE)")
                _pin_workers(pid, set(os.sched_getaffinity(0)) - {cpu})
                url = urlsplit(str(event.server["url"]))
                address = (url.hostname, url.port, 0.7)
                spinner = threading.Thread(target=_spin_server, args=address, daemon=True)
                spinner.start()
                threads.append(spinner)
        elif isinstance(event, Interval) and event.index == 1 and cause == "server" and not stopped:
            pid = int(view.steps[0].server["pid"])
            stopped.append(pid)
            os.kill(pid, signal.SIGSTOP)
            asyncio.get_running_loop().call_later(SERVER_STOP, os.kill, pid, signal.SIGCONT)

    try:
        async for event in session.run(spec, Store(tmp_path / "runs.sqlite")):
            view = view.apply(event)
            on_event(event)
    finally:
        for thread in threads:
            thread.join(timeout=10)
        for proc in busy:
            if proc.wait(timeout=10) == 77:
                pytest.skip("cannot make a real-time task here (SCHED_FIFO needs CAP_SYS_NICE)")
    return view


@pytest.mark.parametrize("engine", list(ENGINES))
async def test_a_real_time_task_on_the_servers_cpu_reads_machine_stalled(
    engine: str, tmp_path: Path
) -> None:
    view = await _run(tmp_path, engine, "machine")
    step = view.steps[0]
    verdict = step.verdict
    cpu = str(_server_cpu())
    if verdict.kind == MACHINE_BOUND:  # a machine full of others' work too (shared): its own
        assert verdict.figures["machine_busy"] >= MACHINE_BUSY, (engine, verdict.line)
    else:
        assert verdict.kind == MACHINE_STALLED, (engine, verdict.line)
        assert f"CPU {cpu} lost" in verdict.evidence, verdict.line
    assert "server stalled" not in verdict.line
    hiccups = step.totals.hiccups
    assert hiccups is not None and hiccups.cpus[cpu][2] >= BURSTS - 1  # each burst seen
    longest = max(e.length_ns for e in hiccups.events if e.cpu == cpu)
    assert 0.8 * BURST * 1e9 <= longest <= 3 * BURST * 1e9, longest


@pytest.mark.parametrize("engine", list(ENGINES))
async def test_a_stopped_server_still_reads_server_stalled(engine: str, tmp_path: Path) -> None:
    view = await _run(tmp_path, engine, "server")
    step = view.steps[0]
    verdict = step.verdict
    assert verdict.kind == SERVER_STALLED, (engine, verdict.line)
    assert step.summary is not None and step.summary.max_us >= 0.8 * SERVER_STOP * 1e6
    assert step.totals.hiccups is not None  # measured, and not what explains the waits
    load = verdict.figures.get("server_share")  # what the verdict judged its stalls at
    assert step.usage.machine.unexplained_ns(load) >= 0.8 * SERVER_STOP * 1e9


@pytest.mark.parametrize("engine", list(ENGINES))
async def test_a_hiccup_the_server_itself_held_is_not_the_machines(
    engine: str, tmp_path: Path
) -> None:
    view = await _run(tmp_path, engine, "own")
    step = view.steps[0]
    verdict = step.verdict
    cpu = str(_server_cpu())
    hiccups = step.totals.hiccups
    assert hiccups is not None
    # The meter saw each burst on the server's CPU, as long as the busy loop's...
    held = [e for e in hiccups.events if e.cpu == cpu and e.length_ns >= 0.8 * BURST * 1e9]
    assert len(held) >= BURSTS - 1, hiccups.events
    # ...but the run's own server held the CPU: no machine stall, the server's wait.
    assert verdict.kind == SERVER_STALLED, (engine, verdict.line)
    assert "machine stalled" not in verdict.line
    assert not [e for e in step.usage.machine.hiccups if e.length_ns >= 0.8 * BURST * 1e9]
    assert all(getattr(e, "own", "") == "server" for e in held), held
