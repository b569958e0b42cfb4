"""Python compiles, the native engine executes: form by form, what the compiled step order
makes the native engine draw is what the Python engine draws from the same text, exactly
where the draw is deterministic (fixed sizes and TTLs with their units, the size and TTL
a given uniform draw stands for, sequential keys, key placement over several memcached
servers). The order's version and its remote decision are checked here too."""

from __future__ import annotations

import json
import os
import random
import stat
import struct
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from native_workers import order, run_worker, spec
from workbench_memcached.protocol import Rendezvous, address_text, parse_servers

from workbench.engine.client_plans import ClientPlan, Workload
from workbench.engine.frames import StepOrder
from workbench.engine.native_order import compile_order
from workbench.sdk.errors import SpecError
from workbench.spec.native_binary import ORDER_VERSION, binary_path, require_binary
from workbench.spec.resolve import resolve_step
from workbench.workload.forms import parse_mix, parse_ttl, parse_value_size
from workbench.workload.generator import ValueBuffer, size_chooser, ttl_chooser

N = 2000


def probe(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    """The answers of one `workbench-native --probe` to `messages`."""
    body = b"".join(
        struct.pack(">I", len(b)) + b for b in (json.dumps(m).encode() for m in messages)
    )
    done = subprocess.run(
        [str(binary_path()), "--probe"], input=body, capture_output=True, timeout=60, check=True
    )
    out, pos = [], 0
    while pos < len(done.stdout):
        (size,) = struct.unpack_from(">I", done.stdout, pos)
        out.append(json.loads(done.stdout[pos + 4 : pos + 4 + size]))
        pos += 4 + size
    return out


def native_stream(**changes: Any) -> dict[str, list[Any]]:
    s = spec(**{"target.system": "redis", "strategy.name": "native", **changes})
    (answer,) = probe({"op": "stream", "order": order(s), "client": 3, "count": N})
    return answer


def python_stream(**changes: Any) -> dict[str, list[Any]]:
    s = spec(**{"target.system": "redis", "strategy.name": "native", **changes})
    wl = Workload(s, 0, 1, True, ValueBuffer(16, s.seed))
    stream = wl.stream(ClientPlan(3, parse_mix(s.workload.mix), None))
    ops = [stream.next() for _ in range(N)]
    return {"keys": [o[1] for o in ops], "sizes": [o[3] for o in ops], "ttls": [o[4] for o in ops]}


class Draws(random.Random):
    """A generator that hands out the given uniform draws, for both engines to map."""

    def __init__(self, uniforms: list[float]) -> None:
        super().__init__(0)
        self.left = list(uniforms)

    def random(self) -> float:
        return self.left.pop(0)


UNIFORMS = [i / 997 for i in range(997)] + [0.0, 0.5, 0.999999999, 1 - 2**-53]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("none", None), ("fixed(2s)", 2.0), ("60", 60.0), ("500ms", 0.5), ("fixed(1m)", 60.0)],
)
def test_fixed_and_absent_ttls_are_pythons_exactly(text: str, expected: float | None) -> None:
    native = native_stream(**{"workload.ttl": text})["ttls"]
    assert native == python_stream(**{"workload.ttl": text})["ttls"]
    assert set(native) == {expected}


@pytest.mark.parametrize("text", ["range(1,5)", "range(250ms,2s)", "range(3,3)"])
def test_a_ttl_range_maps_each_draw_as_python_does(text: str) -> None:
    s = spec(**{"target.system": "redis", "strategy.name": "native", "workload.ttl": text})
    (answer,) = probe({"op": "map", "order": order(s), "uniforms": UNIFORMS})
    python = ttl_chooser(parse_ttl(text), Draws(UNIFORMS))
    assert answer["ttls"] == [python() for _ in UNIFORMS]
    lo, hi = parse_ttl(text).params
    drawn = native_stream(**{"workload.ttl": text})["ttls"]
    assert lo <= min(drawn) and max(drawn) <= hi


