"""Varnish, the HTTP cache people tune, as a look-aside cache with a memory limit.

The workbench runs varnishd with ``-s malloc,SIZE`` (``target.server.memory``) in front
of its reference origin (`workbench.sdk.origin`), with a VCL that makes Varnish answer
the 003 experiment's questions one request each (`workbench_varnish.vcl`): a lookup is a
hit (200) or a miss (404, the origin not asked), a set goes to the origin and is loaded
into Varnish at once, a delete purges it. So the hit rate the clients see is Varnish's
own at its memory limit, and ``n_lru_nuked`` counts its evictions.

Strategies: ``keep-alive`` (aiohttp, one session per worker whose keep-alive pool is
shared by its clients) and ``native`` (the native engine's http1 codec, one keep-alive
connection per client). Server statistics come from ``varnishstat -j`` of the instance
named by ``instance`` (varnishd's ``-n``; a managed server sets its own): cache_hit,
cache_miss, n_lru_nuked, n_object and the bytes its storage holds. Against a Varnish the
workbench did not start, its VCL must answer the same requests.
"""

from __future__ import annotations

from typing import Any

from workbench.sdk import (
    HTTP1,
    CacheSystem,
    Option,
    OptionSet,
    ServerLauncher,
    Strategy,
    connect_on_demand,
    listen_address,
    per_client,
    pool_of,
    runs_in_native_engine,
)
from workbench_varnish import facts
from workbench_varnish.server import VarnishServer, start_varnish
from workbench_varnish.target import check_target, endpoints

KV = frozenset({"get", "set", "delete"})
MiB = 1 << 20


def _start(options: dict[str, Any]) -> VarnishServer:
    host, port = listen_address(options)
    return start_varnish(int(options["memory"]), port, host, str(options["binary"]))


# aiohttp is imported when the strategy connects, not with the plugin (`connect_on_demand`).
connect_keep_alive = connect_on_demand("workbench_varnish.client", "connect_keep_alive")


plugin = CacheSystem(
    name="varnish",
    description="Varnish (varnishd -s malloc) as a look-aside cache before the reference origin",
    options=OptionSet(
        (
            Option("base_url", "str", "http://127.0.0.1:6081", "Varnish's URL (loopback only)"),
            Option(
                "instance",
                "str",
                "",
                "varnishd's -n, for varnishstat (empty: the default instance)",
            ),
            Option("timeout", "duration", 10.0, "whole-request timeout (0: none)"),
            Option("connect_timeout", "duration", 5.0, "connection timeout (0: none)"),
        )
    ),
    strategies=(
        Strategy(
            "keep-alive",
            "one aiohttp session per worker; its keep-alive pool is shared by the clients",
            connect_keep_alive,
            operations=KV,
            options=OptionSet(
                (
                    Option(
                        "pool_size",
                        "int",
                        0,
                        "connections per worker (0: as many as clients are busy at once)",
                        minimum=0,
                    ),
                )
            ),
            connections=pool_of("pool_size"),
        ),
        Strategy(
            "native",
            "native engine (Rust): one keep-alive connection per client, as wrk",
            runs_in_native_engine,
            operations=KV,
            engine="native",
            connections=per_client,
            protocol=HTTP1,
        ),
    ),
    default_strategy="keep-alive",
    server=ServerLauncher(
        options=OptionSet(
            (
                Option(
                    "memory",
                    "size",
                    64 * MiB,
                    "malloc storage for objects (-s malloc,SIZE)",
                    minimum=MiB,
                ),
                Option("binary", "str", "", "varnishd program to run (empty: from PATH or sbin)"),
            )
        ),
        start=_start,
        programs=(("varnishd", ("varnishd", "-V")),),
    ),
    check=check_target,
    endpoints=endpoints,
    urls=facts.URLS,
    cache_size=facts.CACHE_SIZE,
    server_cores=facts.server_cores,
    figures=facts.FIGURES,
    libraries=facts.LIBRARIES,
)
