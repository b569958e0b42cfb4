"""Planning: a spec with sweep axes becomes steps, each a concrete spec, each checked."""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from workbench.files.output_files import check_output
from workbench.sdk.adapter import Strategy
from workbench.sdk.errors import SpecError
from workbench.simulate.policies import parse_policies
from workbench.spec.limits import check_ranges, check_step_count
from workbench.spec.load import located, read_profile, set_path, spec_from_data
from workbench.spec.model import (
    ARRIVALS,
    MIN_INTERVAL,
    TRACE_OPS,
    Load,
    MachineSpec,
    PubSub,
    Spec,
    Workload,
    check_name,
    spec_from_dict,
    spec_to_dict,
)
from workbench.spec.native_binary import require_binary
from workbench.spec.resolve import (
    ResolvedStep,
    needs,
    resolve_step,
    resolve_strategy,
    total_clients,
    used_operations,
    workers_for,
)
from workbench.spec.search_settings import check_settings
from workbench.workload.forms import (
    max_value_size,
    parse_key_distribution,
    parse_mix,
    parse_ttl,
    parse_value_size,
)
from workbench.workload.oracle_trace import step_path
from workbench.workload.traces.formats import format_of

# A value this large cannot be built or sent in one piece by every system (and overflows
# the engine's value buffer); the largest a cache server accepts is far below it.
MAX_VALUE_SIZE = 256 * 1024**2


@dataclass(frozen=True)
class Step:
    index: int
    label: dict[str, str]
    spec: Spec
    resolved: ResolvedStep | None = None  # set by check_spec: what the step really runs

    @property
    def title(self) -> str:
        return ", ".join(f"{k.split('.')[-1]}={v}" for k, v in self.label.items()) or "run"


def _label(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("name") or value.get("system") or value)
    return str(value)


REPEAT = "load.repeat"  # the label of a repeated step: which repeat it is, from 1


def plan(spec: Spec) -> list[Step]:
    """One step per combination of sweep values, first axis outermost; with load.repeat = N,
    the whole list N times over (A B A B), each step labelled with its repeat."""
    n = spec.load.repeat
    if n < 1:
        raise SpecError(f"expected 1 or more repeats; got {n}", REPEAT)
    check_step_count([len(axis.values) for axis in spec.sweep], n)
    steps = _combinations(spec)
    if n > 1:
        steps = [
            Step(r * len(steps) + s.index, {**s.label, REPEAT: str(r + 1)}, s.spec)
            for r in range(n)
            for s in steps
        ]
    return _own_traces(steps)


def _own_traces(steps: list[Step]) -> list[Step]:
    """With several steps, each captures its trace to its own file (`step_path`)."""
    if len(steps) < 2:
        return steps
    out = []
    for s in steps:
        wl = s.spec.workload
        if wl.trace_out:
            own = step_path(wl.trace_out, s.index, len(steps))
            s = replace(s, spec=replace(s.spec, workload=replace(wl, trace_out=own)))
        out.append(s)
    return out


def _combinations(spec: Spec) -> list[Step]:
    if not spec.sweep:
        return [Step(0, {}, spec)]
    for i, axis in enumerate(spec.sweep):
        if not axis.values:
            raise SpecError(
                f"expected at least one value to sweep {axis.path or 'over'}",
                f"sweep[{i}].values",
            )
        for path, along in axis.along.items():
            if len(along) != len(axis.values):
                raise SpecError(
                    f"expected {len(axis.values)} values, one per value of {axis.path}; "
                    f"got {len(along)}",
                    f"sweep[{i}].along.{path}",
                )
    base = spec_to_dict(replace(spec, sweep=()))
    steps = []
    axes = spec.sweep
    # By position, not by value: two equal values (one system with two strategies along)
    # are two steps, each with its own label and along values.
    for i, combo in enumerate(itertools.product(*(range(len(a.values)) for a in axes))):
        data = spec_to_dict(base)
        label = {}
        for axis, idx in zip(axes, combo, strict=True):
            value = axis.values[idx]
            set_path(data, axis.path, value)
            for path, along in axis.along.items():
                set_path(data, path, along[idx])
            label[axis.path] = axis.labels[idx] if idx < len(axis.labels) else _label(value)
        try:
            steps.append(Step(i, label, spec_from_dict(data)))
        except SpecError as exc:
            raise SpecError(exc.message, f"sweep {label}: {exc.where}") from None
    return steps