@pytest.mark.parametrize(
    ("text", "size"), [("100", 100), ("4KiB", 4096), ("fixed(1MB)", 1024**2), ("fixed(3kb)", 3072)]
)
def test_fixed_sizes_with_units_are_pythons_exactly(text: str, size: int) -> None:
    native = native_stream(**{"workload.value_size": text})["sizes"]
    assert native == python_stream(**{"workload.value_size": text})["sizes"] == [size] * N


@pytest.mark.parametrize(
    "text", ["weighted(100:9,10KiB:1)", "weighted(1:1,2:1,3:2)", "weighted(64:0.5,4KiB:0.25)"]
)
def test_weighted_sizes_map_each_draw_as_python_does(text: str) -> None:
    s = spec(**{"target.system": "redis", "strategy.name": "native", "workload.value_size": text})
    (answer,) = probe({"op": "map", "order": order(s), "uniforms": UNIFORMS})
    python = size_chooser(parse_value_size(text), Draws(UNIFORMS))
    assert answer["sizes"] == [python() for _ in UNIFORMS]


@pytest.mark.parametrize("text", ["uniform(8,64)", "uniform(1KiB,1KiB)", "uniform(0,3)"])
def test_uniform_sizes_cover_the_same_range(text: str) -> None:
    # Python draws these with randint (whole bits, not a float), so the draws differ; the
    # range, both ends included, is the same.
    native = native_stream(**{"workload.value_size": text})["sizes"]
    python = python_stream(**{"workload.value_size": text})["sizes"]
    assert set(native) == set(python)
    lo, hi = (int(p) for p in parse_value_size(text).params)
    assert set(native) == set(range(lo, hi + 1))


def test_sequential_keys_are_pythons_exactly() -> None:
    changes = {"workload.key_distribution": "sequential", "workload.keys": 500}
    assert native_stream(**changes)["keys"] == python_stream(**changes)["keys"]


@pytest.mark.parametrize(
    "servers",
    [
        ["127.0.0.1:11211", "127.0.0.1:11212", "127.0.0.1:11213"],
        ["[::1]:11211", "127.0.0.1:11300", "localhost:11400", "127.0.0.1"],
    ],
)
def test_keys_land_on_the_memcached_server_python_picks(servers: list[str]) -> None:
    s = spec(
        **{
            "target.system": "memcached",
            "target.options": {"servers": servers},
            "strategy.name": "native",
            "workload.key_length": 16,
        }
    )
    indexes = list(range(0, 200_000, 37))
    (answer,) = probe({"op": "place", "order": order(s), "indexes": indexes})
    hasher = Rendezvous([address_text(a) for a in parse_servers(servers)])
    wl = s.workload
    keys = [
        (f"{wl.key_prefix}%0{wl.key_length - len(wl.key_prefix)}d" % i).encode() for i in indexes
    ]
    assert answer["servers"] == [hasher.index(k) for k in keys]
    assert set(answer["servers"]) == set(range(len(servers)))


def _order_for(target: dict[str, Any], allow_remote: bool) -> dict[str, Any]:
    s = spec(
        **{
            "target.system": "redis",
            "target.options": target,
            "target.allow_remote": allow_remote,
            "strategy.name": "native",
        }
    )
    return order(s)


def test_a_remote_target_is_loaded_only_when_the_order_allows_it() -> None:
    # 192.0.2.0/24 is TEST-NET-1: the probe resolves the address; nothing is connected.
    remote = {"url": "redis://192.0.2.1:6379/0"}
    refused, allowed = probe(
        {"op": "target", "order": _order_for(remote, False)},
        {"op": "target", "order": _order_for(remote, True)},
    )
    assert "not a loopback address" in refused["error"]["message"]
    assert allowed == {"servers": ["192.0.2.1:6379"]}


def test_a_worker_refuses_a_remote_target_before_connecting() -> None:
    s = spec(
        **{
            "target.system": "redis",
            "target.options": {"url": "redis://192.0.2.1:6379/0"},
            "strategy.name": "native",
            "load.duration": 1.0,
        }
    )
    frames = run_worker("native", s, timeout=30)
    errors = [f for f in frames if f["type"] == "error"]
    assert [e["kind"] for e in errors] == ["target"]
    assert "not a loopback address" in errors[0]["message"]
    assert not [f for f in frames if f["type"] == "armed"]  # it never got as far as connecting


