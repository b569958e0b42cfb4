"""The server's own figures, from INFO: memory, hits and misses as Redis counts them."""

from __future__ import annotations

import contextlib
from typing import Any

from workbench_redis.resp import RespProtocol, check, open_resp, pack
from workbench_redis.target import RedisTarget

FIELDS = (
    "used_memory",
    "used_memory_rss",
    "used_memory_peak",
    "maxmemory",
    "evicted_keys",
    "expired_keys",
    "keyspace_hits",
    "keyspace_misses",
    "connected_clients",
    "total_commands_processed",
    "instantaneous_ops_per_sec",
)
CPU_FIELDS = ("used_cpu_user", "used_cpu_sys")  # seconds, as decimals


def parse_info(text: str, db: int = 0) -> dict[str, int | float]:
    """The integer fields we report, the CPU seconds, and the key count of the database."""
    raw: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep:
            raw[name.strip()] = value.strip()
    out: dict[str, int | float] = {
        name: int(raw[name]) for name in FIELDS if raw.get(name, "").isdigit()
    }
    for name in CPU_FIELDS:
        with contextlib.suppress(ValueError, KeyError):
            out[name] = float(raw[name])
    keyspace = raw.get(f"db{db}", "")
    for item in keyspace.split(","):
        k, _, v = item.partition("=")
        if k == "keys" and v.isdigit():
            out["keys"] = int(v)
    out.setdefault("keys", 0)
    return out


class InfoReader:
    """One side connection for INFO, opened on first use and reopened after a failure."""

    def __init__(self, target: RedisTarget) -> None:
        self.target = target
        self.proto: RespProtocol | None = None

    async def read(self) -> dict[str, Any]:
        if self.proto is None or self.proto.lost is not None:
            self.proto = await open_resp(self.target)
        reply = check(await self.proto.command(pack("INFO")))
        return parse_info(reply.decode(errors="replace"), self.target.db)

    async def close(self) -> None:
        if self.proto is not None:
            with contextlib.suppress(Exception):
                self.proto.close()