def check_step(spec: Spec) -> ResolvedStep:
    """Everything that can be known wrong before a run starts; raises SpecError. What the
    step resolves to, when nothing is."""
    check_name(spec.name)
    check_ranges(spec)
    _check_workload(spec.workload)
    _check_load(spec.load)
    _check_launcher(spec.load)
    _check_pubsub(spec.workload.pubsub)
    resolved = resolve_step(spec)
    _check_strategy(spec, resolved)
    if spec.simulate is not None:
        parse_policies(spec.simulate.policies)
    if spec.machine is not None:
        _check_machine(spec.machine)
    if spec.workload.trace_out:
        check_trace_out(spec)
    if spec.workload.trace is not None:
        check_trace(spec)
    _check_ttl(spec, resolved)
    return resolved


def _check_workload(wl: Workload) -> None:
    """Keys, values, TTL and the mix (or each client group's) read as their forms say."""
    parse_key_distribution(wl.key_distribution)
    largest = max_value_size(parse_value_size(wl.value_size))
    if largest >= MAX_VALUE_SIZE:
        raise SpecError(
            f"expected values below 256 MiB; got up to {largest:,} bytes", "workload.value_size"
        )
    parse_ttl(wl.ttl)
    if wl.groups:
        for i, g in enumerate(wl.groups):
            parse_mix(g.mix, f"workload.groups[{i}].mix")
            if g.concurrency < 1:
                raise SpecError(
                    f"expected at least 1; got {g.concurrency}", f"workload.groups[{i}].concurrency"
                )
    else:
        parse_mix(wl.mix)
    if wl.key_length < 1 or wl.key_length > 250:
        raise SpecError(f"expected 1 to 250 characters; got {wl.key_length}", "workload.key_length")


def _check_load(ld: Load) -> None:
    """Clients, how long, how often, how fast: each within what a run can do."""
    if ld.concurrency < 1:
        raise SpecError(
            f"expected at least 1 virtual client; got {ld.concurrency}", "load.concurrency"
        )
    if ld.duration is None and ld.ops is None:
        raise SpecError("expected a duration or an op count (load.duration or load.ops)", "load")
    if ld.duration is not None and ld.duration < MIN_INTERVAL:
        raise SpecError(
            f"expected a duration of at least {MIN_INTERVAL:g} s (the shortest interval); "
            f"got {ld.duration:g}",
            "load.duration",
        )
    if ld.ops is not None and ld.ops < 1:
        raise SpecError(f"expected at least 1 op; got {ld.ops}", "load.ops")
    if ld.interval < MIN_INTERVAL:
        raise SpecError(
            f"expected an interval of at least {MIN_INTERVAL:g} s; got {ld.interval:g}",
            "load.interval",
        )
    if ld.warmup < 0:
        raise SpecError(f"expected 0 or more seconds; got {ld.warmup:g}", "load.warmup")
    if ld.workers < 0:
        raise SpecError(f"expected 0 (one per core) or more; got {ld.workers}", "load.workers")
    if ld.rate is not None and ld.rate <= 0:
        raise SpecError(f"expected a rate above 0 ops/s; got {ld.rate:g}", "load.rate")
    if ld.arrivals not in ARRIVALS:
        raise SpecError(
            f"expected one of {', '.join(ARRIVALS)}; got {ld.arrivals!r}", "load.arrivals"
        )


