"""The default strategy measures the server: the native engine where it is installed and
runs the workload, else the system's Python strategy with one notice saying the client is
then part of the measurement. Real runs against a real redis-server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.results.store import Store
from workbench.sdk.discovery import load_plugin
from workbench.sdk.servers import ServerProcess
from workbench.spec.load import spec_from_data
from workbench.spec.native_binary import binary_path
from workbench.spec.resolve import default_strategy
from workbench.spec.steps import check_spec, load_spec

QUICK = ["--set", "load.warmup=0", "-n", "500", "-c", "2", "-w", "1"]


def run(args: list[str], store: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", "run", *args, "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
    )


def test_native_is_the_default_where_the_engine_runs_the_workload() -> None:
    if binary_path() is None:
        pytest.skip("the native engine is not built")
    for system in ("redis", "memcached", "http"):
        spec = load_spec(None, [f"target.system={system}"])
        strategy, why = default_strategy(load_plugin(system), spec)
        assert (strategy.name, why) == ("native", ""), system
    (step,) = check_spec(load_spec(None, ["target.system=redis"]))
    assert step.spec.strategy.name == "native"  # the step records what it runs
    # The embedded cache has no client to measure: its default is unchanged.
    assert default_strategy(load_plugin("embedded"), load_spec(None, []))[0].name == "direct"


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        (["strategy.options.batch=8"], "strategy.options batch"),
    ],
)
def test_what_the_native_engine_cannot_run_falls_back(overrides: list[str], why: str) -> None:
    if binary_path() is None:
        pytest.skip("the native engine is not built")
    spec = spec_from_data({}, ["target.system=redis", *overrides], "--set")  # unchecked
    strategy, reason = default_strategy(load_plugin("redis"), spec)
    assert strategy.name == "multiplexed" and why in reason


def test_tls_redis_keeps_the_native_default() -> None:
    if binary_path() is None:
        pytest.skip("the native engine is not built")
    spec = spec_from_data(
        {}, ["target.system=redis", "target.options.url=rediss://127.0.0.1:6380/0"], "--set"
    )
    assert default_strategy(load_plugin("redis"), spec) == (
        load_plugin("redis").strategy("native"),
        "",
    )


def test_https_keeps_the_native_default() -> None:
    if binary_path() is None:
        pytest.skip("the native engine is not built")
    spec = spec_from_data(
        {}, ["target.system=http", "target.options.base_url=https://127.0.0.1:8443"], "--set"
    )
    http = load_plugin("http")
    assert default_strategy(http, spec) == (http.strategy("native"), "")


def test_a_run_on_the_native_default_says_no_notice(
    redis_server: ServerProcess, tmp_path: Path
) -> None:
    if binary_path() is None:
        pytest.skip("the native engine is not built")
    store = tmp_path / "runs.sqlite3"
    url = f"redis://{redis_server.host}:{redis_server.port}"
    res = run(["-s", url, *QUICK], store)
    assert res.returncode == 0, res.stderr
    assert "warning:" not in res.stdout
    assert "on redis/native, 2 clients = 2 connections, 1 worker" in res.stdout
    assert Store(store).load("last").steps[0].strategy == "native"


def test_without_the_engine_the_python_client_runs_with_one_notice(
    redis_server: ServerProcess, tmp_path: Path
) -> None:
    store = tmp_path / "runs.sqlite3"
    url = f"redis://{redis_server.host}:{redis_server.port}"
    res = run(["-s", url, *QUICK], store, WORKBENCH_NATIVE=str(tmp_path / "absent"))
    assert res.returncode == 0, res.stderr
    notices = [ln for ln in res.stdout.splitlines() if ln.startswith("warning:")]
    assert notices == [
        "warning: redis: strategy 'multiplexed', because the native engine is not installed: "
        'the client (Python) is part of the measurement (strategy.name = "native" measures '
        "the server alone)"
    ]
    assert "2 clients sharing 1 auto-pipelined connection, 1 worker" in res.stdout
    stored = Store(store).load("last")
    assert stored.steps[0].strategy == "multiplexed"
    assert [n.message for n in stored.notices] == [notices[0].removeprefix("warning: ")]
    # A named strategy is what the person chose: no notice.
    named = run(["-s", url, *QUICK, "--set", "strategy.name=multiplexed"], store)
    assert "warning:" not in named.stdout
