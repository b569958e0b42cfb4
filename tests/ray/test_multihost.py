"""The workbench across machines, tried as a person runs it: on the namespace test bed.

srv (10.77.0.1) runs redis-server; a (10.77.0.2) is the Ray head and runs `workbench run`;
b (10.77.0.3) is a Ray node. Every connection goes to those addresses or to a host's own
loopback: the bed has no route anywhere else. Each late join adds a host of its own and
takes it out of the cluster; each lost-host run joins a host of its own and ends it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from queue import Empty, Queue
from typing import IO

import netbed
import pytest

from workbench.results.store import Store

SERVER = "redis://10.77.0.1:6379/0"
ENGINES = {"python": "multiplexed", "native": "native"}  # engine -> the Redis strategy it runs
RUN_TIMEOUT = 240.0  # seconds for one CLI run on the bed (Ray start-up on a busy machine)


@dataclass
class Output:
    code: int
    lines: list[tuple[float, str]]  # (seconds since the command began, line)

    @property
    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def when(self, pattern: str) -> float:
        """When the first line matching `pattern` came."""
        for t, line in self.lines:
            if re.search(pattern, line):
                return t
        raise AssertionError(f"no line matches {pattern!r} in:\n{self.text}")


def workbench(
    host: netbed.Host,
    args: list[str],
    on_line: Callable[[float, str], None] | None = None,
) -> Output:
    """`workbench ARGS` on the host, stdout and stderr together, line by line as they come.

    Past RUN_TIMEOUT (lines or none) the run is asked what it waits on (SIGUSR1), then
    stopped (SIGTERM) and killed, and the test fails with all it printed."""
    started = time.monotonic()
    proc = subprocess.Popen(
        host.command(["workbench", *args]),
        env=host.env(**netbed.TOKEN),
        cwd=host.home,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    lines: list[tuple[float, str]] = []
    queue: Queue[str | None] = Queue()
    threading.Thread(target=_read_lines, args=(proc.stdout, queue), daemon=True).start()
    try:
        while (line := _next_line(queue, started + RUN_TIMEOUT)) is not None:
            t = time.monotonic() - started
            lines.append((t, line.rstrip("\n")))
            if on_line is not None:
                on_line(t, line)
        code = proc.wait(timeout=30)
    except TimeoutError:
        text = "\n".join(line for _, line in lines)
        hung = _stop_hung(host, queue)
        raise AssertionError(f"workbench ran over {RUN_TIMEOUT:.0f} s:\n{text}\n{hung}") from None
    finally:
        for pid in host.pids(HUNG_NEEDLE):  # nsenter's child: killing nsenter leaves it
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return Output(code, lines)


HUNG_NEEDLE = "bin/workbench\x00run"  # `workbench run` on a host, by its command line


def _read_lines(stream: IO[str], queue: Queue[str | None]) -> None:
    for line in stream:
        queue.put(line)
    queue.put(None)


def _next_line(queue: Queue[str | None], deadline: float) -> str | None:
    """The next line (None at the end of output); TimeoutError past the deadline."""
    try:
        return queue.get(timeout=max(0.0, deadline - time.monotonic()))
    except Empty:
        raise TimeoutError from None


def _stop_hung(host: netbed.Host, queue: Queue[str | None]) -> str:
    """What a run over its time printed after SIGUSR1 (what it waits on) and SIGTERM."""
    said: list[str] = []
    for sig, wait in ((signal.SIGUSR1, 3.0), (signal.SIGTERM, 20.0)):
        for pid in host.pids(HUNG_NEEDLE):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        with contextlib.suppress(TimeoutError):
            deadline = time.monotonic() + wait
            while (line := _next_line(queue, deadline)) is not None:
                said.append(line.rstrip("\n"))
    return "\n".join(said)


def run_args(host: netbed.Host, *sets: str, strategy: str = "multiplexed") -> list[str]:
    """A run of the Redis on srv from `host`, with Ray workers, stored in the host's HOME."""
    return [
        "run",
        "--store",
        str(store_path(host)),
        "--set",
        "target.system=redis",
        "--set",
        f"target.options.url={SERVER}",
        "--set",
        f"strategy.name={strategy}",
        "--set",
        "load.launcher=ray",
        "--set",
        "load.ray_address=auto",
        "--set",
        "load.warmup=0",
        "--set",
        "load.concurrency=8",
        *[a for s in sets for a in ("--set", s)],
    ]


