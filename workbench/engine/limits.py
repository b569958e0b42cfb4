"""Before a step runs: does this machine let a worker open what the step needs?

A step of 1,000 blocking clients needs about 1,000 sockets and 1,000 threads per worker.
Past the open-file or thread limit it would not fail cleanly: it would measure "too
many open files" errors. So the limits are checked first, and a step that cannot fit
is refused in one line that says what to raise (exit 2).
"""

from __future__ import annotations

import contextlib
import math
import resource
from collections.abc import Iterable
from pathlib import Path

from workbench.sdk.errors import SpecError
from workbench.spec.resolve import ResolvedStep, resolve_step, total_clients, workers_for
from workbench.spec.steps import Step

FILES_MARGIN = 64  # a worker's own pipes, event loop, libraries, a stats connection...
THREADS_MARGIN = 16  # a worker's own threads besides one per blocking client
SMALLEST_CLUSTER = 3  # primaries: fewer is no Redis Cluster (redis-cli --cluster create)


def _raise_soft_file_limit() -> int:
    """Lift the soft open-file limit to the hard one (workers inherit it); the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return target
        except (ValueError, OSError):
            return soft
    return soft


def thread_limit() -> int | None:
    """Threads this user may have (RLIMIT_NPROC), or the kernel's total, if lower."""
    limits = []
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY:
        limits.append(soft)
    with contextlib.suppress(OSError, ValueError):
        limits.append(int(Path("/proc/sys/kernel/threads-max").read_text()))
    return min(limits) if limits else None


def cluster_nodes(resolved: ResolvedStep) -> tuple[int, str]:
    """The nodes a client holds a connection to, and how that was counted: 1 for one server;
    for a Redis Cluster its primaries, a managed cluster's `cluster_nodes`; an external
    cluster's are known only once its slot map is read (CLUSTER SLOTS, at the step's
    start), so the fewest a cluster has is counted, said in the refusal."""
    if resolved.managed and resolved.server_options.get("cluster"):
        n = int(resolved.server_options.get("cluster_nodes", SMALLEST_CLUSTER))
        return n, f"a connection per client to each of the managed cluster's {n} primaries"
    if resolved.system_options.get("cluster"):
        return SMALLEST_CLUSTER, (
            f"a connection per client to each cluster node, counting {SMALLEST_CLUSTER}: the "
            "fewest primaries a Redis Cluster has, as its nodes are known only once its slot "
            "map is read"
        )
    return 1, ""


def check_limits(steps: Iterable[Step]) -> None:
    """Raise SpecError naming the step, what it needs and what to raise, if it cannot fit."""
    files = _raise_soft_file_limit()
    threads = thread_limit()
    for step in steps:
        resolved = step.resolved or resolve_step(step.spec)
        workers = workers_for(step.spec)
        clients = math.ceil(total_clients(step.spec) / workers)
        # The strategy declares its connections (Strategy.connections), counted for the
        # step's planned workers when it was resolved; against a cluster, to each node.
        nodes, counted = cluster_nodes(resolved)
        need_files = resolved.connections * nodes + FILES_MARGIN
        where = f"step {step.index + 1} ({step.title})"
        if need_files > files:
            raise SpecError(
                f"{clients} clients per worker need about {need_files} open files"
                + (f" ({counted})" if counted else "")
                + f"; the limit is {files}: raise it (ulimit -n "
                f"{2 ** math.ceil(math.log2(need_files))}) or lower load.concurrency",
                where,
            )
        if resolved.blocking and threads is not None:
            need_threads = workers * (clients + THREADS_MARGIN)
            if need_threads > threads:
                raise SpecError(
                    f"{clients} blocking clients in each of {workers} workers need about "
                    f"{need_threads} threads; the limit is {threads}: raise it (ulimit -u) "
                    "or use an asyncio strategy",
                    where,
                )
