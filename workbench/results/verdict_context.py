"""What the verdict needs to know about a step beyond its intervals, read from its stored
spec and its system's facts (`context_for`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Context:
    """What the verdict needs to know about a step beyond its intervals (from its spec)."""

    system: str = ""
    open_loop: bool = False
    server_cores: float | None = None  # known from the system; None: ask the figures
    single_threaded: bool = False
    clients: int | None = None  # virtual clients in all (open loop: ops in flight at most)
    native: bool = False  # run by the native engine (the advice then cannot offer it)
    in_process: bool = False  # the cache lives in the workers: no server CPU to record
    native_available: bool = True  # the system has a native strategy to offer
    # What the self-checks need (`workbench.results.self_checks`): how arrivals were drawn,
    # a trace replayed on its own timing, and the percentiles a target or check asks for.
    arrivals: str = "uniform"
    replay: bool = False
    percentiles: tuple[float, ...] = ()


def context_for(
    spec: Mapping[str, Any],
    facts: Mapping[str, Any] | None = None,
    engine: str = "",
    native_available: bool | None = None,
) -> Context:
    """The context of a step from its stored spec, what its system declared (the stored
    step's `facts`: the cores its server may use), the name of the engine its workers said
    they run, and whether its system has a native strategy (unknown in older runs, where
    only an in-process cache is known to have none)."""
    facts = facts or {}
    system = str(spec.get("target", {}).get("system", ""))
    in_process = bool(facts.get("in_process"))
    if native_available is None:
        native_available = not in_process and system != "embedded"
    load = spec.get("load", {})
    groups = spec.get("workload", {}).get("groups") or []
    clients = sum(int(g.get("concurrency", 0)) for g in groups) or load.get("concurrency")
    trace = spec.get("workload", {}).get("trace") or {}
    return Context(
        system,
        bool(load.get("rate")),
        positive(facts.get("server_cores")),
        bool(facts.get("single_threaded")),
        clients if positive(clients) else None,
        native=engine == "native",
        in_process=in_process,
        native_available=native_available,
        arrivals=str(load.get("arrivals") or "uniform"),
        replay=bool(positive(trace.get("speed"))),
        percentiles=_asked(spec),
    )


def _asked(spec: Mapping[str, Any]) -> tuple[float, ...]:
    """The percentiles a search target or a --fail-on check asks of this step."""
    texts = [*((spec.get("search") or {}).get("target") or ())]
    texts += [*((spec.get("checks") or {}).get("fail_on") or ())]
    found = {float(m) for t in texts for m in re.findall(r"\bp(\d+(?:\.\d+)?)\s*[<>]", str(t))}
    return tuple(sorted(p for p in found if 0 < p < 100))


def positive(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None
