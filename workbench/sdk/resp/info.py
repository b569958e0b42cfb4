"""A RESP server's own figures, from INFO: memory, hits and misses as the server counts them."""

from __future__ import annotations

import contextlib
from typing import Any

from workbench.sdk.resp.target import RespTarget
from workbench.sdk.resp.wire import RespProtocol, check, open_resp, pack

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
    "io_threads_active",
)
CPU_FIELDS = ("used_cpu_user", "used_cpu_sys")  # seconds, as decimals


def parse_info(text: str, db: int = 0, version: str = "") -> dict[str, int | float | str]:
    """The integer fields we report, the CPU seconds, the key count of the database and,
    when named, the `version` field (``valkey_version``) as it is written."""
    raw: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep:
            raw[name.strip()] = value.strip()
    out: dict[str, int | float | str] = {
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
    if version in raw:
        out[version] = raw[version]
    return out


class InfoReader:
    """One side connection for INFO, opened on first use and reopened after a failure."""

    def __init__(self, target: RespTarget) -> None:
        self.target = target
        self.proto: RespProtocol | None = None

    async def read(self) -> dict[str, Any]:
        if self.proto is None or self.proto.lost is not None:
            self.proto = await open_resp(self.target)
        reply = check(await self.proto.command(pack("INFO")))
        return parse_info(
            reply.decode(errors="replace"), self.target.db, self.target.system.version
        )

    async def close(self) -> None:
        if self.proto is not None:
            with contextlib.suppress(Exception):
                self.proto.close()
