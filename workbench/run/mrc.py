"""Miss-ratio curves of a profile: its workload's requests through every eviction policy at
many cache sizes (libCacheSim, in a subprocess), and optionally the real servers measured
at some of those sizes.

The requests are the profile's own op streams, generated as its clients would issue them
(round-robin over the clients, warm-up then measured), written once as an oracleGeneral
trace; the warm-up warms each simulated cache and is not counted.
"""

from __future__ import annotations

import copy
import os
from array import array
from collections.abc import Sequence
from typing import Any

from workbench.engine.client_plans import Workload, client_plans
from workbench.engine.clients import TRACED
from workbench.report.mrc import Curves
from workbench.results.store import Store
from workbench.sdk.discovery import load_plugin
from workbench.sdk.scratch import scratch_folder
from workbench.simulate.runner import simulate
from workbench.spec.load import spec_from_data
from workbench.spec.model import DEFAULT_SYSTEM, Spec
from workbench.spec.steps import check_spec
from workbench.workload.oracle_trace import warmup_path, write_trace

DEFAULT_OPS = 100_000  # requests of a duration-bound profile


def synth_trace(spec: Spec, out: str) -> int:
    """The spec's requests as its clients would issue them: `out` (measured) and its
    warm-up beside it. The measured requests written."""
    plans = client_plans(spec, 0, 1)
    # No value buffer: a trace records keys and sizes, and no value is ever drawn here.
    workload = Workload(spec, 0, 1, True, None)  # type: ignore[arg-type]
    streams = [workload.stream(p).next for p in plans]
    measured = spec.load.ops or DEFAULT_OPS
    warm = spec.load.warmup_ops if spec.load.warmup_ops is not None else measured
    for path, count in ((warmup_path(out), warm), (out, measured)):
        keys, sizes = array("Q"), array("I")
        i = 0
        while len(keys) < count and i < 4 * count + 16:  # bounded: most ops are requests
            code, index, _, size, _ = streams[i % len(streams)]()
            i += 1
            if code in TRACED:
                keys.append(index)
                sizes.append(size)
        times = array("q", range(len(keys)))
        write_trace(path, times, keys, sizes)
    return measured


def simulated_curves(
    spec: Spec, profile: str, sizes: Sequence[int], policies: Sequence[str], unit: str
) -> Curves:
    """Every policy at every size over the profile's requests."""
    with scratch_folder("mrc") as tmp:
        trace = os.path.join(tmp, "requests.oracleGeneral")
        requests = synth_trace(spec, trace)
        results, seconds = simulate(trace, policies, sizes, unit, warmup=warmup_path(trace))
    curves = Curves(profile, unit, list(sizes), requests, seconds=seconds)
    for policy in policies:
        by_size = {r.size: r.hit_rate for r in results if r.policy == policy}
        curves.simulated[policy] = [by_size.get(s) for s in sizes]
    return curves


def _limit_target(target: dict[str, Any], size: int) -> dict[str, Any]:
    """A target table with its cache's limit set to `size` bytes, in the option its system
    declares (`CacheSystem.cache_size`); unchanged for a system that declares none."""
    target = copy.deepcopy(target)
    declared = load_plugin(str(target.get("system", DEFAULT_SYSTEM))).cache_size
    if declared is not None:
        table = target.setdefault("server" if declared.server else "options", {})
        table[declared.option] = max(1, size // declared.unit)
    return target


def at_limit(data: dict[str, Any], size: int) -> dict[str, Any]:
    """A profile's data with every target it runs limited to `size` bytes."""
    data = copy.deepcopy(data)
    data["target"] = _limit_target(data.get("target", {}), size)
    for axis in data.get("sweep", []):
        if axis.get("path") == "target":
            axis["values"] = [_limit_target(v, size) for v in axis["values"]]
    return data


async def measure(
    data: dict[str, Any], source: str, sizes: Sequence[int], store: Store, curves: Curves
) -> None:
    """Run the profile's servers at each size; their hit rates become measured points."""
    from workbench.results.events import StepFinished, StepStarted
    from workbench.run import session

    for size in sizes:
        spec = spec_from_data(at_limit(data, size), (), source)
        check_spec(spec)
        names: dict[int, str] = {}
        async for event in session.run(spec, store, name=f"mrc {curves.profile} {size}"):
            if isinstance(event, StepStarted):
                names[event.step] = event.system
            elif isinstance(event, StepFinished) and event.status == "completed":
                gets = event.stats.hits + event.stats.misses
                if gets:
                    points = curves.measured.setdefault(names[event.step], {})
                    points[size] = event.stats.hits / gets
