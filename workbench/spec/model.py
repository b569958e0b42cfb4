"""The experiment spec: frozen dataclasses, lossless to and from plain dicts.

Distributions stay in their written form (``"zipf(0.99)"``, ``"uniform(8,3000)"``) so that a
profile, ``--set``, the TUI form and a stored run all say the same thing; `workload.py`
parses them. `spec_from_dict` checks every field and names it in its errors.
"""

from __future__ import annotations

import dataclasses
import math
import types
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union, get_args, get_origin, get_type_hints

from workbench.sdk.errors import SpecError

# load.arrivals: how an open-loop client's gaps are drawn (`workbench.engine.arrivals`).
ARRIVALS = ("uniform", "poisson")


# The system a spec that names none runs: the in-process cache, which needs no server.
DEFAULT_SYSTEM = "embedded"


@dataclass(frozen=True)
class TargetSpec:
    system: str = DEFAULT_SYSTEM
    options: Mapping[str, Any] = field(default_factory=dict)
    # Start the system's own server on a free loopback port for the run, and stop it after.
    managed: bool = False
    server: Mapping[str, Any] = field(default_factory=dict)
    # Load a target that is not on this machine. Off by default: a typo in a URL must not
    # send load to someone else's server. Also `workbench run --allow-remote`.
    allow_remote: bool = False


@dataclass(frozen=True)
class StrategySpec:
    name: str = ""  # empty: the system's default strategy
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class OpGroup:
    """Clients with their own operation mix, e.g. writers and readers at the same time."""

    name: str = "all"
    mix: Mapping[str, float] = field(default_factory=lambda: {"get": 0.9, "set": 0.1})
    concurrency: int = 1


@dataclass(frozen=True)
class PubSub:
    channels: int = 1
    subscribers_per_channel: int = 1
    message_size: int = 64


# workload.trace.ops: every request a get then a set on a miss, or the trace's own ops.
TRACE_OPS = ("get-set-on-miss", "as-recorded")


@dataclass(frozen=True)
class TraceSpec:
    """Replay a cache trace (`workbench.workload.traces`) instead of drawing keys and ops."""

    path: str = ""
    format: str = ""  # oracleGeneral, twitter or csv; "": from the file name
    speed: float = 0.0  # 0: closed loop; 1: the trace's own timing; 10: ten times faster
    ops: str = "get-set-on-miss"
    limit: int = 0  # requests replayed from the start; 0: all
    # Seconds of trace time from its first request that are the warm-up (0: none; or
    # load.warmup_ops for the first N requests).
    warmup: float = 0.0


@dataclass(frozen=True)
class Workload:
    mix: Mapping[str, float] = field(default_factory=lambda: {"get": 0.9, "set": 0.1})
    # When given, replaces `mix` and `load.concurrency`: each group runs its own clients.
    groups: tuple[OpGroup, ...] = ()
    keys: int = 10_000
    key_prefix: str = "wb:"
    key_length: int = 12
    key_distribution: str = "uniform"
    value_size: str = "fixed(100)"
    ttl: str = "none"
    prefill: bool = False
    pubsub: PubSub = field(default_factory=PubSub)
    # Capture what the workers send in the measured phase as a libCacheSim oracleGeneral
    # trace (`workbench.workload.oracle_trace`); with several steps, each its own file. "" : none.
    trace_out: str = field(default="", metadata={"omit_default": True})
    # Replay a trace file; left out of a spec's data when not given.
    trace: TraceSpec | None = field(default=None, metadata={"omit_default": True})


