"""Open loop at load.rate, and the HTTP strategy through the engine against the
reference key-value store."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from native_workers import intervals, run_worker, spec, status, total

from workbench.results.metrics import decode
from workbench.sdk.discovery import load_plugin
from workbench.sdk.servers import ServerProcess


@pytest.mark.redis
def test_open_loop_offers_the_rate_and_records_send_lag(redis_server: ServerProcess) -> None:
    common = {
        "target.system": "redis",
        "target.options": {"url": redis_server.target_options["url"]},
        "strategy.name": "native",
        "load.concurrency": 2,
        "load.warmup": 0.0,
        "load.duration": 1.0,
        "load.interval": 0.5,
        "workload.mix": {"get": 1.0},
    }
    frames = run_worker("native", spec(**common, **{"load.rate": 2000.0}))
    assert status(frames) == "completed"
    got = intervals(frames)
    offered = sum(f["stats"]["offered"] for f in got)
    # 2,000 ops/s for 1 s: the schedule offers exactly that, whether or not a client that
    # fell behind (a busy machine) could issue all of it in time.
    assert offered == 2000
    ops = total(frames).ops
    assert 0 < ops <= offered
    lags = sum(decode(f["stats"]["send_lag"]).get_total_count() for f in got)
    assert lags == ops  # one send lag per issued op, latency from the intended start
    assert total(frames).hist["get"].get_min_value() >= 1
    closed = run_worker("native", spec(**common))
    for f in intervals(closed):
        assert f["stats"]["offered"] == 0 and f["stats"]["send_lag"] == ""


@pytest.fixture(scope="module")
def kv_store() -> Iterator[ServerProcess]:
    system = load_plugin("http")
    assert system.server is not None
    server = system.server.start(system.server.options.resolve({"kind": "kv-store"}, "x"))
    try:
        yield server  # type: ignore[misc]
    finally:
        server.stop()


def _http(server: Any, **more: Any) -> Any:
    return spec(
        **{
            "target.system": "http",
            "target.options": dict(server.target_options),
            "strategy.name": "native",
            "load.concurrency": 4,
            "load.warmup": 0.0,
            "load.duration": None,
            "load.interval": 5.0,
            "workload.key_prefix": f"h{uuid.uuid4().hex[:6]}:",
            **more,
        }
    )


def test_http_templates_get_set_delete_and_misses(kv_store: ServerProcess) -> None:
    prefilled = run_worker(
        "native",
        _http(kv_store, **{"workload.prefill": True, "workload.keys": 200,
                           "workload.mix": {"get": 1.0}, "load.ops": 400,
                           "workload.value_size": "uniform(0,3000)"}),
    )  # fmt: skip
    got = total(prefilled)
    assert status(prefilled) == "completed"
    assert (got.hits, got.misses, got.error_count) == (400, 0, 0)
    mixed = run_worker(
        "native",
        _http(kv_store, **{"workload.keys": 100, "load.ops": 2000,
                           "workload.mix": {"get": 0.5, "set": 0.3, "delete": 0.2}}),
    )  # fmt: skip
    got = total(mixed)
    assert got.ops == 2000 and got.error_count == 0
    assert got.hits > 0 and got.misses > 0
    assert set(got.hist) == {"get", "set", "delete"}


def test_http_without_a_delete_template_counts_unsupported(kv_store: ServerProcess) -> None:
    options = {**kv_store.target_options, "delete": ""}
    frames = run_worker(
        "native",
        _http(
            kv_store, **{"target.options": options, "workload.mix": {"delete": 1.0}, "load.ops": 50}
        ),
    )
    got = total(frames)
    assert got.errors == {"unsupported": 50}
    assert "delete template" in got.first_errors["unsupported"]
