"""The limit a step's cache had, as libCacheSim counts it: bytes, or objects.

Read from the step's resolved options through what its system declared and the step
stored (`CacheSize`: the option that sizes the cache, its unit, an option capping the
objects too, whichever binds first for the step's mean value size), never from a
plugin; else the limit the server itself reported (its declared `limit_bytes` figure).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workbench.workload.forms import Dist, mean_value_size

MiB = 1024**2


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
    facts: Mapping[str, Any],
    options: Mapping[str, Any],
    server_options: Mapping[str, Any],
    server_figures: Mapping[str, Any],
    value_size: Dist,
) -> Limit | None:
    """The step's limit, or None when nothing says it (an unmanaged server with none).
    `facts` are the step's stored system facts (`CacheSystem.facts`)."""
    declared = facts.get("cache_size") or {}
    if option := declared.get("option"):
        source = server_options if declared.get("server", True) else options
        size = (_int(source.get(option)) or 0) * int(declared.get("unit") or 1)
        entries = _int(options.get(declared["entries"])) if declared.get("entries") else None
        if entries and (not size or entries * max(mean_value_size(value_size), 1) < size):
            return Limit(entries, "objects")
        if size:
            return Limit(size, "bytes")
    reported = (facts.get("figures") or {}).get("limit_bytes")
    if reported and (figure := _int(server_figures.get(reported))):
        return Limit(figure, "bytes")
    return None
