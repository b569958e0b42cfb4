"""One resolved step: what a step runs, decided once, carried to the workers and read back."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from workbench.engine import limits
from workbench.engine.frames import STEP, StepOrder
from workbench.engine.limits import check_limits
from workbench.sdk.errors import SpecError
from workbench.sdk.remote import ALLOW_REMOTE
from workbench.spec.native_binary import binary_path
from workbench.spec.resolve import ResolvedStep, resolve_step
from workbench.spec.steps import check_spec, load_spec


def _resolved(*sets: str) -> ResolvedStep:
    (step,) = check_spec(load_spec(None, ["load.workers=1", *sets]))
    assert step.resolved is not None
    return step.resolved


@pytest.mark.parametrize(
    ("sets", "connections"),
    [
        (
            ["target.system=redis", "strategy.name=multiplexed", "load.concurrency=10"],
            1,
        ),  # one per worker
        (["target.system=redis", "strategy.name=multiplexed-k", "load.concurrency=10"], 4),
        (["target.system=redis", "strategy.name=sync-pool", "load.concurrency=10"], 10),
        (["target.system=redis", "strategy.name=sync-pool", "load.concurrency=40"], 16),
        (["target.system=redis", "strategy.name=sync-per-client", "load.concurrency=7"], 7),
        (["target.system=redis", "strategy.name=pipeline", "load.concurrency=50"], 1),
        (
            ["target.system=http", "strategy.name=keep-alive", "load.concurrency=9"],
            9,
        ),  # pool_size 0: grows
        (
            [
                "target.system=http",
                "strategy.name=keep-alive",
                "strategy.options.pool_size=3",
                "load.concurrency=9",
            ],
            3,
        ),
        (["target.system=embedded", "load.concurrency=9"], 0),  # the cache is in the worker
        (
            [
                "target.system=memcached",
                "strategy.name=client-per-client",
                'target.options.servers=["127.0.0.1:1","127.0.0.1:2"]',
                "load.concurrency=3",
            ],
            6,  # one per client on each server
        ),
    ],
)
def test_strategies_declare_the_connections_a_worker_opens(
    sets: list[str], connections: int
) -> None:
    assert _resolved(*sets).connections == connections


def test_a_step_resolves_its_default_strategy_options_and_engine() -> None:
    r = _resolved("target.system=redis", "strategy.name=native", "strategy.options.pipeline=4")
    assert (r.system.name, r.strategy.name, r.engine) == ("redis", "native", "native")
    assert r.strategy_options == {"pipeline": 4}
    assert r.system_options["url"] == "redis://127.0.0.1:6379/0"
    assert _resolved("target.system=embedded").strategy.name == "direct"
    # With no strategy named: the native engine where it is installed (measures the server)
    default = "native" if binary_path() is not None else "multiplexed"
    assert _resolved("target.system=memcached").strategy.name == default


def test_the_remote_decision_travels_in_the_order_and_reads_back_the_same() -> None:
    r = _resolved(
        "target.system=redis",
        "target.options.url=redis://192.0.2.10:6379/0",
        "target.allow_remote=true",
    )
    assert r.allow_remote and r.connect_options[ALLOW_REMOTE] is True
    spec = load_spec(None, ["target.system=redis", "target.allow_remote=true"])
    frame = StepOrder.for_worker(spec, r, workers=2, worker=1).frame()
    assert frame["type"] == STEP and (frame["workers"], frame["worker"]) == (2, 1)
    # The native engine reads these keys of the order as before.
    assert frame["system_options"][ALLOW_REMOTE] is True
    assert frame["strategy_options"] == r.strategy_options
    back = StepOrder.read(frame)
    assert back.resolved.system is r.system and back.resolved.strategy is r.strategy
    assert back.resolved.allow_remote and back.resolved.connections == r.connections


def test_a_per_worker_capacity_is_divided_in_each_order() -> None:
    r = _resolved("target.system=embedded", "target.options.max_entries=10")
    shares = [r.for_worker(3, i).system_options["max_entries"] for i in range(3)]
    assert shares == [4, 3, 3]
    spec = load_spec(None, ["target.system=embedded"])
    read = StepOrder.read(StepOrder.for_worker(spec, r, 3, 0).frame())
    assert read.resolved.system_options["max_entries"] == 4  # divided once, not again


def test_a_remote_target_without_the_opt_in_is_refused_when_resolved() -> None:
    spec = load_spec(None, ["target.system=redis"])
    remote = replace(spec, target=replace(spec.target, options={"url": "redis://192.0.2.10/0"}))
    with pytest.raises(SpecError, match="not a loopback address"):
        resolve_step(remote)


def test_the_limits_check_reads_the_declared_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "_raise_soft_file_limit", lambda: 100)
    few = check_spec(
        load_spec(
            None, ["target.system=redis", "strategy.name=multiplexed", "load.concurrency=500"]
        )
    )
    check_limits(few)  # multiplexed: one connection, whatever the clients
    many = check_spec(
        load_spec(
            None,
            [
                "target.system=redis",
                "strategy.name=sync-per-client",
                "load.concurrency=500",
                "load.workers=1",
            ],
        )
    )
    with pytest.raises(SpecError, match="open files"):
        check_limits(many)


def _native_cluster(*sets: str) -> list[Any]:
    return check_spec(
        load_spec(
            None,
            [
                "target.system=redis",
                "strategy.name=native",
                "load.concurrency=30",
                "load.workers=1",
                *sets,
            ],
        )
    )


def test_the_limits_check_counts_a_connection_per_cluster_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 30 native clients: 30 + 64 files for one server, fits under 120; against a cluster
    # each client opens one per node.
    monkeypatch.setattr(limits, "_raise_soft_file_limit", lambda: 120)
    check_limits(_native_cluster())
    with pytest.raises(SpecError, match=r"about 154 open files \(.*counting 3: the fewest"):
        check_limits(_native_cluster("target.options.cluster=true"))  # external: 3 counted
    monkeypatch.setattr(limits, "_raise_soft_file_limit", lambda: 200)
    check_limits(_native_cluster("target.options.cluster=true"))
    managed = ["target.managed=true", "target.server.cluster=true", "target.server.cluster_nodes=5"]
    with pytest.raises(SpecError, match=r"about 214 open files \(.*managed cluster's 5 prim"):
        check_limits(_native_cluster(*managed))


def test_a_spec_loaded_then_run_is_checked_and_resolved_once() -> None:
    spec = load_spec(None, ["target.system=redis", "load.concurrency=[1,2]"])  # checks it
    first = check_spec(spec)  # as session.run does: the same steps, not resolved again
    again = check_spec(spec)
    assert [s.resolved for s in first] == [s.resolved for s in again]
    assert all(a.resolved is b.resolved for a, b in zip(first, again, strict=True))
    other = check_spec(replace(spec, seed=spec.seed + 1))  # another spec: checked afresh
    assert other[0].resolved is not first[0].resolved
