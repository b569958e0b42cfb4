"""A Twitter-format trace holding every op kind, replayed as recorded against real
memcached, Redis and the embedded cache, by the Python engine and by the native one
(memcached's text and meta protocols, Redis): the hits, and each op's outcome counts,
equal those of a plain dictionary model of the trace, exactly.

The trace is built here. Its values are the engine's own bytes (the value buffer of the
run's seed, at the key's offset), so the model knows every value a key holds. Keys are
picked by the first byte they get: a "counter" key's is a digit from 1 to 9 and it is only
ever written one byte at a time, so incr and decr find numbers; a "plain" key's is no
digit, space or sign, so they never do. The model has two styles where the servers
differ: memcached's (and the embedded cache's, which follows it) reads a counter up to a
space and rewrites a shorter result padded with spaces, and its cas token is a version;
Redis's reads only whole decimals without a leading zero, and its cas token is the value.
"""

from __future__ import annotations

import random
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support import collect, finished

from workbench.engine.trace_feed import MAX_TRACE_VALUE
from workbench.results.store import Store
from workbench.spec.native_binary import binary_path
from workbench.workload.generator import ValueBuffer

SEED = 11
PREFIX = "t:"
OPS = (
    *("get", "gets", "set", "add", "replace", "cas"),
    *("append", "prepend", "incr", "decr", "touch", "delete"),
)
# The targets, each with the Python engine's strategy that speaks every op.
TARGETS = {
    "memcached": ["target.system=memcached", "target.managed=true", 'strategy.name="multiplexed"'],
    "redis": ["target.system=redis", "target.managed=true", 'strategy.name="multiplexed"'],
    "embedded": ["target.system=embedded", 'strategy.name="direct"'],
}
NATIVE = pytest.mark.skipif(binary_path() is None, reason="the native engine is not built")
# The native engine's strategy, pipelined: a cas waits for its key's gets in flight.
NATIVE_TARGETS = {
    "native-memcached": [*TARGETS["memcached"][:2], 'strategy.name="native"'],
    "native-memcached-meta": [
        *TARGETS["memcached"][:2],
        'strategy.name="native"',
        'strategy.options.protocol="meta"',
        "strategy.options.pipeline=4",
    ],
    "native-redis": [
        *TARGETS["redis"][:2],
        'strategy.name="native"',
        "strategy.options.pipeline=4",
    ],
}
STYLE = {"memcached": "memcached", "embedded": "memcached", "redis": "redis"}
STYLE |= {name: STYLE[name.split("-")[1]] for name in NATIVE_TARGETS}
ALL_TARGETS = {**TARGETS, **NATIVE_TARGETS}


def _first_bytes() -> dict[str, int]:
    """Each candidate key's first value byte (the engine's buffer at the key's offset)."""
    buf = ValueBuffer(MAX_TRACE_VALUE, SEED)
    out = {}
    for i in range(400):
        name = f"k{i}"
        out[name] = buf.data[zlib.crc32((PREFIX + name).encode()) % ValueBuffer.SPREAD]
    return out


def _keys() -> tuple[list[str], list[str]]:
    first = _first_bytes()
    counters = [k for k, b in first.items() if chr(b) in "123456789"][:6]
    plain = [k for k, b in first.items() if chr(b).isalpha()][:18]
    assert len(counters) == 6 and len(plain) == 18
    return counters, plain


def build_trace(path: Path, requests: int = 2400) -> list[tuple[str, str, int, int]]:
    """(key, op, value size, ttl) of each request, written as a Twitter trace."""
    counters, plain = _keys()
    rng = random.Random(SEED)
    rows = []
    for _ in range(requests):
        key = rng.choice(counters if rng.random() < 0.35 else plain)
        op = rng.choice(OPS)
        size = 1 if key in counters else rng.randint(1, 40)
        rows.append((key, op, size, 3600 if op == "touch" else 0))
    with path.open("w") as out:
        for i, (key, op, size, ttl) in enumerate(rows):
            out.write(f"{i},{key},{len(key)},{size},1,{op},{ttl}\n")
    return rows


