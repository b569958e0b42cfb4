"""``python -m workbench_libcachesim TRACE --policies lru,s3fifo --sizes N[,N...] --unit bytes``

Replays an oracleGeneral TRACE through each policy at each size and prints one JSON object:
``{"seconds": s, "results": [{"policy", "size", "hit_rate", "hot", "cold", ...}]}`` with hit
rates as shares of requests (0..1), as the measured ones are stored. With ``--hot-below K``
requests for object ids below K count as hot, and every request is fed from here (about 1M
requests/s) to tell hot from cold; without it libCacheSim's own loop runs. ``--unit
objects`` counts every object as size 1. ``--check`` only reads the trace back through
libCacheSim's reader and prints its records. ``--warmup FILE`` replays FILE first, uncounted.
``--analyze`` runs libCacheSim's trace analyzer instead and prints what its summary says:
``{"requests", "objects", "compulsory_miss_ratio": {"requests", "bytes"}, "zipf_alpha",
"zipf_r2", "frequency_mean", "size_weighted": {"requests", "objects"}}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from typing import Any

import libcachesim as lcs

from workbench.sdk.scratch import scratch_folder

POLICIES = {
    "lru": lcs.LRU,
    "fifo": lcs.FIFO,
    "random": lcs.Random,
    "clock": lcs.Clock,
    "s3fifo": lcs.S3FIFO,
    "sieve": lcs.Sieve,
    "arc": lcs.ARC,
    "twoq": lcs.TwoQ,
    "wtinylfu": lcs.WTinyLFU,
    "lhd": lcs.LHD,
    "belady": lcs.Belady,
}


NEVER = 1 << 62  # the reader gives INT64_MAX for "no next access"
HASHPOWER = 20  # 1M buckets: enough for the traces a step captures, quick to allocate


def _reader(path: str, objects: bool) -> Any:
    params = lcs.ReaderInitParam()
    params.ignore_obj_size = objects
    return lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE, params)


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def simulate(
    path: str, policy: str, size: int, objects: bool, hot_below: int | None, warmup: str
) -> dict[str, Any]:
    cache = POLICIES[policy](size, hashpower=HASHPOWER)
    reader = _reader(path, objects)
    if hot_below is None and (not warmup or policy != "belady"):
        # libCacheSim's own loop; a warm-up first warms the cache, its figures dropped.
        # (Belady needs next accesses that go on after the warm-up: fed from here below.)
        if warmup:
            cache.process_trace(_reader(warmup, objects))
        miss_ratio, _ = cache.process_trace(reader)
        return {"policy": policy, "size": size, "hit_rate": round(1 - miss_ratio, 6)}
    get = cache.get
    offset = 0
    if warmup:  # the warm-up phase first, uncounted: the cache as warm as the server's was
        for req in _reader(warmup, objects):
            if objects:
                req.obj_size = 1
            get(req)
            offset += 1
    hot_below = -1 if hot_below is None else hot_below
    n = hits = hot = hot_hits = 0
    for req in reader:
        if offset and 0 <= req.next_access_vtime < NEVER:  # positions go on after the warm-up
            req.next_access_vtime += offset
        if objects:
            req.obj_size = 1
        hit = get(req)
        n += 1
        hits += hit
        if req.obj_id < hot_below:
            hot += 1
            hot_hits += hit
    return {
        "policy": policy,
        "size": size,
        "hit_rate": _share(hits, n),
        "hot": _share(hot_hits, hot),
        "cold": _share(hits - hot_hits, n - hot),
        "requests": n,
        "hot_requests": hot,
    }


def check(path: str) -> dict[str, Any]:
    """The trace as libCacheSim's reader sees it: every record's fields."""
    records = [
        [req.clock_time, req.obj_id, req.obj_size, req.next_access_vtime]
        for req in _reader(path, False)
    ]
    return {"requests": len(records), "records": records}


# Lines of the analyzer's summary (its `stat` file) and the figures each gives.
STAT_LINES = {
    r"number of requests: (\d+), number of objects: (\d+)": ("requests", "objects"),
    r"compulsory miss ratio \(req/byte\): ([\d.]+)/([\d.]+)": (
        "compulsory_miss_ratio.requests",
        "compulsory_miss_ratio.bytes",
    ),
    r"object size weighted by req/obj: (\d+)/(\d+)": (
        "size_weighted.requests",
        "size_weighted.objects",
    ),
    r"frequency mean: ([\d.]+)": ("frequency_mean",),
    r"Zipf alpha=([-\d.]+), R2=([-\d.]+)": ("zipf_alpha", "zipf_r2"),
}


def analyze(path: str) -> dict[str, Any]:
    """libCacheSim's analyzer over an oracleGeneral trace: its summary's figures. It writes
    its files (the summary as `stat`, in the working directory) into a directory of its own."""
    option = lcs.AnalysisOption(
        req_rate=False, access_pattern=False, size=True, reuse=False, popularity=True
    )
    path = os.path.abspath(path)
    here = os.getcwd()
    with scratch_folder("analyzer") as folder:
        tmp = str(folder)
        os.chdir(tmp)
        try:
            reader = _reader(path, False)
            params = lcs.AnalysisParam()
            analyzer = lcs.TraceAnalyzer(reader, os.path.join(tmp, "out"), params, option)
            analyzer.run()
            with open(os.path.join(tmp, "stat")) as f:
                stat = f.read()
        finally:
            os.chdir(here)
    found: dict[str, Any] = {}
    for pattern, names in STAT_LINES.items():
        m = re.search(pattern, stat)
        if not m:
            continue
        for name, text in zip(names, m.groups(), strict=True):
            value = float(text) if "." in text else int(text)
            if "." in name:
                group, key = name.split(".")
                found.setdefault(group, {})[key] = value
            else:
                found[name] = value
    return found


def main(argv: list[str]) -> int:
    # The JSON is the only thing on stdout: what libCacheSim's C code prints (W-TinyLFU's
    # sketch warnings) goes to stderr.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    parser = argparse.ArgumentParser(prog="python -m workbench_libcachesim")
    parser.add_argument("trace")
    parser.add_argument("--policies", default="lru")
    parser.add_argument("--sizes", default="")
    parser.add_argument("--unit", choices=("bytes", "objects"), default="bytes")
    parser.add_argument("--hot-below", type=int, default=None)
    parser.add_argument("--warmup", default="", help="an oracleGeneral trace replayed first")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--analyze", action="store_true")
    args = parser.parse_args(argv)
    if args.analyze:
        print(json.dumps(analyze(args.trace)), file=out, flush=True)
        return 0
    if args.check:
        print(json.dumps(check(args.trace)), file=out, flush=True)
        return 0
    began = time.perf_counter()
    results = []
    objects = args.unit == "objects"
    requests = 0
    for size in (int(s) for s in args.sizes.split(",") if s):
        for policy in args.policies.split(","):
            result = simulate(args.trace, policy, size, objects, args.hot_below, args.warmup)
            requests += result.get("requests", 0)
            results.append(result)
    done = {"seconds": round(time.perf_counter() - began, 4), "results": results}
    print(json.dumps(done), file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