def store_path(host: netbed.Host) -> Path:
    return host.home / "runs.sqlite3"


def last_run(host: netbed.Host):  # type: ignore[no-untyped-def]
    # A stored run reads its intervals from the store as they are iterated, so the store
    # stays open as long as the run is used (closed when the run is collected).
    return Store(store_path(host)).load("last")


def no_ray_lines(out: Output) -> None:
    """Ray's own lines never reach the terminal; the run names the file they went to."""
    assert "(raylet)" not in out.text and "(gcs_server)" not in out.text, out.text
    assert not re.search(r"^\[?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", out.text, re.M), out.text
    # Ray warns at every connect from a thread; the warning is in the file, not on screen.
    assert "SIGTERM handler" not in out.text, out.text
    (named,) = re.findall(r"Ray's own log lines go to (\S+)", out.text)
    assert "SIGTERM handler is not set" in Path(named).read_text()


def test_the_hosts_reach_each_other_and_nothing_else(hosts: netbed.Bed) -> None:
    for name in ("srv", "a", "b"):
        routes = hosts.routes(name)
        assert not any("default" in r for r in routes), routes
        # Only the bed's own subnet and the host's loopback (and IPv6 link-local/multicast
        # on its veth, which reach no further).
        for route in routes:
            where = (
                route.split()[1]
                if route.split()[0] in ("local", "broadcast", "multicast")
                else route.split()[0]
            )
            assert where.startswith(("10.77.0.", "127.", "::1", "fe80::", "ff00::")), route


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_remote_target_is_refused_without_the_opt_in_and_nothing_connects(
    hosts: netbed.Bed, engine: str
) -> None:
    srv, a = hosts["srv"], hosts["a"]
    before = int(netbed.redis_info(srv, "total_connections_received"))
    out = workbench(a, run_args(a, "load.duration=1", strategy=ENGINES[engine]))
    assert out.code == 2, out.text
    assert "10.77.0.1" in out.text and "--allow-remote" in out.text, out.text
    # The only connection since is the one that asked (redis-cli, on srv's loopback).
    assert int(netbed.redis_info(srv, "total_connections_received")) == before + 1


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_an_allowed_remote_run_spreads_its_workers_over_the_hosts(
    hosts: netbed.Bed, engine: str
) -> None:
    srv, a = hosts["srv"], hosts["a"]
    out = workbench(
        a,
        [
            *run_args(
                a, "load.duration=2", "load.interval=0.5", "load.workers=2",
                strategy=ENGINES[engine],
            ),
            "--allow-remote",
        ],
    )  # fmt: skip
    assert out.code == 0, out.text
    # The nodes by their addresses: one worker on each machine (spread, 1 CPU each).
    assert re.search(
        r"nodes: 10\.77\.0\.[23] \(1 CPUs, 1 worker\(s\)\); 10\.77\.0\.[23] ", out.text
    )
    no_ray_lines(out)
    run = last_run(a)
    assert run.status == "completed"
    (step,) = run.steps
    assert step.stats.ops > 0
    # On a loaded machine an op still in flight at the end can outlast the wait after it
    # and is counted abandoned (one worker's 8 clients, seen in a loaded CI run); nothing
    # else may fail.
    assert set(step.stats.errors) <= {"abandoned"}, step.stats.first_errors
    assert all(len(i.stats.cpu) == 2 for i in step.intervals)
    assert int(netbed.redis_info(srv, "db0").split(",")[0].split("=")[1]) > 0  # keys=N
    # Each load host's CPU is read on that host, apart from the coordinator's machine.
    hosts_seen = {h for i in step.intervals for h in i.stats.server.get("hosts", {})}
    assert hosts_seen == {"10.77.0.2", "10.77.0.3"}


