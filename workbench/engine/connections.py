"""How a step's virtual clients map to connections, in one sentence.

memtier opens a connection per client; the workbench's Python strategies share a few; the
step line and the report header say which, so nobody compares 103 connections with 5
without knowing. The counts are the strategies' own declarations (`Strategy.connections`,
as the fd-limit check reads them); the words for how they are shared come from the
options that make them so (a pool, pipelines, auto-pipelining).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from workbench.sdk.discovery import load_plugin


def _workers(n: int) -> str:
    return f"{n} worker" + ("" if n == 1 else "s")


def _clients(n: int) -> str:
    return f"{n:,} client" + ("" if n == 1 else "s")


def _conns(n: int) -> str:
    return f"{n:,} connection" + ("" if n == 1 else "s")


def describe(
    system_name: str,
    strategy_name: str,
    options: Mapping[str, Any],
    clients: int,
    workers: int,
    target_options: Mapping[str, Any] | None = None,
) -> str:
    """E.g. "16 clients = 16 connections x 16 in flight, 1 worker" or "100 clients sharing
    2 auto-pipelined connections, 2 workers"; "" for an unknown system or strategy."""
    try:
        system = load_plugin(system_name)
        strategy = system.strategy(strategy_name or system.default_strategy)
    except Exception:  # a run stored by another version: say nothing rather than guess
        return ""
    workers = max(1, workers)
    share = math.ceil(clients / workers)
    shares = [min(share, clients - i * share) for i in range(workers) if clients - i * share > 0]
    total = sum(strategy.connections(target_options or {}, options, n) for n in shares)
    if not system.shared_state or total == 0:
        return f"{_clients(clients)} in-process, {_workers(workers)}"
    each = max(1, strategy.connections(target_options or {}, options, 1))  # per server
    depth = int(options.get("pipeline", 1) or 1)
    if total >= clients * each:  # a connection (to each server) per client
        flight = f" x {depth} in flight" if depth > 1 else ""
        # A cluster's nodes are known only once its slot map is read: said per node.
        node = " per cluster node" if (target_options or {}).get("cluster") else ""
        return f"{_clients(clients)} = {_conns(total)}{node}{flight}, {_workers(workers)}"
    if "pool_size" in options:
        how = f"a pool of {_conns(total)}"
    elif "batch" in options:
        how = f"{_conns(total)}, pipelines of up to {options['batch']}"
    else:
        how = f"{total:,} auto-pipelined connection" + ("" if total == 1 else "s")
    return f"{_clients(clients)} sharing {how}, {_workers(workers)}"
