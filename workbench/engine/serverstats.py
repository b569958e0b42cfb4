"""Server and machine figures, gathered by the coordinator off the load path.

A background task polls the system's own statistics (INFO, ``stats``...) through a
connection of its own; each merged interval then takes the latest figures at once,
never waiting for a slow or stopped server. Added to every interval's ``server`` dict:

- ``cpu_seconds``: server process CPU (user+sys) since the previous interval: from
  /proc/PID/stat for a managed server, else from the server's own counters (the pair its
  system declares in `ServerFigures.cpu`, such as INFO's ``used_cpu_user``/``used_cpu_sys``);
- ``cpu_cores``: the cores the server may use, when known (a managed server's affinity);
- ``node_cpu``: a cluster's CPU seconds by node address (a managed cluster's node
  processes, else the figures ``node_cpu@HOST:PORT`` its nodes report); then
  ``cpu_seconds`` is their sum and ``cpu_cores`` the cores any node may use;
- ``host_busy`` (0..1 across all cores of this machine, from /proc/stat), ``host_cpus``.

CPU and busy share count from the start of the measured phase. After an op-budget warm-up
the first interval has neither (its window holds warm-up work too).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Mapping
from typing import Any

from workbench.engine.polling import poll
from workbench.sdk.adapter import NODE_CPU, CacheSystem, Connection, ManagedServer, Strategy

STATS_TIMEOUT = 2.0
FINAL_TIMEOUT = 1.0  # the last reading of a step waits at most this long
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


async def connect_for_stats(
    system: CacheSystem,
    strategy: Strategy,
    system_options: dict[str, Any],
    strategy_options: dict[str, Any],
) -> Connection:
    """A connection to read the server's own figures through: the step's strategy, or for
    a native strategy (which has no Python connection) the system's default strategy, or
    its `cluster` strategy on a cluster target (which reads every node)."""
    if strategy.engine == "native":
        clustered = system_options.get("cluster") and any(
            s.name == "cluster" for s in system.strategies
        )
        strategy = system.strategy("cluster" if clustered else system.default_strategy)
        strategy_options = strategy.options.resolve({}, "strategy.options")
    return await strategy.connect(system_options, strategy_options)


def process_cpu_seconds(pid: int) -> float | None:
    """User+system CPU seconds of a process, from /proc (None if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def host_times() -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs of this machine, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    total = sum(values[:8])  # guest time is already counted in user
    return total - idle, total


def counted_cpu(figures: dict[str, Any], names: tuple[str, str] | None) -> float | None:
    """CPU seconds a server reports about itself (user and system, by the names its system
    declared), if it does."""
    if names is None or not all(n in figures for n in names):
        return None
    return float(figures[names[0]]) + float(figures[names[1]])


class ServerMonitor:
    """Latest server figures and CPU deltas, for the coordinator's merged intervals."""

    def __init__(self, managed: ManagedServer | None, poll_every: float) -> None:
        self.managed = managed
        self.poll_every = max(0.1, poll_every)
        self.latest: dict[str, Any] = {}
        self.task: asyncio.Task[None] | None = None
        self.conn: Connection | None = None  # the poller's own connection, while it is open
        self._host = host_times()
        self._cpu = process_cpu_seconds(managed.pid) if managed is not None else None
        self._cpu_cores = _affinity(managed.pid) if managed is not None else None
        # A managed cluster: each node's process (address, pid).
        self._nodes = [(n.address, n.pid) for n in getattr(managed, "nodes", ())]
        if self._nodes:
            self._cpu_cores = _affinity_of(pid for _, pid in self._nodes)
        self._node_cpu: dict[str, float] = {}
        self.cpus = os.cpu_count() or 1
        self.begun = False  # CPU deltas count only once the measured phase has begun
        self.cpu_names: tuple[str, str] | None = None  # the system's own CPU counters

    def watch(
        self,
        system: CacheSystem,
        strategy: Strategy,
        system_options: dict[str, Any],
        strategy_options: dict[str, Any],
    ) -> None:
        """Start polling the server's own statistics (only for a server shared by workers)."""
        self.cpu_names = system.figures.cpu
        if system.shared_state:
            connect = connect_for_stats(system, strategy, system_options, strategy_options)
            self.task = asyncio.create_task(self._poll(connect))

    async def _poll(self, connect: Awaitable[Connection]) -> None:
        conn: Connection | None = None
        try:
            conn = self.conn = await _bounded(connect)
            stats = conn.server_stats
            # Ends when cancelled, whatever a read made of its cancel: a read that turned
            # it into an error of its own (wait_for racing a reply, a client's own error)
            # was taken for "no figure", and the poll went on; asyncio.run then waited for
            # it for ever at the end (a test's teardown hung 294 s in CI).
            await poll(lambda: _bounded(stats()), self._took, self.poll_every)
        except Exception:
            return  # no statistics: the intervals go on without them
        finally:
            self.conn = None
            if conn is not None:
                with contextlib.suppress(Exception):
                    await _bounded(conn.close())

    def _took(self, figures: Mapping[str, Any]) -> None:
        self.latest = dict(figures)
        if self._cpu is None:  # the baseline of the first interval's CPU
            self._cpu = counted_cpu(self.latest, self.cpu_names)

    def begin(self) -> None:
        """The measured phase begins: CPU deltas count from now (not prefill, not warm-up)."""
        self.begun = True
        self._host = host_times()
        self._node_cpu = self._nodes_now()
        if self.managed is not None:
            self._cpu = process_cpu_seconds(self.managed.pid)
        elif self.latest:
            self._cpu = counted_cpu(self.latest, self.cpu_names)

    def sample(self) -> dict[str, Any]:
        """Figures for the interval ending now: never waits for the server.

        Before `begin` (an op-budget warm-up, whose end only the workers see) the CPU since
        the last mark mixes warm-up and measured work: this interval then carries no CPU
        or busy share, and the count begins here."""
        if not self.begun:
            out = dict(self.latest)
            if self.managed is not None:
                out.update(self.managed.memory())
            self.begin()
            return out
        out = dict(self.latest)
        if self.managed is not None:
            out.update(self.managed.memory())
            cpu = process_cpu_seconds(self.managed.pid)
        else:
            cpu = counted_cpu(self.latest, self.cpu_names)
        if cpu is not None:
            if self._cpu is not None:
                out["cpu_seconds"] = round(max(0.0, cpu - self._cpu), 4)
            self._cpu = cpu
        if self._cpu_cores is not None:
            out["cpu_cores"] = self._cpu_cores
        self._add_nodes(out)
        now = host_times()
        if now is not None and self._host is not None and now[1] > self._host[1]:
            out["host_busy"] = round((now[0] - self._host[0]) / (now[1] - self._host[1]), 4)
            out["host_cpus"] = self.cpus
        self._host = now
        return out

    def _nodes_now(self) -> dict[str, float]:
        """A cluster's CPU seconds by node, now (empty for one server)."""
        if self._nodes:
            return {
                address: cpu
                for address, pid in self._nodes
                if (cpu := process_cpu_seconds(pid)) is not None
            }
        return {
            key[len(NODE_CPU) :]: float(value)
            for key, value in self.latest.items()
            if key.startswith(NODE_CPU) and isinstance(value, int | float)
        }

    def _add_nodes(self, out: dict[str, Any]) -> None:
        """Each node's CPU since the last interval (a node gone is left out)."""
        now = self._nodes_now()
        before, self._node_cpu = self._node_cpu, now
        spent = {a: round(max(0.0, c - before[a]), 4) for a, c in now.items() if a in before}
        if not spent:
            return
        out["node_cpu"] = spent
        if self._nodes:  # the first node's process alone is not the cluster's CPU
            out["cpu_seconds"] = round(sum(spent.values()), 4)

    async def refresh(self) -> dict[str, Any]:
        """One last reading once the load is over (bounded), for the step's final figures."""
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.latest = dict(await _bounded(self.conn.server_stats(), FINAL_TIMEOUT))
        out = dict(self.latest)
        if self.managed is not None:
            out.update(self.managed.memory())
        return out

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None

    async def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
            await asyncio.wait({self.task}, timeout=STATS_TIMEOUT + 1)
            self.task = None


async def _bounded(call: Any, timeout: float = STATS_TIMEOUT) -> Any:
    """Await a plugin call for at most `timeout`; a late failure is not left unread."""
    task = asyncio.ensure_future(call)
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    return await asyncio.wait_for(task, timeout)


def _affinity_of(pids: Any) -> int | None:
    """The cores any of the processes may run on."""
    cores: set[int] = set()
    for pid in pids:
        with contextlib.suppress(OSError, AttributeError):
            cores |= os.sched_getaffinity(pid)
    return len(cores) or None


def _affinity(pid: int) -> int | None:
    try:
        return len(os.sched_getaffinity(pid))
    except (OSError, AttributeError):
        return None
