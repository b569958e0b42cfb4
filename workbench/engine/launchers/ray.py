"""Workers as actors on a Ray cluster. The only module of the workbench that imports `ray`.

One async actor per worker, each holding one CPU of a placement group (SPREAD across
nodes by default, or PACK). An actor runs the worker's own serve loop, exactly as a
local worker process does; a worker that is a separate program (a native engine binary)
runs as a child process of its actor, on the actor's node, and the actor relays its
bytes. Either way orders go in and frames come back as the wire's bytes (4-byte length +
JSON), so the coordinator reads them with the same `read_frame` as a local pipe.

Ray must run the same workbench version on every node (`pip install
'cache-workbench[ray]'` on each load machine); actors import it there.

Ray's own log lines (its Python loggers, and the raylets' messages it pushes to the
driver, such as a lost node's last log lines) go to a log file the run names, never to
the terminal the CLI or the TUI draws on.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import faulthandler
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any

import ray
from ray._private import worker as ray_worker
from ray.exceptions import ActorUnavailableError, RayError
from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from workbench.engine.launchers.background import bounded, in_background
from workbench.engine.launchers.ray_log import RAY_LOGGER, RayLog
from workbench.engine.serverstats import host_times as machine_times
from workbench.engine.wire import pack, read_frame
from workbench.sdk.errors import TargetError

PLACE_TIMEOUT = 60.0  # seconds to wait for the cluster to find a CPU for every worker
START_TIMEOUT = 60.0
LOCAL_OBJECT_STORE = 100 * 1024 * 1024  # bytes, for a private local Ray ("local")
UNAVAILABLE_RETRIES = 20  # an actor unreachable this many times in a row (0.5 s apart) is lost
HOST_TIMES_TIMEOUT = 1.0  # seconds a node may take to say how busy its machine is
# Seconds an actor may take to accept an order; longer, and it counts as lost. A live one
# on a busy machine takes milliseconds; one on a machine that just died takes until Ray's
# failure detection says so, which must not hold the run.
POST_TIMEOUT = 20.0
CLOSE_TIMEOUT = 20.0  # seconds `ray.shutdown` and placement group removal may take


@ray.remote(max_restarts=0, max_task_retries=0)
class WorkerActor:
    """A worker inside an actor: orders in through `post`, frames out through `frames`."""

    def __init__(self) -> None:
        self.orders: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.out = bytearray()
        self.more = asyncio.Event()
        self.ended = False
        self.task: asyncio.Task[None] | None = None
        self.child: asyncio.subprocess.Process | None = None
        self.meter: Any = None  # this node's hiccup meter, once asked for it

    async def start(self, command: list[str] | None) -> dict[str, Any]:
        """Begin serving; `command` runs a separate worker program instead of the loop here.

        The separate program is the hook for the native engine: its binary, started on
        the actor's node, speaks the same frames on its stdin and stdout.
        """
        if command is None:
            self.task = asyncio.create_task(self._serve())
        else:
            self.task = asyncio.create_task(self._relay(command))
        context = ray.get_runtime_context()
        return {
            "host": socket.gethostname(),
            "address": ray.util.get_node_ip_address(),  # the node's address in the cluster
            "node_id": context.get_node_id(),
            "pid": os.getpid(),
        }

    async def host_times(self) -> tuple[int, int, int] | None:
        """(busy, total) jiffies of this node's machine and its CPU count, from /proc/stat
        as the coordinator reads its own (`serverstats.host_times`)."""
        times = machine_times()
        return None if times is None else (*times, os.cpu_count() or 1)

    async def hiccups(
        self, pids: dict[str, int]
    ) -> tuple[dict[str, Any], list[Any]] | None:
        """This node's hiccup meter (started at the first call, on the node: one per node,
        in the actor the launcher asks), watching `pids`: its ready frame and the slices
        it wrote since the last call; None when no meter would start."""
        from workbench.engine.hiccup_meter import MeterProcess

        if self.meter is None:
            self.meter = await MeterProcess.start()
            if self.meter is None:
                return None
        await self.meter.watch(pids)
        book = self.meter.book
        slices = list(book.slices)
        book.slices.clear()
        return book.ready, slices

    def _emit(self, data: bytes) -> None:
        self.out += data
        self.more.set()

    async def _serve(self) -> None:
        from workbench.engine.worker import serve

        try:
            await serve(lambda message: self._emit(pack(message)), self.orders.get)
        finally:
            self.ended = True
            self.more.set()

    async def _relay(self, command: list[str]) -> None:
        self.child = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=2**26,
        )
        assert self.child.stdout is not None
        try:
            while chunk := await self.child.stdout.read(1 << 16):
                self._emit(chunk)
            await self.child.wait()
        finally:
            self.ended = True
            self.more.set()

    async def post(self, data: bytes) -> None:
        """One framed order, or b"" for the end of orders."""
        if self.child is not None:
            assert self.child.stdin is not None
            if data:
                self.child.stdin.write(data)
                await self.child.stdin.drain()
            else:
                self.child.stdin.close()
            return
        if not data:
            await self.orders.put(None)
            return
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        await self.orders.put(await read_frame(reader))

    async def frames(self) -> bytes:
        """The frames written since the last call (waits for one); b"" once the worker ended."""
        while not self.out and not self.ended:
            self.more.clear()
            await self.more.wait()
        data = bytes(self.out)
        self.out.clear()
        return data


class RayWorkerHandle:
    """The coordinator's side of one worker actor: the same interface as a local process."""

    remote = True  # on another machine, maybe: silence may mean it is gone (`abandon`)

    def __init__(self, index: int, actor: Any, where: dict[str, Any]) -> None:
        self.index = index
        self.actor = actor
        self.where = where
        self.node_id: str = where["node_id"]
        self.host: str = where["host"]
        self.address: str = where.get("address", "")
        self._pid: int = where["pid"]
        self.worker_pid: int = self._pid
        self.lost: str = ""  # why the actor can no longer be reached, once it cannot
        self.broken: str = ""
        self.ended = False
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=30)
        self._reader = asyncio.StreamReader(limit=2**26)
        self._fetch = asyncio.create_task(self._fetch_frames())

    @property
    def pid(self) -> int:
        return self._pid

    async def _fetch_frames(self) -> None:
        unavailable = 0
        try:
            while True:
                try:
                    data = await self.actor.frames.remote()
                except ActorUnavailableError as exc:
                    unavailable += 1
                    if unavailable >= UNAVAILABLE_RETRIES:
                        self.lost = _one_line(exc)
                        return
                    await asyncio.sleep(0.5)
                    continue
                except RayError as exc:
                    self.lost = _one_line(exc)
                    return
                unavailable = 0
                if not data:
                    self.ended = True
                    return
                self._reader.feed_data(data)
        finally:
            self._reader.feed_eof()

    async def send(self, message: dict[str, Any]) -> bool:
        """False when the actor is gone (or took `POST_TIMEOUT` s to take the order)."""
        if self.lost or self.ended:
            return False
        try:
            await asyncio.wait_for(self.actor.post.remote(pack(message)), POST_TIMEOUT)
            return True
        except RayError:
            return False
        except TimeoutError:
            self.abandon(f"an order was not taken in {POST_TIMEOUT:.0f} s")
            return False

    async def receive(self) -> dict[str, Any] | None:
        try:
            return await read_frame(self._reader)
        except (ValueError, ConnectionError) as exc:
            self.broken = f"{type(exc).__name__}: {exc}"
            ray.kill(self.actor, no_restart=True)
            return None

    async def wait(self) -> None:
        """Until the actor has stopped sending (ended, or lost)."""
        if not self._fetch.done():
            await asyncio.shield(self._fetch)

    def abandon(self, why: str) -> None:
        """Count the actor as lost now (it fell silent): its frames end here at once.

        Not killed yet: its machine may be unreachable (the kill would wait on it); `close`
        kills it at the end of the run."""
        self.lost = why
        self._fetch.cancel()  # its reader ends at once: the coordinator is not kept waiting

    def describe_exit(self) -> str:
        where = f"{self.address} ({self.host})" if self.address else self.host
        if self.broken:
            what = f"sent an unreadable frame ({self.broken})"
        elif self.lost:
            what = f"was lost ({self.lost})"
        else:
            what = "ended"
        return f"worker {self.index} (Ray actor, pid {self.pid} on {where}) {what}"

    def kill(self) -> None:
        """Abandon the actor at once; its end of frames follows as a death.

        `ray.kill` waits for the cluster's answer: in a thread of its own, so a cluster
        slow to answer never holds the run."""
        in_background(lambda: ray.kill(self.actor, no_restart=True), f"kill {self.index}")

    async def close(self) -> None:
        if not (self.lost or self.ended):
            with contextlib.suppress(RayError, TimeoutError):
                # The worker ends at the end of its orders.
                await asyncio.wait_for(self.actor.post.remote(b""), POST_TIMEOUT)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._fetch), timeout=10)
        self._fetch.cancel()
        self.kill()


