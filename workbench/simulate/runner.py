"""Runs libCacheSim across the process boundary: ``python -m workbench_libcachesim`` reads a
trace file and prints JSON. libCacheSim (GPL) is never imported into this process."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from workbench.sdk.errors import SpecError, WorkbenchError
from workbench.sdk.servers import python_module
from workbench.simulate.policies import INSTALL
from workbench.workload.traces.oracle_general import check_whole

MODULE = "workbench_libcachesim"
TIMEOUT = 600.0  # seconds: a bound on one simulation, far above what a step's trace takes


@dataclass(frozen=True)
class Simulated:
    policy: str
    size: int
    hit_rate: float | None
    hot: float | None = None
    cold: float | None = None
    requests: int = 0


def available() -> bool:
    """Looked up, not imported."""
    return importlib.util.find_spec("libcachesim") is not None


def require() -> None:
    """Nothing to simulate with: one line saying how to install it (a bad-input error)."""
    if not available():
        raise SpecError(f"simulation needs libcachesim: {INSTALL}", "simulate")


def _run(args: list[str]) -> dict[str, Any]:
    require()
    done = subprocess.run(
        python_module(MODULE, *args),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise WorkbenchError(f"libcachesim failed: {last}", "simulate")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def simulate(
    trace: str,
    policies: Sequence[str],
    sizes: Sequence[int],
    unit: str,
    hot_below: int | None = None,
    warmup: str = "",
) -> tuple[list[Simulated], float]:
    """Every policy at every size over `trace`; with `hot_below`, hot and cold hit rates
    too; `warmup`, a trace replayed first and not counted. The results and the seconds
    the simulator took."""
    for path in (trace, warmup):
        if path:
            check_whole(path)
    args = [trace, "--policies", ",".join(policies), "--sizes", ",".join(map(str, sizes))]
    args += ["--unit", unit]
    if hot_below is not None:
        args += ["--hot-below", str(hot_below)]
    if warmup:
        args += ["--warmup", warmup]
    out = _run(args)
    results = [
        Simulated(
            r["policy"],
            r["size"],
            r.get("hit_rate"),
            r.get("hot"),
            r.get("cold"),
            r.get("requests", 0),
        )
        for r in out["results"]
    ]
    return results, float(out["seconds"])


def analyze(trace: str) -> dict[str, Any]:
    """libCacheSim's trace analyzer over an oracleGeneral trace, across the boundary: its
    compulsory miss ratio, zipf fit (alpha and R²), mean frequency and size weighting."""
    return _run([trace, "--analyze"])


def read_back(trace: str) -> list[list[int]]:
    """The trace's records as libCacheSim's own reader reads them (for checking a trace)."""
    return list(_run([trace, "--check"])["records"])