def _check_strategy(spec: Spec, resolved: ResolvedStep) -> None:
    """The strategy can run here and does every op the workload asks."""
    system, strategy = resolved.system, resolved.strategy
    if strategy.engine == "native":
        require_binary()  # one clear line: how to build it
    missing = sorted({n for op in used_operations(spec) for n in needs(op, strategy)})
    if missing:
        raise SpecError(
            f"strategy {strategy.name!r} of {system.name} does not support "
            f"{', '.join(missing)}; it supports {', '.join(sorted(strategy.operations))}"
            + _why(strategy, missing),
            "workload.mix",
        )


def _check_ttl(spec: Spec, resolved: ResolvedStep) -> None:
    """A TTL asked of a strategy that sets none is refused, not ignored."""
    system, strategy = resolved.system, resolved.strategy
    if parse_ttl(spec.workload.ttl).kind != "none" and not strategy.supports_ttl():
        raise SpecError(
            f"strategy {strategy.name!r} of {system.name} sets no TTL" + _why(strategy, ["ttl"]),
            "workload.ttl",
        )


def check_trace_out(spec: Spec) -> None:
    """workload.trace_out can be written by this machine's workers without harm."""
    if spec.load.launcher != "local":
        raise SpecError(
            'traces are written by workers on this machine: use load.launcher = "local"',
            "workload.trace_out",
        )
    check_output(spec.workload.trace_out, "workload.trace_out")


def check_trace(spec: Spec) -> None:
    """workload.trace names a readable file in a known format, and what can replay it."""
    tr, where = spec.workload.trace, "workload.trace"
    assert tr is not None
    if not tr.path:
        raise SpecError("expected the path of a trace file", f"{where}.path")
    if not Path(tr.path).is_file():
        raise SpecError(f"expected a trace file; no file at {tr.path!r}", f"{where}.path")
    format_of(tr.path, tr.format or None, f"{where}.format")
    if tr.speed < 0:
        raise SpecError(
            f"expected 0 (closed loop) or a speed above 0; got {tr.speed:g}", f"{where}.speed"
        )
    if tr.ops not in TRACE_OPS:
        raise SpecError(f"expected one of {', '.join(TRACE_OPS)}; got {tr.ops!r}", f"{where}.ops")
    if tr.limit < 0:
        raise SpecError(f"expected 0 (all) or more requests; got {tr.limit}", f"{where}.limit")
    if spec.load.rate is not None:
        raise SpecError(
            "a trace is paced by workload.trace.speed, not load.rate: leave one out", "load.rate"
        )
    if tr.warmup < 0:
        raise SpecError(
            f"expected 0 (none) or seconds of trace time; got {tr.warmup:g}", f"{where}.warmup"
        )
    if tr.warmup > 0 and spec.load.warmup_ops:
        raise SpecError(
            "a warm-up is the first seconds of trace time or the first requests: leave one out",
            f"{where}.warmup",
        )
    if spec.load.launcher != "local":
        raise SpecError(
            'workers read the trace on this machine: use load.launcher = "local"', f"{where}.path"
        )
    if spec.workload.groups:
        raise SpecError("a trace has its own ops: leave workload.groups out", "workload.groups")


def _why(strategy: Strategy, missing: list[str]) -> str:
    reasons = [strategy.lacks[n] for n in missing if n in strategy.lacks]
    return ": " + "; ".join(reasons) if reasons else ""


LAUNCHERS = ("local", "ray")
PLACEMENTS = ("spread", "pack")
RAY_INSTALL = "pip install 'cache-workbench[ray]'"


def _check_launcher(ld: Load) -> None:
    if ld.launcher not in LAUNCHERS:
        raise SpecError(
            f"expected one of {', '.join(LAUNCHERS)}; got {ld.launcher!r}", "load.launcher"
        )
    if ld.ray_placement not in PLACEMENTS:
        raise SpecError(
            f"expected one of {', '.join(PLACEMENTS)}; got {ld.ray_placement!r}",
            "load.ray_placement",
        )
    if not ld.ray_address:
        raise SpecError(
            "expected 'auto', 'local' or a cluster address (host:port)", "load.ray_address"
        )
    # Looked up, not imported: only the Ray launcher module imports ray.
    if ld.launcher == "ray" and importlib.util.find_spec("ray") is None:
        raise SpecError(f"the Ray launcher needs Ray: {RAY_INSTALL}", "load.launcher")