def _per_node(handles: list[RayWorkerHandle]) -> dict[str, list[RayWorkerHandle]]:
    per_node: dict[str, list[RayWorkerHandle]] = {}
    for h in handles:
        per_node.setdefault(h.node_id, []).append(h)
    return per_node


def _node_names(per_node: dict[str, list[RayWorkerHandle]]) -> dict[str, str]:
    """Node id -> its address (its host name if it gave none); several on one address
    (a test cluster on loopback) are told apart by their node ids."""
    plain = {n: hs[0].address or hs[0].host for n, hs in per_node.items()}
    count = collections.Counter(plain.values())
    return {n: name if count[name] == 1 else f"{name} (node {n[:8]})" for n, name in plain.items()}


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _init(address: str, logged: bool) -> None:
    """Connect (in a thread: Ray then leaves the caller's SIGTERM handling alone).

    `logged`: a RayLog takes Ray's log lines; without one, Ray's notes ("not the main
    thread", token advice) are silenced, since they would land on the TUI's screen."""
    if not logged:
        logging.getLogger(RAY_LOGGER).setLevel(logging.ERROR)
    if not faulthandler.is_enabled():
        # ray.init enables it on sys.stderr, which the TUI replaces by an object whose
        # fileno() is -1: faulthandler then raises and ray.init fails. The real one works.
        with contextlib.suppress(Exception):
            faulthandler.enable(file=sys.__stderr__, all_threads=False)
    options: dict[str, Any] = {
        "log_to_driver": False,  # actors' stray prints stay in Ray's logs, not in the TUI
        "logging_level": logging.INFO if logged else logging.ERROR,
        "configure_logging": False,
    }
    if address == "local":
        # Frames are small and travel inline: the object store needs little memory.
        ray.init(
            address="local",
            include_dashboard=False,
            object_store_memory=LOCAL_OBJECT_STORE,
            **options,
        )
    else:
        ray.init(address=address, **options)