@dataclass
class Model:
    """What a cache answers to the trace, one request after another (per key the replay
    keeps the trace's order, and no key is evicted or expires)."""

    style: str
    values: dict[str, bytes] = field(default_factory=dict)
    versions: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, object] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    outcomes: dict[str, Counter[str]] = field(default_factory=dict)
    version: int = 0

    def write(self, key: str, value: bytes) -> None:
        self.values[key] = value
        self.version += 1
        self.versions[key] = self.version

    def token(self, key: str) -> object:
        return self.versions[key] if self.style == "memcached" else self.values[key]

    def number(self, value: bytes) -> int | None:
        if self.style == "memcached":  # digits, then a space or the end
            m = re.fullmatch(rb"([0-9]+)( .*)?", value, re.S)
            return int(m[1]) if m else None
        if value.isdigit() and (len(value) == 1 or value[:1] != b"0"):
            return int(value)
        return None

    def delta(self, key: str, by: int) -> str:
        n = self.number(self.values[key])
        if n is None:
            return "not_numeric"
        text = b"%d" % max(n + by, 0)
        old = self.values[key]
        if self.style == "memcached" and len(text) < len(old):
            text = text.ljust(len(old))  # rewritten in place
        self.write(key, text)
        return "stored"

    def apply(self, key: str, op: str, value: bytes) -> None:
        present = key in self.values
        if op in ("get", "gets"):
            self.hits += present
            self.misses += not present
            if op == "gets":
                if present:
                    self.tokens[key] = self.token(key)
                else:
                    self.tokens.pop(key, None)
            return
        if op == "set":
            self.write(key, value)
        elif op == "delete":
            self.values.pop(key, None)
        else:
            outcome = self.conditional(key, op, value, present)
            self.outcomes.setdefault(op, Counter())[outcome] += 1

    def conditional(self, key: str, op: str, value: bytes, present: bool) -> str:
        if op == "cas":
            token = self.tokens.pop(key, None)
            if not present:
                return "not_found"
            if token is None or token != self.token(key):
                return "exists"
        elif (op == "add") == present:  # add of a present key, or anything else of an absent one
            return "not_stored" if op in ("add", "replace", "append", "prepend") else "not_found"
        if op in ("add", "replace", "cas"):
            self.write(key, value)
        elif op == "append":
            self.write(key, self.values[key] + value)
        elif op == "prepend":
            self.write(key, value + self.values[key])
        elif op in ("incr", "decr"):
            return self.delta(key, 1 if op == "incr" else -1)
        return "stored"


def expected(rows: list[tuple[str, str, int, int]], style: str) -> Model:
    buf = ValueBuffer(MAX_TRACE_VALUE, SEED).data
    model = Model(style)
    for key, op, size, _ttl in rows:
        off = zlib.crc32((PREFIX + key).encode()) % ValueBuffer.SPREAD
        model.apply(key, op, buf[off : off + size])
    return model


def test_the_trace_exercises_every_outcome_the_model_knows() -> None:
    """The trace is not vacuous: each op kind occurs and meets each of its outcomes."""
    rows = build_trace(Path("/dev/null"))
    for style in ("memcached", "redis"):
        model = expected(rows, style)
        seen = {op: set(c) for op, c in model.outcomes.items()}
        assert seen["add"] == {"stored", "not_stored"}
        assert seen["cas"] == {"stored", "exists", "not_found"}
        assert seen["incr"] == {"stored", "not_found", "not_numeric"}
        assert seen["decr"] == {"stored", "not_found", "not_numeric"}
        for op in ("replace", "append", "prepend"):
            assert seen[op] == {"stored", "not_stored"}, op
        assert seen["touch"] == {"stored", "not_found"}
        assert model.hits and model.misses


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(
    "target",
    [*sorted(TARGETS), *(pytest.param(t, marks=NATIVE) for t in sorted(NATIVE_TARGETS))],
)
async def test_every_op_of_a_trace_does_what_the_model_says(
    tmp_path: Path, target: str, workers: int
) -> None:
    trace = tmp_path / "every-op.twitter.csv"
    rows = build_trace(trace)
    model = expected(rows, STYLE[target])
    store = Store(tmp_path / "runs.sqlite")
    events = await collect(
        [
            *ALL_TARGETS[target],
            f'workload.trace.path="{trace}"',
            'workload.trace.ops="as-recorded"',
            f'workload.key_prefix="{PREFIX}"',
            f"seed={SEED}",
            f"load.workers={workers}",
            "load.concurrency=6",
            "load.duration=120",
        ],
        store,
    )
    (step,) = finished(events)
    assert step.status == "completed", step.reason
    s = step.stats
    assert s.errors == {}, s.first_errors
    assert s.skipped == {}
    assert (s.hits, s.misses) == (model.hits, model.misses)
    assert s.outcomes == {op: dict(c) for op, c in model.outcomes.items()}
    counts = Counter(op for _, op, _, _ in rows)
    assert {k: h.get_total_count() for k, h in s.hist.items()} == dict(counts)
