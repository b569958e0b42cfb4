"""Simulating one stored or running step: its trace, at its cache's limit, through policies.

Hot keys are counted as the engine counts them: the hot share of ``hotcold(access, keys)``,
else the first 20% of the key space (object ids are key indexes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from workbench.simulate.limits import cache_limit
from workbench.simulate.runner import simulate
from workbench.workload.forms import parse_key_distribution, parse_value_size
from workbench.workload.keys import DEFAULT_HOT_SHARE
from workbench.workload.oracle_trace import warmup_path


def hot_below(spec: Mapping[str, Any]) -> int:
    """Object ids below this are the hot keys."""
    wl = spec["workload"]
    dist = parse_key_distribution(wl["key_distribution"])
    share = dist.params[1] if dist.kind == "hotcold" else DEFAULT_HOT_SHARE
    return max(1, int(int(wl["keys"]) * share))


def simulate_step(
    spec: Mapping[str, Any],
    resolved: Mapping[str, Any],
    server_figures: Mapping[str, Any],
    policies: Sequence[str],
) -> dict[str, Any]:
    """StepSimulated.results for a step: the policies' hit rates, or {"error": why}."""
    trace = spec["workload"].get("trace_out", "")
    if not trace:
        return {"error": "no trace was captured (workload.trace_out, --trace-out)"}
    if not os.path.exists(trace):
        return {"error": f"the trace {trace} is gone"}
    limit = cache_limit(
        resolved.get("facts") or {},
        resolved.get("system_options") or spec["target"].get("options", {}),
        resolved.get("server_options") or {},
        server_figures,
        parse_value_size(spec["workload"]["value_size"]),
    )
    if limit is None:
        return {"error": "the cache's limit is not known (an unmanaged server reported none)"}
    # A step without a warm-up leaves an empty one, which libCacheSim refuses to read.
    warmed = os.path.exists(warmup_path(trace)) and os.path.getsize(warmup_path(trace)) > 0
    warm = warmup_path(trace) if warmed else ""
    results, seconds = simulate(
        trace, policies, [limit.size], limit.unit, hot_below(spec), warmup=warm
    )
    requests = results[0].requests if results else 0
    return {
        "limit": limit.size,
        "unit": limit.unit,
        "requests": requests,
        "seconds": seconds,
        "trace": trace,
        "warmed": bool(warm),
        "policies": {
            r.policy: {"hit_rate": r.hit_rate, "hot": r.hot, "cold": r.cold} for r in results
        },
    }
