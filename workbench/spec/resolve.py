"""One resolved step: the plugin, strategy and options a step really runs, decided once.

`resolve_step(spec)` loads the step's plugin, picks its strategy (the system's default when
the spec names none), fills in and checks every option, and says which engine runs it, how
many connections one worker opens and whether the target may be remote. The step check
(`spec.steps.check_spec`) computes it once per step and keeps it on the `Step`; the
coordinator carries it to the workers in the step order (`to_dict` / `from_dict`: plugins
travel by name), and the limits check, the worker and the conformance kit read it instead
of resolving the spec again.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from typing import Any, Self

from workbench.sdk.adapter import CacheSystem, Strategy, worker_options
from workbench.sdk.discovery import load_plugin
from workbench.sdk.errors import PluginError, SpecError, TargetError
from workbench.sdk.ops import NEEDS
from workbench.sdk.remote import ALLOW_REMOTE, check_remote, is_loopback
from workbench.spec.model import Spec
from workbench.workload.keys import format_key


@dataclass(frozen=True)
class ResolvedStep:
    """What a step runs: system, strategy, their resolved options, and what follows from them."""

    system: CacheSystem
    strategy: Strategy
    system_options: dict[str, Any]
    strategy_options: dict[str, Any]
    server_options: dict[str, Any] = field(default_factory=dict)  # resolved, when managed
    managed: bool = False
    # The remote decision: the spec allowed a target off this machine.
    allow_remote: bool = False
    connections: int = 0  # connections one worker opens (at the step's planned worker count)

    @property
    def engine(self) -> str:
        """The engine whose workers run the step: "python" or "native"."""
        return self.strategy.engine

    @property
    def protocol(self) -> str | None:
        """The wire protocol the strategy speaks with these options (`workbench.sdk.protocols`),
        or None for the plugin's own, spoken by its adapter in the Python engine."""
        return self.strategy.protocol_for(self.system_options, self.strategy_options)

    @property
    def facts(self) -> dict[str, Any]:
        """What readers of the stored step need of its system (`CacheSystem.facts`)."""
        return self.system.facts(self.server_options, self.managed)

    @property
    def blocking(self) -> bool:
        return self.strategy.blocking

    @property
    def shared(self) -> bool:
        """The system is shared by all workers (a server), not held inside each one."""
        return self.system.shared_state

    @property
    def connect_options(self) -> dict[str, Any]:
        """The system options clients connect with: the plugins' own loopback check
        honours the remote decision through `ALLOW_REMOTE`."""
        if not self.allow_remote:
            return self.system_options
        return {**self.system_options, ALLOW_REMOTE: True}

    def with_server(self, target_options: dict[str, Any]) -> Self:
        """Pointed at a managed server that was started: its address joins the options."""
        return replace(self, system_options={**self.system_options, **target_options})

    def for_worker(self, workers: int, worker: int) -> Self:
        """What worker `worker` of `workers` connects with (a per-worker capacity divided)."""
        own = worker_options(self.system, self.connect_options, workers, worker)
        return replace(self, system_options=own)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a step order; plugins by name."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["system"], out["strategy"] = self.system.name, self.strategy.name
        out["engine"], out["protocol"] = self.engine, self.protocol
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResolvedStep:
        """Read back from a step order (its other keys are ignored); loads the plugin."""
        system = load_plugin(data["system"])
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        values.update(system=system, strategy=system.strategy(data["strategy"]))
        return cls(**values)


def resolve_strategy(system: CacheSystem, spec: Spec) -> Strategy:
    """The strategy a spec names, or for none the default: see `default_strategy`."""
    if spec.strategy.name:
        return system.strategy(spec.strategy.name)
    return default_strategy(system, spec)[0]


# Said once when a spec that names no strategy runs a Python client instead of the engine.
CLIENT_MEASURED = "the client (Python) is part of the measurement"


def default_strategy(system: CacheSystem, spec: Spec) -> tuple[Strategy, str]:
    """The strategy a spec naming none runs, and why it is not the native engine.

    The native engine measures the server, not a Python client, so a system's native
    strategy is the default whenever its binary is there and it supports the workload;
    else the system's declared default runs, with the reason ("" when the system has no
    native strategy or it was chosen).
    """
    declared = system.strategy(system.default_strategy)
    clustered = spec.target.options.get("cluster") or spec.target.server.get("cluster")
    if clustered and any(s.name == "cluster" for s in system.strategies):
        # A cluster's Python client is the `cluster` strategy, not the declared default.
        declared = system.strategy("cluster")
    native = next((s for s in system.strategies if s.engine == "native"), None)
    if native is None:
        return declared, ""
    why = _native_unfit(native, spec)
    return (declared, why) if why else (native, "")


def used_operations(spec: Spec) -> set[str]:
    """The workload operations a step does (a trace's as the strategy will replay them)."""
    if spec.workload.trace is not None:  # as-recorded ops a strategy lacks are skipped
        return {"cache_aside"} if spec.workload.trace.ops == "get-set-on-miss" else {"get"}
    mixes = [g.mix for g in spec.workload.groups] or [spec.workload.mix]
    return {op for mix in mixes for op, w in mix.items() if w > 0}


