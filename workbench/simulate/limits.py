"""The limit a step's cache had, as libCacheSim counts it: bytes, or objects.

Read from the step's resolved options, never from a plugin: Redis's ``maxmemory``,
memcached's ``memory_mb``, umem-cache's ``memory`` (compiled in), the embedded cache's
``max_entries`` or ``max_bytes`` (whichever binds first for the step's mean value size);
else the limit the server itself reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.workload.generator import Dist, mean_value_size

MiB = 1024**2
REPORTED = ("maxmemory", "limit_maxbytes", "limit_bytes")


@dataclass(frozen=True)
class Limit:
    size: int
    unit: str  # "bytes" or "objects"

    def text(self) -> str:
        if self.unit == "objects":
            return f"{self.size:,} objects"
        return f"{self.size / MiB:,.0f} MiB" if self.size >= MiB else f"{self.size:,} bytes"


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if number > 0 else None


def cache_limit(
    system: str,
    options: Mapping[str, Any],
    server_options: Mapping[str, Any],
    server_figures: Mapping[str, Any],
    value_size: Dist,
) -> Limit | None:
    """The step's limit, or None when nothing says it (an unmanaged server with none)."""
    if system == "redis" and (size := _int(server_options.get("maxmemory"))):
        return Limit(size, "bytes")
    if system == "memcached" and (mb := _int(server_options.get("memory_mb"))):
        return Limit(mb * MiB, "bytes")
    if system == "umem" and (size := _int(server_options.get("memory"))):
        return Limit(size, "bytes")
    if system == "embedded":
        entries, size = _int(options.get("max_entries")), _int(options.get("max_bytes"))
        if entries and (not size or entries * max(mean_value_size(value_size), 1) < size):
            return Limit(entries, "objects")
        if size:
            return Limit(size, "bytes")
    for key in REPORTED:
        if size := _int(server_figures.get(key)):
            return Limit(size, "bytes")
    return None