def _check_same_launcher(steps: list[Step]) -> None:
    """Workers are started once per run, so every step must run them the same way."""
    first = steps[0].spec.load
    for step in steps[1:]:
        for name in ("launcher", "ray_address", "ray_placement"):
            if getattr(step.spec.load, name) != getattr(first, name):
                raise SpecError(
                    f"cannot change between steps (step {step.title} has "
                    f"{getattr(step.spec.load, name)!r}, the first {getattr(first, name)!r})",
                    f"load.{name}",
                )


# The last spec checked and its steps. A spec is checked when it is loaded and again when
# it runs (session.run takes any Spec); the same object is not planned and resolved twice.
_last_checked: tuple[Spec, list[Step]] | None = None


def check_spec(spec: Spec) -> list[Step]:
    """Plan the spec and check every step; the steps, or the first SpecError."""
    global _last_checked
    last = _last_checked
    if last is not None and last[0] is spec:
        return list(last[1])
    checked = _checked_steps(spec)
    _last_checked = (spec, checked)
    return list(checked)


def _checked_steps(spec: Spec) -> list[Step]:
    steps = plan(spec)
    _check_same_launcher(steps)
    checked = []
    for step in steps:
        try:
            resolved = check_step(step.spec)
        except SpecError as exc:
            if len(steps) == 1:
                raise
            raise SpecError(exc.message, f"{exc.where} (step {step.title})") from None
        # Each step records the strategy it really runs, not "" for the default.
        named = replace(step.spec.strategy, name=resolved.strategy.name)
        checked.append(replace(step, spec=replace(step.spec, strategy=named), resolved=resolved))
    return checked


def trace_beside(data: dict[str, Any], profile: Path) -> None:
    """A profile's relative workload.trace.path names a file beside the profile (a --set
    one stays relative to the current directory)."""
    workload = data.get("workload")
    trace = workload.get("trace") if isinstance(workload, dict) else None
    if not isinstance(trace, dict):
        return
    path = trace.get("path")
    if isinstance(path, str) and path and not Path(path).is_absolute():
        trace["path"] = str(profile.parent / path)


def load_spec(path: Path | None, overrides: Iterable[str] = ()) -> Spec:
    """A profile file (or the defaults when None) with overrides applied, fully checked."""
    data = read_profile(path) if path else {}
    source = str(path) if path else "--set" if overrides else ""
    if path:
        trace_beside(data, path)
    spec = spec_from_data(data, overrides, source)
    try:
        check_spec(spec)
        if spec.search is not None:
            check_settings(spec.search)
    except SpecError as exc:
        raise located(exc, source) from None
    return spec


__all__ = [
    "ResolvedStep",
    "Step",
    "check_spec",
    "check_step",
    "load_spec",
    "plan",
    "resolve_strategy",
    "total_clients",
    "used_operations",
    "workers_for",
]


def _check_pubsub(ps: PubSub) -> None:
    if ps.channels < 1 or ps.subscribers_per_channel < 0 or ps.message_size < 16:
        raise SpecError(
            "expected channels >= 1, subscribers_per_channel >= 0, "
            "message_size >= 16 (the timestamp and sequence need 16 bytes)",
            "workload.pubsub",
        )


def _check_machine(m: MachineSpec) -> None:
    """The hiccup meter's settings: a tick of 0 turns it off; else both at least 1 µs."""
    if m.hiccup_tick < 0 or 0 < m.hiccup_tick < 1e-6:
        raise SpecError(
            f"expected seconds of at least 0.000001 (0: no meter); got {m.hiccup_tick:g}",
            "machine.hiccup_tick",
        )
    if m.hiccup_threshold < 1e-6:
        raise SpecError(
            f"expected seconds of at least 0.000001; got {m.hiccup_threshold:g}",
            "machine.hiccup_threshold",
        )
