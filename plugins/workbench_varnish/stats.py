"""Varnish's own figures, from ``varnishstat -j``: hits and misses as Varnish counts them,
LRU evictions, objects and the bytes its storage holds.

``cache_miss`` counts the fills of sets too (each ``PUT`` is loaded by a lookup that
always misses), so Varnish's own hit ratio is ``cache_hit / (cache_hit + cache_miss -
fills)``; the workbench's measured hits and misses are those the clients saw.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from workbench.sdk import AdapterError
from workbench_varnish.server import find

COUNTERS = {
    "MAIN.cache_hit": "cache_hit",
    "MAIN.cache_miss": "cache_miss",
    "MAIN.n_lru_nuked": "n_lru_nuked",
    "MAIN.n_expired": "n_expired",
    "MAIN.n_object": "n_object",
    "MAIN.client_req": "client_req",
    "MAIN.backend_req": "backend_req",
}
TIMEOUT = 2.0  # the engine gives up on server_stats after 2 s


def parse_varnishstat(text: str) -> dict[str, int]:
    """The counters reported, with the malloc storages' bytes summed: ``bytes_stored``
    (g_bytes), and ``storage_limit``, what they may hold (g_bytes + g_space)."""
    data = json.loads(text)
    counters = data.get("counters", data)  # varnishstat 6.5+ nests them
    out = {name: int(counters[k]["value"]) for k, name in COUNTERS.items() if k in counters}
    stored = [
        int(v["value"])
        for k, v in counters.items()
        if k.startswith("SMA.") and k.endswith(".g_bytes")
    ]
    free = [
        int(v["value"])
        for k, v in counters.items()
        if k.startswith("SMA.") and k.endswith(".g_space")
    ]
    out["bytes_stored"] = sum(stored)
    out["storage_limit"] = sum(stored) + sum(free)
    return out


async def read_varnishstat(instance: str) -> dict[str, Any]:
    # -t: give up on an instance that is not there within a second, not varnishstat's 5.
    argv = [find("varnishstat"), "-j", "-t", "1", *(["-n", instance] if instance else [])]
    for name in (*COUNTERS, "SMA.*.g_bytes", "SMA.*.g_space"):
        argv += ["-f", name]
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        out, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    if process.returncode:
        said = err.decode(errors="replace").strip().splitlines()
        why = said[-1] if said else f"exited with status {process.returncode}"
        raise AdapterError("stats", f"varnishstat -n {instance or '(default)'}: {why}")
    return parse_varnishstat(out.decode())