@dataclass(frozen=True)
class Load:
    concurrency: int = 16
    duration: float | None = 5.0
    ops: int | None = None
    warmup: float = 1.0
    warmup_ops: int | None = None
    workers: int = 0  # 0: one per core
    interval: float = 1.0
    rate: float | None = None  # total ops/s; switches to open loop
    # Open loop: "uniform" gaps of one period per client (wrk2), or "poisson" gaps
    # (exponential, the same mean). Left out of a spec's data at its default.
    arrivals: str = field(default="uniform", metadata={"omit_default": True})
    # Run every step this many times, interleaved (A B A B); left out of a spec's data at 1.
    repeat: int = field(default=1, metadata={"omit_default": True})
    # Where workers run: "local" processes, or actors on a Ray cluster (the `ray` extra).
    # Left out of a spec's data at their defaults.
    launcher: str = field(default="local", metadata={"omit_default": True})
    # "auto": the cluster this machine joined; "local": a private one; or host:port
    ray_address: str = field(default="auto", metadata={"omit_default": True})
    # "spread" workers across nodes, or "pack" them
    ray_placement: str = field(default="spread", metadata={"omit_default": True})


@dataclass(frozen=True)
class SweepAxis:
    """One sweep axis: a spec path and the values each step puts there."""

    path: str
    values: tuple[Any, ...]
    labels: tuple[str, ...] = ()
    # Other paths set in step with the values, one entry per value (zipped, not crossed):
    # a target sweep names each target's strategy with {"strategy.name" = [...]}.
    along: Mapping[str, tuple[Any, ...]] = field(
        default_factory=dict, metadata={"omit_default": True}
    )


@dataclass(frozen=True)
class ChecksSpec:
    """Pass/fail thresholds checked once the run is stored (`workbench.results.checks` reads
    them)."""

    fail_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchSpec:
    """`workbench search`: the highest open-loop rate meeting `target` (`search_rules`)."""

    target: tuple[str, ...] = ()
    start: float = 1000.0  # first rate probed, ops/s
    probe: float = 3.0  # seconds measured per probe
    max_probes: int = 16  # every probe counts, retries too
    precision: float = 0.05  # done when the failing rate is within this share of the passing
    confirm: int = 2  # a rate fails when this many of its probes failed (2: two of three)
    # A probe too short for the percentile it failed is probed again for as long as that
    # percentile needs at its rate, this many seconds at most (0: never; `search_length`).
    max_probe: float = 30.0
    # Any failure fails (no retries for machine stalls, no inconclusive probes): the rule
    # before the hiccup meter. Left out of a spec's data when false.
    strict: bool = field(default=False, metadata={"omit_default": True})


@dataclass(frozen=True)
class MachineSpec:
    """The load machine's hiccup meter (`workbench.results.hiccups`): on in every run unless
    `hiccup_tick` is 0. Each CPU's meter thread sleeps `hiccup_tick` seconds at a time; a
    wake-up at least `hiccup_threshold` late is a hiccup, kept with its start and length."""

    hiccup_tick: float = 0.001
    hiccup_threshold: float = 0.001


@dataclass(frozen=True)
class SimulateSpec:
    """Eviction policies replayed (libCacheSim, `workbench.simulate`) over each step's trace
    at the server's own limit, stored beside the measured hit rates."""

    policies: tuple[str, ...] = ()


@dataclass(frozen=True)
class Spec:
    name: str = "default"
    description: str = ""
    target: TargetSpec = field(default_factory=TargetSpec)
    strategy: StrategySpec = field(default_factory=StrategySpec)
    workload: Workload = field(default_factory=Workload)
    load: Load = field(default_factory=Load)
    seed: int = 1
    sweep: tuple[SweepAxis, ...] = ()
    # Not about what is measured: None unless a profile or --set gives them.
    checks: ChecksSpec | None = None
    search: SearchSpec | None = None
    # Left out of a spec's data when not given (stored runs from before stay the same).
    simulate: SimulateSpec | None = field(default=None, metadata={"omit_default": True})
    machine: MachineSpec | None = field(default=None, metadata={"omit_default": True})