def needs(op: str, strategy: Strategy) -> set[str]:
    """What the strategy lacks for a workload operation (cache_aside may be its own)."""
    if op == "cache_aside" and "cache_aside" in strategy.operations:
        return set()
    return set(NEEDS[op] - strategy.operations)


def _native_unfit(native: Strategy, spec: Spec) -> str:
    """Why the native strategy cannot run the spec ("" when it can)."""
    from workbench.spec.native_binary import binary_path, building_log, version_mismatch
    from workbench.workload.forms import parse_ttl

    path = binary_path()
    if path is None:
        if building_log():
            return f"the native engine is still being built (progress: {building_log()})"
        return "the native engine is not installed"
    if version_mismatch(path):
        return "the native engine installed is of another version (rebuild it)"
    missing = sorted({n for op in used_operations(spec) for n in needs(op, native)})
    if missing:
        return f"the native engine does not do {', '.join(missing)}"
    if parse_ttl(spec.workload.ttl).kind != "none" and not native.supports_ttl():
        return "the native engine sets no TTL"
    foreign = sorted(set(spec.strategy.options) - set(native.options.names()))
    if foreign:
        return f"strategy.options {', '.join(foreign)} are not the native engine's"
    return ""


def fallback_notice(system: CacheSystem, spec: Spec) -> str:
    """One line when a spec naming no strategy falls back to a Python client; else ""."""
    if spec.strategy.name:
        return ""
    strategy, why = default_strategy(system, spec)
    if not why:
        return ""
    return (
        f"{system.name}: strategy {strategy.name!r}, because {why}: {CLIENT_MEASURED} "
        '(strategy.name = "native" measures the server alone)'
    )


def total_clients(spec: Spec) -> int:
    if spec.workload.groups:
        return sum(g.concurrency for g in spec.workload.groups)
    return spec.load.concurrency


def workers_for(spec: Spec, cpus: int | None = None) -> int:
    """Workers for a step: as asked, or one per CPU (of this machine, or of a Ray cluster)."""
    wanted = spec.load.workers or cpus or os.cpu_count() or 1
    return max(1, min(wanted, total_clients(spec)))


def longest_key(spec: Spec) -> bytes:
    """The longest key the synthetic workload sends (the last index has the most digits)."""
    wl = spec.workload
    return format_key(wl.key_prefix, max(wl.keys - 1, 0), wl.key_length)


def check_wire(system: CacheSystem, options: dict[str, Any], spec: Spec) -> None:
    """The system's own check of what reaches its wire (`CacheSystem.check`), as one spec
    error. Whether an address is remote is `check_remote`'s to say, so the system judges
    only its form (and runs first: a malformed address is not called remote)."""
    if system.check is None:
        return
    try:
        system.check({**options, ALLOW_REMOTE: True}, longest_key(spec))
    except TargetError as exc:
        raise SpecError(exc.message, exc.where) from None


def check_servers(system: CacheSystem, options: dict[str, Any], allow_remote: bool) -> None:
    """Refuse, before any connection, a server off this machine the spec did not allow:
    its hosts as the system's plugin reads them (`CacheSystem.endpoints`, the reading both
    engines use), else as the generic check finds addresses among its options."""
    if system.endpoints is None:
        check_remote(options, allow_remote, "target.options")
        return
    if allow_remote:
        return
    try:
        found = system.endpoints({**options, ALLOW_REMOTE: True})
    except TargetError as exc:
        raise SpecError(exc.message, exc.where) from None
    for host, port in found.servers:
        if not is_loopback(host):
            raise SpecError(
                f"server {host}:{port} is on {host}, not a loopback address; to load a remote "
                "target, set target.allow_remote = true or pass --allow-remote",
                found.origin,
            )


def resolve_step(spec: Spec) -> ResolvedStep:
    """The step's plugin, strategy and options, checked; raises SpecError naming the field."""
    try:
        system = load_plugin(spec.target.system)
        strategy = resolve_strategy(system, spec)
    except PluginError as exc:
        raise SpecError(exc.message, exc.where) from None
    system_options = system.options.resolve(dict(spec.target.options), "target.options")
    check_wire(system, system_options, spec)
    if not spec.target.managed:  # a managed server is on loopback, wherever options point
        check_servers(system, system_options, spec.target.allow_remote)
    strategy_options = strategy.options.resolve(dict(spec.strategy.options), "strategy.options")
    server_options: dict[str, Any] = {}
    if spec.target.managed:
        if system.server is None:
            raise SpecError(f"{system.name} cannot start a server of its own", "target.managed")
        server_options = system.server.options.resolve(dict(spec.target.server), "target.server")
    clients = math.ceil(total_clients(spec) / workers_for(spec))
    return ResolvedStep(
        system,
        strategy,
        system_options,
        strategy_options,
        server_options,
        managed=spec.target.managed,
        allow_remote=spec.target.allow_remote,
        connections=strategy.connections(system_options, strategy_options, clients),
    )
