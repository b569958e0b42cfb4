"""Across engines the workload means the same: key frequencies, sizes, the mix and the hit
rate of an exact LRU, from the native stream (probe mode) and the Python OpStream."""

from __future__ import annotations

import collections
import json
import struct
import subprocess
from typing import Any

import pytest
from native_workers import order, spec

from workbench.engine.driver import ClientPlan, Workload
from workbench.spec.native_binary import binary_path
from workbench.workload.forms import parse_mix
from workbench.workload.generator import ValueBuffer

N = 40_000
KEYS = 1000


def _native_ops(s: Any, client: int) -> dict[str, list[int]]:
    body = json.dumps({"op": "stream", "order": order(s), "client": client, "count": N}).encode()
    done = subprocess.run(
        [str(binary_path()), "--probe"],
        input=struct.pack(">I", len(body)) + body,
        capture_output=True,
        timeout=60,
        check=True,
    )
    (size,) = struct.unpack_from(">I", done.stdout)
    answer: dict[str, list[int]] = json.loads(done.stdout[4 : 4 + size])
    return answer


def _python_ops(s: Any, client: int) -> dict[str, list[int]]:
    wl = Workload(s, 0, 1, True, ValueBuffer(16, s.seed))
    stream = wl.stream(ClientPlan(client, parse_mix(s.workload.mix), None))
    ops = [stream.next() for _ in range(N)]
    return {"codes": [o[0] for o in ops], "keys": [o[1] for o in ops], "sizes": [o[3] for o in ops]}


def _lru_hit_rate(keys: list[int], capacity: int) -> float:
    cache: collections.OrderedDict[int, None] = collections.OrderedDict()
    hits = 0
    for k in keys:
        if k in cache:
            hits += 1
            cache.move_to_end(k)
        else:
            cache[k] = None
            if len(cache) > capacity:
                cache.popitem(last=False)
    return hits / len(keys)


def _shares(values: list[int], buckets: int, span: int) -> list[float]:
    counts = [0] * buckets
    for v in values:
        counts[min(v * buckets // span, buckets - 1)] += 1
    return [c / len(values) for c in counts]


@pytest.mark.parametrize(
    "dist",
    ["uniform", "zipf(0.99)", "zipf(0.5)", "gaussian(0.5,0.1)", "hotcold(0.8,0.2)", "sequential"],
)
def test_key_frequencies_and_lru_hit_rate_match(dist: str) -> None:
    s = spec(
        **{
            "target.system": "redis",
            "strategy.name": "native",
            "workload.keys": KEYS,
            "workload.key_distribution": dist,
            "workload.mix": {"get": 0.7, "set": 0.2, "delete": 0.1},
            "workload.value_size": "weighted(100:9,10KiB:1)",
        }
    )
    native, python = _native_ops(s, 3), _python_ops(s, 3)
    # Same seed, same sequence within the engine.
    assert _native_ops(s, 3) == native
    for a, b in zip(
        _shares(native["keys"], 20, KEYS), _shares(python["keys"], 20, KEYS), strict=True
    ):
        assert a == pytest.approx(b, abs=0.012)
    hottest_n = collections.Counter(native["keys"]).most_common(10)
    hottest_p = collections.Counter(python["keys"]).most_common(10)
    assert sum(c for _, c in hottest_n) / N == pytest.approx(
        sum(c for _, c in hottest_p) / N, abs=0.012
    )
    for capacity in (50, 200):
        assert _lru_hit_rate(native["keys"], capacity) == pytest.approx(
            _lru_hit_rate(python["keys"], capacity), abs=0.015
        )
    for code in range(3):
        assert native["codes"].count(code) / N == pytest.approx(
            python["codes"].count(code) / N, abs=0.012
        )
    assert native["sizes"].count(10240) / N == pytest.approx(
        python["sizes"].count(10240) / N, abs=0.012
    )
    assert set(native["sizes"]) == {100, 10240}
