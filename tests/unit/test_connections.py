"""How clients map to connections, said the same way in the step line, the TUI and reports."""

from __future__ import annotations

import pytest

from workbench.engine.connections import describe


@pytest.mark.parametrize(
    ("system", "strategy", "options", "clients", "workers", "target", "expected"),
    [
        ("redis", "native", {"pipeline": 16}, 16, 1, {},
         "16 clients = 16 connections x 16 in flight, 1 worker"),
        ("redis", "native", {"pipeline": 1}, 4, 2, {}, "4 clients = 4 connections, 2 workers"),
        ("redis", "multiplexed", {}, 100, 2, {},
         "100 clients sharing 2 auto-pipelined connections, 2 workers"),
        ("redis", "multiplexed-k", {"connections": 4}, 100, 2, {},
         "100 clients sharing 8 auto-pipelined connections, 2 workers"),
        ("redis", "async-pool", {"pool_size": 8}, 64, 2, {},
         "64 clients sharing a pool of 16 connections, 2 workers"),
        ("redis", "pipeline", {"batch": 16}, 32, 1, {},
         "32 clients sharing 1 connection, pipelines of up to 16, 1 worker"),
        ("memcached", "native", {"pipeline": 1}, 8, 1, {"servers": ["a:1", "b:2"]},
         "8 clients = 16 connections, 1 worker"),
        ("redis", "native", {"pipeline": 4}, 16, 1, {"cluster": True},
         "16 clients = 16 connections per cluster node x 4 in flight, 1 worker"),
        ("redis", "cluster", {}, 8, 2, {"cluster": True},
         "8 clients = 8 connections per cluster node, 2 workers"),
        ("embedded", "direct", {}, 1, 1, {}, "1 client in-process, 1 worker"),
    ],
)  # fmt: skip
def test_the_connection_model_in_one_sentence(
    system: str,
    strategy: str,
    options: dict[str, object],
    clients: int,
    workers: int,
    target: dict[str, object],
    expected: str,
) -> None:
    assert describe(system, strategy, options, clients, workers, target) == expected


def test_an_unknown_system_says_nothing_rather_than_guess() -> None:
    assert describe("gone", "x", {}, 4, 1) == ""
