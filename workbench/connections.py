"""How a step's virtual clients map to connections, in numbers and in one sentence.

memtier opens a connection per client; the workbench's Python strategies share a few; the
step line and the report header say which, so nobody compares 103 connections with 5
without knowing. The figures come from the strategy's options as the fd-limit check reads
them (pool_size, connections, batch, pipeline); where a strategy declares nothing, one
connection per client is assumed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from workbench.plugins import load_plugin


def server_count(target_options: Mapping[str, Any]) -> int:
    """Servers a client talks to (memcached's list), else 1."""
    servers = target_options.get("servers")
    return len(servers) if isinstance(servers, list | tuple) and servers else 1


def per_worker(strategy: Any, options: Mapping[str, Any], clients: int, servers: int) -> int:
    """An upper estimate of the connections one worker opens for `clients` clients."""
    if "pool_size" in options:
        return min(clients, int(options["pool_size"])) * servers
    if "connections" in options:
        return int(options["connections"]) * servers
    if "batch" in options or strategy.name == "multiplexed":
        return servers
    return clients * servers  # one connection per client


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
    if not system.shared_state:
        return f"{_clients(clients)} in-process, {_workers(workers)}"
    servers = server_count(target_options or {})
    share = math.ceil(clients / workers)
    total = sum(
        per_worker(strategy, options, min(share, clients - i * share), servers)
        for i in range(workers)
        if clients - i * share > 0
    )
    depth = int(options.get("pipeline", 1) or 1)
    if total >= clients * servers:  # one (per server) each
        flight = f" x {depth} in flight" if depth > 1 else ""
        return f"{_clients(clients)} = {_conns(total)}{flight}, {_workers(workers)}"
    if "pool_size" in options:
        how = f"a pool of {_conns(total)}"
    elif "batch" in options:
        how = f"{_conns(total)}, pipelines of up to {options['batch']}"
    else:
        how = f"{total:,} auto-pipelined connection" + ("" if total == 1 else "s")
    return f"{_clients(clients)} sharing {how}, {_workers(workers)}"
