"""Per-operation cost of the load hot path, and what recording adds to it.

Runs the engine's own client loop (`clients.async_client`) against the embedded cache in
this process for a fixed op count, then measures the pieces separately:

  generate      OpStream.next() alone
  execute       generate + the awaited embedded-cache call, no timing
  hot path      the real driver loop: generate, execute, stamp, append
  record        two perf_counter_ns() calls and a list append (what the loop adds per op)
  fold          quantise + count + record_value per interval, per sample
  inline HDR    HdrHistogram.record_value per op, the way we do NOT record

and prints the recording overhead (record + fold) as a share of the hot path.
Usage: python bench/bench_hot_path.py [ops]   (noisy machine: compare ratios, not times)
"""

from __future__ import annotations

import asyncio
import sys
import time

from workbench_embedded import DirectClient
from workbench_embedded.cache import LruCache

from workbench.engine.client_plans import ClientPlan
from workbench.engine.clients import LoadState, PubSubPlan, async_client
from workbench.results.metrics import fold, new_histogram
from workbench.sdk.ops import GET, SET
from workbench.workload.forms import parse_key_distribution, parse_ttl, parse_value_size
from workbench.workload.generator import OpStream, ValueBuffer

REPEATS = 5


def make_stream() -> OpStream:
    return OpStream(
        mix={GET: 0.9, SET: 0.1},
        key_dist=parse_key_distribution("zipf(0.99)"),
        keys=100_000,
        key_offset=0,
        key_prefix="wb:",
        key_length=12,
        value_size=parse_value_size("fixed(100)"),
        ttl=parse_ttl("none"),
        seed=1,
        client_id=0,
    )


def best(fn, ops: int) -> float:  # type: ignore[no-untyped-def]
    """Best of REPEATS, in ns per op."""
    results = []
    for _ in range(REPEATS):
        t0 = time.perf_counter_ns()
        fn(ops)
        results.append((time.perf_counter_ns() - t0) / ops)
    return min(results)


def generate(ops: int) -> None:
    nxt = make_stream().next
    for _ in range(ops):
        nxt()


def execute(ops: int) -> None:
    async def go() -> None:
        client = DirectClient(LruCache(1_000_000, 1 << 30))
        stream, values = make_stream(), ValueBuffer(100, 1)
        nxt, view = stream.next, values.view
        for _ in range(ops):
            code, _index, key, size, ttl = nxt()
            if code == GET:
                await client.get(key)
            else:
                await client.set(key, view[:size], ttl)

    asyncio.run(go())


def hot_path(ops: int) -> None:
    async def go() -> None:
        client = DirectClient(LruCache(1_000_000, 1 << 30))
        state = LoadState(remaining=ops, budget_stops=True, loop=asyncio.get_running_loop())
        state.begin(0)
        await async_client(
            client,
            make_stream(),
            ValueBuffer(100, 1),
            state,
            ClientPlan(0, {GET: 0.9, SET: 0.1}),
            PubSubPlan([b"c"], 0, 64),
        )
        assert sum(len(v) for v in state.buf.lat.values()) == ops

    asyncio.run(go())


def record(ops: int) -> None:
    perf = time.perf_counter_ns
    lat: list[int] = []
    for _ in range(ops):
        t0 = perf()
        lat.append(perf() - t0)


_SAMPLES: dict[int, list[int]] = {}


def samples(ops: int) -> list[int]:
    """Latencies spread like the hot path's own (0.8-4.8 µs), built once outside the timing."""
    if ops not in _SAMPLES:
        _SAMPLES[ops] = [800 + (i * 7919) % 4000 for i in range(ops)]
    return _SAMPLES[ops]


def fold_cost(ops: int) -> None:
    fold(new_histogram(), samples(ops))


def inline_hdr(ops: int) -> None:
    h = new_histogram()
    record_value = h.record_value
    for v in samples(ops):
        record_value(v)


def main() -> None:
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    try:
        import uvloop

        uvloop.install()
        loop_name = "uvloop"
    except ImportError:
        loop_name = "asyncio"
    rows = {
        name: best(fn, ops)
        for name, fn in [
            ("generate", generate),
            ("execute", execute),
            ("hot path", hot_path),
            ("record", record),
            ("fold", fold_cost),
            ("inline HDR", inline_hdr),
        ]
    }
    print(f"hot path on the embedded cache, {ops:,} ops, best of {REPEATS}, {loop_name}")
    for name, ns in rows.items():
        print(f"  {name:<11} {ns:8.0f} ns/op")
    overhead = rows["record"] + rows["fold"]
    print(
        f"recording (stamp + append + fold): {overhead:.0f} ns/op = "
        f"{overhead / rows['hot path']:.1%} of the hot path "
        f"({rows['hot path'] / 1000:.2f} µs/op, {1e9 / rows['hot path']:,.0f} ops/s per process)"
    )
    print(
        f"inline HdrHistogram.record_value would cost {rows['inline HDR']:.0f} ns/op = "
        f"{rows['inline HDR'] / rows['hot path']:.1%} of the hot path, "
        f"{rows['inline HDR'] / overhead:.1f}x our recording"
    )


if __name__ == "__main__":
    main()