def test_a_server_in_protected_mode_is_named_as_refusing(hosts: netbed.Bed) -> None:
    srv, a = hosts["srv"], hosts["a"]
    netbed.redis_on(srv, 6380, "--protected-mode", "yes")
    out = workbench(
        a,
        [
            "run", "--store", str(store_path(a)), "--allow-remote",
            "--set", "target.system=redis", "--set", "target.options.url=redis://10.77.0.1:6380/0",
            "--set", "strategy.name=multiplexed",
            "--set", "load.duration=1", "--set", "load.workers=1", "--set", "load.warmup=0",
        ],
    )  # fmt: skip
    assert out.code == 1, out.text
    assert "closed the connection after refusing it" in out.text, out.text
    assert "DENIED" in out.text and "IndexError" not in out.text, out.text


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_host_that_joins_late_is_not_used_by_the_step_under_way(
    hosts: netbed.Bed, engine: str
) -> None:
    a = hosts["a"]
    late = f"late-{engine}"  # a machine of its own per run: 10.77.0.7 and .8
    joined: list[float] = []

    def join(t: float, line: str) -> None:
        if line.startswith("[  1.0s]") and not joined:
            c = hosts.add(late, 7 + sorted(ENGINES).index(engine))
            netbed.copy_token((a.home / ".ray" / "auth_token").read_text(), c)
            netbed.ray_join(c, a, nice=True)
            joined.append(t)

    out = workbench(
        a,
        [
            *run_args(
                a, "load.duration=12", "load.interval=1", "load.workers=2",
                strategy=ENGINES[engine],
            ),
            "--allow-remote",
        ],
        on_line=join,
    )  # fmt: skip
    assert joined, out.text
    c = hosts[late]
    try:
        assert out.code == 0, out.text
        assert joined and joined[0] < out.when(r"^== run "), "c joined only after the step"
        assert c.address not in out.text
        assert not c.pids("ray::WorkerActor")  # no worker ever started on it
        run = last_run(a)
        assert run.status == "completed", out.text
        assert all(len(i.stats.cpu) == 2 for i in run.steps[0].intervals)
    finally:
        c.run(["ray", "stop"], check=False, **netbed.TOKEN)  # c leaves the cluster


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_host_lost_mid_run_is_reported_at_its_last_interval_and_the_run_ends_on_time(
    hosts: netbed.Bed, engine: str
) -> None:
    # A third load machine for this run alone: one worker on each of a, b and it; it dies.
    a = hosts["a"]
    doomed = hosts.add(f"lost-{engine}", 5 + sorted(ENGINES).index(engine))
    netbed.copy_token((a.home / ".ray" / "auth_token").read_text(), doomed)
    netbed.ray_join(doomed, a)
    killed: list[float] = []

    def lose_it(t: float, line: str) -> None:
        if line.startswith("[  3.0s]") and not killed:
            raylets = doomed.pids("raylet")
            assert raylets
            for pid in raylets:  # its raylet, by pid...
                os.kill(pid, signal.SIGKILL)
            for pid in doomed.pids():  # ...and the rest of the machine with it
                if pid != doomed.init:
                    os.kill(pid, signal.SIGKILL)
            killed.append(t)

    duration, interval = 8.0, 1.0
    out = workbench(
        a,
        [
            *run_args(
                a, f"load.duration={duration:g}", f"load.interval={interval:g}",
                "load.workers=3", strategy=ENGINES[engine],
            ),
            "--allow-remote",
        ],
        on_line=lose_it,
    )  # fmt: skip
    assert killed, out.text
    assert re.search(rf"nodes: .*{re.escape(doomed.address)} \(1 CPUs, 1 worker", out.text)
    assert out.code == 0, out.text  # what is stored is what was measured
    (notice,) = [line for _, line in out.lines if "worker lost" in line]
    assert doomed.address in notice, notice
    last = float(re.search(r"its last interval ended ([\d.]+) s", notice).group(1))  # type: ignore[union-attr]
    assert 3.0 <= last <= 4.0, notice
    ops = int(re.search(r"after measuring (\d+) ops", notice).group(1))  # type: ignore[union-attr]
    assert ops > 0
    # Lost two intervals after its last one, not when Ray's failure detection says so.
    lost_at = out.when("worker lost")
    assert lost_at - killed[0] <= 2 * interval + 1.0, (lost_at, killed)
    # The run ends within two intervals of its planned end.
    begun = out.when(r"^\[  1\.0s\]") - interval
    assert out.when(r"^== run \(degraded\)") - begun <= duration + 2 * interval, out.text
    no_ray_lines(out)
    run = last_run(a)
    assert run.status == "degraded" and run.steps[0].status == "degraded"
    assert len(run.steps[0].intervals) == duration / interval
    # The two machines that stayed measured every interval to the end.
    assert all(len(i.stats.cpu) == 2 for i in list(run.steps[0].intervals)[4:])
