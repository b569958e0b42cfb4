"""Each profile of profiles/ in a quick form: --set overrides that shrink it to seconds.

The profiles test runs every profile so (tests/integration/test_profiles.py), and the docs
test shortens the guides' `workbench run PROFILE` commands with the same overrides.
"""

from __future__ import annotations

SHORT = ["load.duration=0.3", "load.warmup=0"]

QUICK: dict[str, list[str]] = {
    "quick": SHORT,
    "embedded-sweep": [*SHORT, "load.concurrency=[1,4]"],
    "client-strategies": [*SHORT, "load.concurrency=4"],
    "client-strategies-pubsub": [*SHORT, "load.concurrency=2"],
    # Two clients: a 10 MB op still in flight 0.25 s after a 0.3 s step is abandoned, and
    # eight of them outnumbered the few answered on a loaded machine (the step failed).
    "value-sizes": [
        *SHORT,
        "workload.keys=4",
        "load.concurrency=2",
        'strategy.name=["multiplexed","sync-pool"]',
    ],
    # 1 s steps: on a loaded machine one 0.3 s step of the native engine published 4
    # messages, 3 of them still unanswered 0.25 s after its end: abandoned, the step failed.
    "value-sizes-pubsub": ["load.duration=1", "load.warmup=0"],
    "memory-limit-hit-rate": ["load.ops=400", "load.warmup_ops=400"],
    "memory-limit-hit-rate-quick": ["load.ops=400", "load.warmup_ops=400"],
    "caching-proxy-bad-query": [*SHORT, "load.concurrency=[1,16]"],
    "caching-proxy-miss": [*SHORT, "load.concurrency=4"],
    "caching-proxy-hit": [*SHORT, "load.concurrency=4"],
    "kv-store": ["load.duration=1", "load.warmup=0.3"],
    "eviction-policies": ["load.duration=0.3", "load.warmup_ops=2000", "load.repeat=1"],
    "trace-replay": ["workload.trace.limit=3000", "load.warmup_ops=1000"],
}