def spec_to_dict(obj: Any) -> Any:
    """Plain data (dicts, lists, scalars) for TOML, JSON and the store."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {
            f.name: spec_to_dict(getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if not (f.metadata.get("omit_default") and getattr(obj, f.name) == _default(f))
        }
    if isinstance(obj, Mapping):
        return {str(k): spec_to_dict(v) for k, v in obj.items()}
    if isinstance(obj, tuple | list):
        return [spec_to_dict(v) for v in obj]
    return obj


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def _type_name(tp: Any) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
    if tp in names:
        return names[tp]
    if dataclasses.is_dataclass(tp):
        return "a table"
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        return " or ".join("nothing" if a is type(None) else _type_name(a) for a in get_args(tp))
    if origin is tuple:
        return "a list"
    return "a table"


def _convert(value: Any, tp: Any, where: str) -> Any:
    if isinstance(value, float) and not math.isfinite(value):  # TOML's nan and inf
        raise SpecError(f"expected a finite number; got {value!r}", where)
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        inner: SpecError | None = None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(value, arg, where)
            except SpecError as exc:
                # A table that is one, with a bad field, says which field and why (it
                # was "search: expected a table or nothing; got {'probe': nan}").
                inner = inner or (exc if exc.where != where else None)
        if inner is not None:
            raise inner
        raise SpecError(f"expected {_type_name(tp)}; got {value!r}", where)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, Mapping):
            raise SpecError(f"expected a table; got {value!r}", where)
        return _from_dict(tp, value, where)
    if origin is tuple:
        (item_tp, _) = get_args(tp)
        if not isinstance(value, list | tuple):
            raise SpecError(f"expected a list; got {value!r}", where)
        return tuple(_convert(v, item_tp, f"{where}[{i}]") for i, v in enumerate(value))
    if origin is Mapping:
        if not isinstance(value, Mapping):
            raise SpecError(f"expected a table; got {value!r}", where)
        _, val_tp = get_args(tp)
        if val_tp is Any:
            return dict(value)
        return {k: _convert(v, val_tp, f"{where}.{k}") for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)  # value_size = 100, ttl = 60: a number is its own expression
    elif tp is Any:
        return value
    raise SpecError(f"expected {_type_name(tp)}; got {value!r}", where)


def _from_dict(cls: type, data: Mapping[str, Any], where: str) -> Any:
    hints = get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = [k for k in data if k not in names]
    if unknown:
        prefix = f"{where}." if where else ""
        raise SpecError(
            f"unknown field; expected one of {', '.join(names)}", f"{prefix}{unknown[0]}"
        )
    kwargs = {}
    for name in names:
        if name in data:
            path = f"{where}.{name}" if where else name
            kwargs[name] = _convert(data[name], hints[name], path)
    return cls(**kwargs)


# A run's name is shown in every list and stored with the run: a line, not a document.
# The shortest interval, and so the shortest load: below it no rate means anything.
MIN_INTERVAL = 0.05
MAX_NAME_CHARS = 200


def check_name(name: str, where: str = "name", *, given: bool = False) -> str:
    """The name of a run or profile, or one SpecError when it cannot be one: too long, or
    holding a control character (a newline split `runs list` rows, an ESC recoloured the
    terminal that printed it). `given`: one a person typed (--name, `runs rename`), which
    must name something."""
    if len(name) > MAX_NAME_CHARS:
        raise SpecError(
            f"expected a name of at most {MAX_NAME_CHARS} characters; got {len(name):,}", where
        )
    bad = next((c for c in name if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise SpecError(f"expected a name without control characters; got {name!r}", where)
    if given and not name.strip():
        raise SpecError(f"expected a name with something in it; got {name!r}", where)
    return name


def shown_name(name: str) -> str:
    """A stored name as it is printed: a control character a store from before
    `check_name` holds is shown escaped (``\\n``, ``\\x1b``), never sent to the terminal."""
    return "".join(repr(c)[1:-1] if unicodedata.category(c) == "Cc" else c for c in name)


def spec_from_dict(data: Mapping[str, Any]) -> Spec:
    """Build a Spec from plain data, checking every field's type (not yet its meaning)."""
    spec: Spec = _from_dict(Spec, data, "")
    return spec