class RayLauncher:
    """Worker actors on a Ray cluster; `close` gives back their CPUs and the connection."""

    def __init__(self, placement: str, owns_connection: bool, log: RayLog | None = None) -> None:
        self.placement = placement
        self.owns_connection = owns_connection
        self.log = log
        self.groups: list[PlacementGroup] = []
        self._cpus = int(ray.cluster_resources().get("CPU", 0))

    @property
    def log_path(self) -> Path | None:
        """The file Ray's own log lines go to while this launcher runs (None: not ours)."""
        return self.log.path if self.log is not None else None

    @classmethod
    async def connect(
        cls, address: str, placement: str, log_path: Path | None = None
    ) -> RayLauncher:
        if ray.is_initialized():
            return cls(placement, owns_connection=False)
        log = RayLog(log_path, ray_worker) if log_path is not None else None
        try:
            await asyncio.to_thread(_init, address, log is not None)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            if log is not None:
                log.close()
            raise TargetError(
                f"cannot reach a Ray cluster at {address!r} ({_one_line(exc)}); start one "
                "with `ray start --head`, or set load.ray_address ('local' starts a private one)",
                "load.ray_address",
            ) from None
        return cls(placement, owns_connection=True, log=log)

    @property
    def cpus(self) -> int:
        return max(1, self._cpus)

    async def launch(
        self, count: int, first_index: int = 0, command: list[str] | None = None
    ) -> list[RayWorkerHandle]:
        """`count` worker actors, one CPU each, placed as asked; each has said it is ready.

        `command`: a worker program each actor runs as its child and relays (a native
        engine binary, given as it is found on the load machines), instead of running
        the Python worker's serve loop in the actor itself.
        """
        free = int(ray.available_resources().get("CPU", 0))
        if count > self._cpus:
            raise TargetError(
                f"{count} workers need {count} CPUs; the Ray cluster has {self._cpus} "
                f"({free} free). Lower load.workers or add nodes (ray start --address=...)",
                "load.workers",
            )
        group = placement_group([{"CPU": 1}] * count, strategy=self.placement.upper())
        self.groups.append(group)
        try:
            await asyncio.wait_for(group.ready(), timeout=PLACE_TIMEOUT)
        except TimeoutError:
            raise TargetError(
                f"the Ray cluster found no room for {count} workers of 1 CPU in "
                f"{PLACE_TIMEOUT:.0f} s ({free} of {self._cpus} CPUs free)",
                "load.workers",
            ) from None
        actors = [
            WorkerActor.options(
                num_cpus=1,
                scheduling_strategy=PlacementGroupSchedulingStrategy(
                    placement_group=group, placement_group_bundle_index=i
                ),
            ).remote()
            for i in range(count)
        ]
        wheres = await asyncio.wait_for(
            asyncio.gather(*(a.start.remote(command) for a in actors)), timeout=START_TIMEOUT
        )
        handles = [
            RayWorkerHandle(first_index + i, a, w)
            for i, (a, w) in enumerate(zip(actors, wheres, strict=True))
        ]
        for h in handles:
            first = await asyncio.wait_for(h.receive(), timeout=START_TIMEOUT)
            if not first or first.get("type") != "ready":
                raise TargetError(f"worker did not start: {h.describe_exit()}", "load.launcher")
            h.worker_pid = first.get("pid", h.pid)  # the actor's own, or its child program's
        return handles

    def nodes(self, handles: list[Any]) -> list[dict[str, Any]]:
        """Address, host name, CPUs and workers of every node the handles run on, in order
        of first use. A node is named by its address in the cluster (`host`)."""
        cpus = {n["NodeID"]: int(n["Resources"].get("CPU", 0)) for n in ray.nodes()}
        per_node = _per_node(handles)
        names = _node_names(per_node)
        return [
            {
                "host": names[node_id],
                "hostname": hs[0].host,
                "cpus": cpus.get(node_id, 0),
                "workers": len(hs),
                "worker_indices": [h.index for h in hs],
            }
            for node_id, hs in per_node.items()
        ]

    async def host_times(self, handles: list[Any]) -> dict[str, tuple[int, int, int]]:
        """Each node's machine CPU jiffies, asked of one live worker actor on it (bounded)."""
        per_node = _per_node([h for h in handles if not (h.lost or h.ended)])
        names = _node_names(per_node)
        asks = {names[n]: hs[0].actor.host_times.remote() for n, hs in per_node.items()}
        out: dict[str, tuple[int, int, int]] = {}
        for name, ask in asks.items():
            with contextlib.suppress(RayError, TimeoutError):
                times = await asyncio.wait_for(ask, timeout=HOST_TIMES_TIMEOUT)
                if times:
                    out[name] = tuple(times)  # type: ignore[assignment]
        return out

    async def hiccups(
        self, handles: list[Any]
    ) -> dict[str, tuple[dict[str, Any], list[Any]]]:
        """Each node's hiccup meter's new slices, asked of one live worker actor on it (which
        starts the node's meter at the first ask), by the name `nodes` gives the node."""
        per_node = _per_node([h for h in handles if not (h.lost or h.ended)])
        names = _node_names(per_node)
        asks = {
            names[n]: hs[0].actor.hiccups.remote({f"worker {h.index}": h.worker_pid for h in hs})
            for n, hs in per_node.items()
        }
        out: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        for name, ask in asks.items():
            with contextlib.suppress(RayError, TimeoutError):
                found = await asyncio.wait_for(ask, timeout=HOST_TIMES_TIMEOUT)
                if found:
                    out[name] = found
        return out

    async def close(self) -> None:
        """CPUs given back and the connection closed, within `CLOSE_TIMEOUT` s each: a
        cluster that does not answer is left to notice the driver's exit by itself."""
        groups, self.groups = self.groups, []

        def unplace() -> None:
            for group in groups:  # each on its own: one that fails leaves the others to go
                with contextlib.suppress(Exception):
                    remove_placement_group(group)

        done = await bounded(unplace, "unplace", CLOSE_TIMEOUT)
        if self.owns_connection:
            done = await bounded(ray.shutdown, "shutdown", CLOSE_TIMEOUT) and done
        if not done:
            logging.getLogger(RAY_LOGGER).warning(
                "the Ray cluster did not answer in %.0f s while the run closed", CLOSE_TIMEOUT
            )
        if self.log is not None:
            self.log.close()
            self.log = None
