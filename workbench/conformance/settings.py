"""Settings: ``--set name=value`` routed to the system, the strategy or the managed server.

Values are read by the same parser as ``workbench run --set`` (`spec.load.parse_override`),
so ``size=5`` is the integer 5 in both places, and the options then check them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.sdk.adapter import CacheSystem, Strategy
from workbench.sdk.errors import SpecError
from workbench.spec.load import parse_override
from workbench.spec.resolve import ResolvedStep

OP_TIMEOUT = 10.0  # seconds any one adapter call may take before it counts as hung


@dataclass(frozen=True)
class Target(ResolvedStep):
    """One strategy to drive, resolved as a step is (`ResolvedStep`), and how long any one
    adapter call may take before the kit calls it hung."""

    op_timeout: float = OP_TIMEOUT


def split_settings(settings: Iterable[str]) -> dict[str, Any]:
    """``["url=redis://...", "strategy.pool=4"]`` as a dict, each value read as `run` reads it."""
    return dict(parse_override(item) for item in settings)


_PREFIXES = (
    ("target.options.", "system"),
    ("target.server.", "server"),
    ("server.", "server"),
    ("strategy.options.", "strategy"),
    ("strategy.", "strategy"),
)


def _prefixed(key: str) -> tuple[str, str]:
    for prefix, kind in _PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :], kind
    return key, "bare"


def route_settings(
    system: CacheSystem, strategies: Sequence[Strategy], raw: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Any]]:
    """Raw settings split into system, per-strategy and server options (still unparsed).

    ``target.options.X`` / ``strategy.options.X`` / ``target.server.X`` (or the short
    ``server.X`` and ``strategy.X``) say where a setting goes; a bare ``X`` goes to the
    system when it declares X, else to every checked strategy that declares X.
    """
    sys_raw: dict[str, Any] = {}
    strat_raw: dict[str, dict[str, Any]] = {s.name: {} for s in strategies}
    server_raw: dict[str, Any] = {}
    for key, value in raw.items():
        name, kind = _prefixed(key)
        if kind == "bare":
            if system.options.get(name) is not None:
                kind = "system"
            elif any(s.options.get(name) is not None for s in strategies):
                kind = "strategy"
            else:
                known = [*system.options.names()]
                known += sorted({n for s in strategies for n in s.options.names()})
                raise SpecError(
                    f"unknown option {name!r}; {system.name} options: {', '.join(known) or 'none'}",
                    f"--set {key}",
                )
        if kind == "system":
            sys_raw[name] = value
        elif kind == "server":
            if system.server is None:
                raise SpecError(f"{system.name} declares no server launcher", f"--set {key}")
            server_raw[name] = value
        else:
            takers = [s for s in strategies if s.options.get(name) is not None]
            if not takers:
                # Let OptionSet.resolve name the known options of the first strategy.
                takers = list(strategies[:1])
            for s in takers:
                strat_raw[s.name][name] = value
    return sys_raw, strat_raw, server_raw


def targets(
    system: CacheSystem,
    strategy: str | None = None,
    settings: Iterable[str] | Mapping[str, Any] = (),
    managed: bool = False,
    op_timeout: float = OP_TIMEOUT,
) -> list[Target]:
    """One target per strategy to check (all of them unless one is named)."""
    strategies = [system.strategy(strategy)] if strategy else list(system.strategies)
    raw = dict(settings) if isinstance(settings, Mapping) else split_settings(settings)
    sys_raw, strat_raw, server_raw = route_settings(system, strategies, raw)
    if managed and system.server is None:
        raise SpecError(
            f"{system.name} declares no server launcher; point it at a running server with "
            "--set instead of --managed",
            "--managed",
        )
    system_options = system.options.resolve(sys_raw, "target.options")
    server_options = (
        system.server.options.resolve(server_raw, "target.server") if system.server else {}
    )
    return [
        Target(
            system,
            s,
            system_options,
            s.options.resolve(strat_raw[s.name], "strategy.options"),
            server_options,
            managed=managed,
            op_timeout=op_timeout,
        )
        for s in strategies
    ]
