"""What a RESP server declares about itself for the core (`workbench.sdk.facts`), the same
for Redis and the forks that keep its INFO and its flags: URLs with a plain and a TLS
scheme, ``maxmemory`` as the cache's size, one core unless a managed server was given
I/O threads, INFO's figures, and the refusals at maxmemory and maxclients."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import hiredis
import redis

from workbench.sdk.facts import CacheSize, CoresRule, Refusal, ServerCores, ServerFigures, Urls
from workbench.sdk.resp.target import RespSystem

# The client libraries the kit is built on (redis-py, hiredis), recorded with each run.
LIBRARIES = (redis.__name__, hiredis.__name__)
CACHE_SIZE = CacheSize("maxmemory")


def server_cores(server: Mapping[str, Any], managed: bool) -> ServerCores:
    """Commands run on one thread; with ``io_threads`` = N (the main thread counted), N - 1
    more threads read, parse and write for it, so a managed server may use N cores."""
    threads = server.get("io_threads") if managed else None
    cores = float(threads) if isinstance(threads, int) and threads > 0 else 1.0
    return ServerCores(cores, single_threaded=cores == 1.0)


class Declared(TypedDict):
    """The `CacheSystem` fields a RESP system's facts fill (checked by the type checker)."""

    urls: Urls
    cache_size: CacheSize
    server_cores: CoresRule
    figures: ServerFigures
    refusals: tuple[Refusal, ...]
    libraries: tuple[str, ...]


def _url_options(url: str) -> dict[str, Any]:
    return {"url": url}


@dataclass(frozen=True)
class RespFacts:
    """The facts of one RESP system; `title` is its name in advice ("Valkey refused ...")."""

    system: RespSystem
    title: str
    default_url: str
    # memtier's -P names that mean this system (`Urls.tool_protocols`): one RESP system
    # claims them, the one memtier users mean by "redis".
    tool_protocols: tuple[str, ...] = ()

    def with_tls(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The given target over TLS: its URL with the TLS scheme (rediss://)."""
        url = str(options.get("url", self.default_url))
        plain, tls = self.system.plain, self.system.tls
        return {"url": re.sub(rf"^{re.escape(plain)}://", f"{tls}://", url)}

    @property
    def urls(self) -> Urls:
        plain, tls = self.system.plain, self.system.tls
        return Urls(
            schemes=(plain, tls),
            options=_url_options,
            forms=(f"{plain}://HOST:PORT[/DB]",),
            tls_schemes={plain: tls},
            with_tls=self.with_tls,
            tool_protocols=self.tool_protocols,
        )

    @property
    def figures(self) -> ServerFigures:
        return ServerFigures(
            cpu=("used_cpu_user", "used_cpu_sys"),
            used_bytes="used_memory",
            limit_bytes="maxmemory",
            items="keys",
            version=self.system.version,
        )

    @property
    def refusals(self) -> tuple[Refusal, ...]:
        return (
            Refusal(
                "oom command not allowed",
                f"{self.title} refused writes at maxmemory (OOM): raise "
                "target.server.maxmemory (managed) or maxmemory, or let it evict with "
                "maxmemory_policy = allkeys-lru",
            ),
            Refusal(
                "max number of clients",
                f"{self.title} refused connections over its client limit: raise maxclients, "
                "or lower load.concurrency",
            ),
        )

    def declared(self) -> Declared:
        """The `CacheSystem` fields they fill: ``CacheSystem(..., **facts.declared())``."""
        return {
            "urls": self.urls,
            "cache_size": CACHE_SIZE,
            "server_cores": server_cores,
            "figures": self.figures,
            "refusals": self.refusals,
            "libraries": LIBRARIES,
        }
