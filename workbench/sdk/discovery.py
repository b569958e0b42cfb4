"""Plugin discovery: names from entry points without importing; load one; report the broken."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points

from workbench.sdk.adapter import CacheSystem, check_declaration
from workbench.sdk.errors import PluginError

GROUP = "workbench.plugins"


@dataclass(frozen=True)
class PluginStatus:
    """One row of `workbench plugins`: loaded, or broken with its error."""

    name: str
    value: str
    system: CacheSystem | None
    error: str | None


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=GROUP)}


def plugin_names() -> list[str]:
    """Every registered plugin name, without importing any of them."""
    return sorted(_entry_points())


@cache
def load_plugin(name: str) -> CacheSystem:
    """Import one plugin and check its declaration."""
    eps = _entry_points()
    if name not in eps:
        known = ", ".join(sorted(eps)) or "none"
        raise PluginError(f"unknown cache system {name!r}; installed: {known}", "target.system")
    try:
        obj = eps[name].load()
    except Exception as exc:  # a broken plugin must never take the others down
        raise PluginError(
            f"plugin {name!r} failed to import: {type(exc).__name__}: {exc}", "target.system"
        ) from exc
    return check_declaration(obj, name)


def plugin_statuses() -> list[PluginStatus]:
    """Every plugin, each loaded or with the error that stopped it."""
    rows = []
    for name, ep in sorted(_entry_points().items()):
        try:
            rows.append(PluginStatus(name, ep.value, load_plugin(name), None))
        except PluginError as exc:
            rows.append(PluginStatus(name, ep.value, None, exc.message))
    return rows