def test_a_step_order_of_another_version_is_one_error_line() -> None:
    s = spec(**{"target.system": "redis", "strategy.name": "native"})
    stale = order(s)
    stale["native"]["version"] = ORDER_VERSION + 1
    body = json.dumps(stale).encode()
    done = subprocess.run(
        [str(binary_path())],
        input=struct.pack(">I", len(body)) + body,
        capture_output=True,
        timeout=30,
        check=True,
    )
    frames, pos = [], 0
    while pos < len(done.stdout):
        (size,) = struct.unpack_from(">I", done.stdout, pos)
        frames.append(json.loads(done.stdout[pos + 4 : pos + 4 + size]))
        pos += 4 + size
    errors = [f for f in frames if f["type"] == "error"]
    assert len(errors) == 1
    message = errors[0]["message"]
    assert "\n" not in message
    assert f"version {ORDER_VERSION + 1}" in message and f"reads version {ORDER_VERSION}" in message
    assert frames[-1] == {"type": "step_done", "status": "failed"}


def _stale_binary(tmp_path: Path, says: str) -> Path:
    fake = tmp_path / "workbench-native"
    fake.write_text(f"#!/bin/sh\necho {says}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    return fake


def test_the_spec_check_names_a_binary_of_another_order_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _stale_binary(tmp_path, str(ORDER_VERSION + 1))
    monkeypatch.setenv("WORKBENCH_NATIVE", str(fake))
    with pytest.raises(SpecError) as err:
        require_binary()
    assert err.value.where == "strategy.name"
    assert f"reads step orders of version {ORDER_VERSION + 1}" in err.value.message
    assert "./dev setup" in err.value.message
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "workbench.cli.main",
            "run",
            "--set",
            "target.system=redis",
            "--set",
            "strategy.name=native",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "WORKBENCH_NATIVE": str(fake), "WORKBENCH_STORE": str(tmp_path / "s")},
        timeout=60,
        check=False,
    )
    assert res.returncode == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "strategy.name" in lines[0] and "version" in lines[0], res.stderr


def test_the_compiled_order_carries_every_number_the_engine_needs() -> None:
    s = spec(
        **{
            "target.system": "memcached",
            "target.options": {"servers": ["127.0.0.1:11211", "127.0.0.1:11212"]},
            "strategy.name": "native",
            "load.concurrency": 4,
            "load.rate": 1000.0,
            "load.ops": 1001,
            "workload.value_size": "weighted(100:9,10KiB:1)",
            "workload.key_distribution": "hotcold(0.8,0.25)",
            "workload.ttl": "range(1,5)",
        }
    )
    resolved = resolve_step(replace(s, strategy=replace(s.strategy, options={"pipeline": 2})))
    one, two = (compile_order(StepOrder.for_worker(s, resolved, 2, w)) for w in (0, 1))
    assert [c["id"] for c in one["clients"]] == [0, 2]
    assert [c["offset_ns"] for c in two["clients"]] == [1_000_000, 3_000_000]
    assert {c["period_ns"] for c in one["clients"]} == {4_000_000}
    assert one["phases"]["ops"] + two["phases"]["ops"] == 1000  # 500.5 each, half to even
    assert one["keys"]["distribution"] == {
        "kind": "hotcold",
        "access": 0.8,
        "hot": 2500,
        "cold": 7500,
    }
    assert one["value_size"] == {
        "kind": "weighted",
        "sizes": [100, 10240],
        "cum_weights": [9.0, 10.0],
    }
    assert one["ttl"] == {"kind": "range", "min": 1.0, "max": 5.0}
    assert one["target"]["placement"] == Rendezvous(["127.0.0.1:11211", "127.0.0.1:11212"]).seeds
    assert one["target"]["servers"] == [["127.0.0.1", 11211], ["127.0.0.1", 11212]]
    assert one["target"]["protocol"] == "memcache-text" and "system" not in one
    assert one["pipeline"] == 2 and one["timeout_ns"] == 5_000_000_000
