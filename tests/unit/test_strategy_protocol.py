"""A strategy declares the wire protocol it speaks (`Strategy.protocol`): a name the native
engine knows, a function of the resolved options, or None for the plugin's own. Every
built-in native strategy declares one, and a resolved step says which one it speaks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from workbench.sdk import (
    HTTP1,
    MEMCACHE_META,
    MEMCACHE_TEXT,
    RESP,
    CacheSystem,
    Endpoints,
    PluginError,
    Strategy,
    load_plugin,
    runs_in_native_engine,
)
from workbench.sdk.adapter import check_declaration
from workbench.spec.model import Spec, StrategySpec, TargetSpec
from workbench.spec.resolve import resolve_step


def system_with(strategy: Strategy) -> CacheSystem:
    # A native strategy needs its system to say where its servers are (`endpoints`).
    def endpoints(options: Mapping[str, Any]) -> Endpoints:
        return Endpoints(servers=(("127.0.0.1", 6379),), origin="target.options.url")

    return CacheSystem("toy", "a toy", (strategy,), strategy.name, endpoints=endpoints)


def native(**changes: Any) -> Strategy:
    return replace(Strategy("native", "native", runs_in_native_engine, engine="native"), **changes)


def test_a_native_strategy_must_declare_its_protocol() -> None:
    with pytest.raises(PluginError, match="'native' runs in the native engine but declares no"):
        check_declaration(system_with(native()), "toy")
    assert check_declaration(system_with(native(protocol=RESP)), "toy")


def test_an_unknown_protocol_is_refused_with_the_known_ones() -> None:
    with pytest.raises(PluginError, match=r"'native': unknown wire protocol 'resp3'.*resp, "):
        check_declaration(system_with(native(protocol="resp3")), "toy")
    with pytest.raises(PluginError, match="protocol must be a protocol's name or a function"):
        check_declaration(system_with(native(protocol=3)), "toy")


def test_a_protocol_chosen_by_the_options_is_checked_when_chosen() -> None:
    def by_option(system: Mapping[str, Any], strategy: Mapping[str, Any]) -> str:
        return str(strategy["speak"])

    s = native(protocol=by_option)
    assert s.protocol_for({}, {"speak": HTTP1}) == HTTP1
    with pytest.raises(PluginError, match="unknown wire protocol 'smtp'"):
        s.protocol_for({}, {"speak": "smtp"})


def test_a_python_strategy_speaks_its_own_protocol_by_default() -> None:
    assert Strategy("own", "own", runs_in_native_engine).protocol_for({}, {}) is None


def resolved_protocol(system: str, strategy: str, **options: Any) -> str | None:
    spec = Spec(
        target=TargetSpec(system=system),
        strategy=StrategySpec(name=strategy, options=options),
    )
    return resolve_step(spec).protocol


@pytest.mark.parametrize(
    ("system", "options", "expected"),
    [
        ("redis", {}, RESP),
        ("http", {}, HTTP1),
        ("memcached", {}, MEMCACHE_TEXT),
        ("memcached", {"protocol": "meta"}, MEMCACHE_META),
    ],
)
def test_every_builtin_native_strategy_resolves_to_its_protocol(
    system: str, options: dict[str, Any], expected: str
) -> None:
    assert resolved_protocol(system, "native", **options) == expected


def test_the_step_frame_carries_the_protocol() -> None:
    spec = Spec(target=TargetSpec(system="memcached"), strategy=StrategySpec(name="native"))
    frame = resolve_step(spec).to_dict()
    assert frame["protocol"] == MEMCACHE_TEXT and frame["engine"] == "native"
    assert resolved_protocol("embedded", "") is None


def test_every_builtin_native_strategy_declares_a_protocol() -> None:
    for name in ("redis", "memcached", "http", "umem", "embedded"):
        for s in load_plugin(name).strategies:
            assert (s.engine == "native") <= (s.protocol is not None), (name, s.name)
