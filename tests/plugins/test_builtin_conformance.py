"""The conformance kit over every discovered plugin and strategy, against real servers."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any

import pytest
from umem_support import umem_source
from valkey_support import valkey_source

from workbench.conformance import check_plugin, failures
from workbench.sdk.adapter import CacheSystem, ManagedServer
from workbench.sdk.discovery import GROUP, load_plugin, plugin_statuses

# Live targets: the session's servers where conftest starts one, else the plugin's launcher.
FIXTURES = {"redis": "redis_server", "memcached": "memcached_server"}
# Launcher options for the kit: the http plugin's key-value store stores what it is given;
# umem-cache and Valkey are built from the vendored source (the tests skip, saying why, where
# they cannot).
LAUNCH: dict[str, Callable[[], dict[str, Any]]] = {
    "http": lambda: {"kind": "kv-store"},
    "umem": lambda: {"source": str(umem_source())},
    "valkey": lambda: {"source": str(valkey_source())},
}
# Strategies that need a server of their own kind: the cluster strategies, a managed cluster.
STRATEGY_LAUNCH: dict[tuple[str, str], dict[str, Any]] = {
    ("redis", "cluster"): {"cluster": True},
    ("valkey", "cluster"): {"cluster": True},
}
BUILTINS = sorted(
    ep.name for ep in entry_points(group=GROUP) if ep.dist and ep.dist.name == "cache-workbench"
)


def _cases(with_launcher_only: bool = False) -> Iterator[Any]:
    for row in plugin_statuses():
        if row.system is None:
            yield pytest.param(row.name, None, id=f"{row.name}-broken")
            continue
        if with_launcher_only and row.system.server is None:
            continue
        for s in row.system.strategies:
            yield pytest.param(row.name, s.name, id=f"{row.name}-{s.name}")


@pytest.fixture(scope="session")
def launched() -> Iterator[Callable[[CacheSystem], ManagedServer]]:
    """Servers started through a plugin's own launcher, one per plugin, stopped at the end."""
    servers: dict[str, ManagedServer] = {}

    def get(system: CacheSystem, strategy: str = "") -> ManagedServer:
        key = (
            f"{system.name}-{strategy}"
            if (system.name, strategy) in STRATEGY_LAUNCH
            else system.name
        )
        if key not in servers:
            assert system.server is not None
            given = LAUNCH[system.name]() if system.name in LAUNCH else {}
            given = {**given, **STRATEGY_LAUNCH.get((system.name, strategy), {})}
            opts = system.server.options.resolve(given, "target.server")
            servers[key] = system.server.start(opts)
        return servers[key]

    yield get
    for server in servers.values():
        with contextlib.suppress(Exception):
            server.stop()


def _system(name: str) -> CacheSystem:
    row = next(r for r in plugin_statuses() if r.name == name)
    if row.system is None:
        pytest.skip(f"plugin {name} is broken, so it cannot be checked: {row.error}")
    return row.system


@pytest.mark.parametrize("name", BUILTINS)
def test_every_builtin_plugin_loads(name: str) -> None:
    assert load_plugin(name).name == name


@pytest.mark.parametrize(("name", "strategy"), list(_cases()))
def test_the_plugin_passes_the_kit_against_a_live_target(
    name: str, strategy: str, request: pytest.FixtureRequest, launched: Any
) -> None:
    system = _system(name)
    if (name, strategy) in STRATEGY_LAUNCH:
        settings = dict(launched(system, strategy).target_options)
    elif name in FIXTURES:
        settings = dict(request.getfixturevalue(FIXTURES[name]).target_options)
    elif system.server is not None:
        settings = dict(launched(system).target_options)
    elif not system.shared_state:
        settings = {}  # in-process: nothing to reach
    else:
        pytest.skip(f"{name} declares no server launcher and the tests start no server for it")
    results = check_plugin(system, strategy, settings)
    assert not failures(results), "\n" + "\n".join(r.line() for r in results)


@pytest.mark.parametrize(("name", "strategy"), list(_cases(with_launcher_only=True)))
def test_errors_are_classified_when_the_server_goes_away(name: str, strategy: str) -> None:
    system = _system(name)
    given = LAUNCH[name]() if name in LAUNCH else {}
    given = {**given, **STRATEGY_LAUNCH.get((name, strategy), {})}
    settings = {f"server.{k}": v for k, v in given.items()}
    (result,) = check_plugin(system, strategy, settings, managed=True, only=["server-gone"])
    assert result.status == "pass", result.line()


# The kit over production-shaped targets: every strategy of a system against a managed TLS
# server (a throw-away CA), the native engine against a managed Redis Cluster, and both
# cluster clients against a TLS cluster.
VARIANTS = {
    "tls": {"tls": True},
    "cluster": {"cluster": True},
    "tls-cluster": {"cluster": True, "tls": True},
}


def _variant_cases() -> Iterator[Any]:
    for name in ("redis", "memcached"):
        for s in load_plugin(name).strategies:
            if s.name != "cluster":
                yield pytest.param(name, s.name, "tls", id=f"{name}-{s.name}-tls")
    yield pytest.param("redis", "native", "cluster", id="redis-native-cluster")
    for strategy in ("native", "cluster"):
        yield pytest.param("redis", strategy, "tls-cluster", id=f"redis-{strategy}-tls-cluster")


@pytest.fixture(scope="session")
def variant_servers() -> Iterator[Callable[[CacheSystem, str], ManagedServer]]:
    servers: dict[tuple[str, str], ManagedServer] = {}

    def get(system: CacheSystem, variant: str) -> ManagedServer:
        key = (system.name, variant)
        if key not in servers:
            assert system.server is not None
            opts = system.server.options.resolve(VARIANTS[variant], "target.server")
            servers[key] = system.server.start(opts)
        return servers[key]

    yield get
    for server in servers.values():
        with contextlib.suppress(Exception):
            server.stop()


@pytest.mark.parametrize(("name", "strategy", "variant"), list(_variant_cases()))
def test_the_plugin_passes_the_kit_over_tls_and_cluster_targets(
    name: str, strategy: str, variant: str, variant_servers: Any
) -> None:
    system = _system(name)
    settings = dict(variant_servers(system, variant).target_options)
    # The concurrency check opens its clients' TLS connections at once, and a server short
    # of CPU (the parallel pass, a loaded machine) can take seconds over their handshakes:
    # what is checked here is the strategy over TLS, not how fast the machine connects.
    settings["connect_timeout"] = 30.0
    results = check_plugin(system, strategy, settings)
    assert not failures(results), "\n" + "\n".join(r.line() for r in results)
