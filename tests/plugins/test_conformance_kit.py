"""The kit itself: it passes a correct adapter and catches each kind of wrong one."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import pytest

from workbench.conformance import CHECKS, check_plugin, failures, split_settings, targets
from workbench.sdk.adapter import CacheSystem, Strategy
from workbench.sdk.errors import PluginError, SpecError
from workbench.sdk.options import Option, OptionSet


class Dict:
    """A small correct in-memory cache for the kit to pass."""

    def __init__(self) -> None:
        self.data: dict[bytes, tuple[bytes, float]] = {}

    def get(self, key: bytes) -> bytes | None:
        value, expires = self.data.get(key, (None, 0.0))
        if value is not None and expires and expires <= time.monotonic():
            del self.data[key]
            return None
        return value

    def set(self, key: bytes, value: Any, ttl: float | None) -> None:
        self.data[key] = (bytes(value), time.monotonic() + ttl if ttl else 0.0)

    def delete(self, key: bytes) -> bool:
        return self.data.pop(key, None) is not None


class Client:
    def __init__(self, d: Dict) -> None:
        self.d = d

    async def get(self, key: bytes) -> bytes | None:
        return self.d.get(key)

    async def set(self, key: bytes, value: Any, ttl: float | None) -> None:
        self.d.set(key, value, ttl)

    async def delete(self, key: bytes) -> bool:
        return self.d.delete(key)

    async def close(self) -> None:
        return None


class Conn:
    def __init__(self, client_type: type = Client) -> None:
        self.d = Dict()
        self.client_type = client_type

    async def client(self) -> Any:
        return self.client_type(self.d)

    async def server_stats(self) -> dict[str, Any]:
        return {"curr_items": len(self.d.data)}

    async def close(self) -> None:
        return None


def system(client_type: type = Client, conn_type: type = Conn, **strategy: Any) -> CacheSystem:
    async def connect(sys_opts: dict[str, Any], strat_opts: dict[str, Any]) -> Any:
        return conn_type(client_type)

    return CacheSystem(
        name="fake",
        description="a fake cache for the kit's own tests",
        options=OptionSet((Option("size", "int", 10, "entries", minimum=1),)),
        strategies=(Strategy("s", "the only strategy", connect, **strategy),),
        default_strategy="s",
        shared_state=False,
    )


def outcome(results: list[Any]) -> dict[str, str]:
    return {r.name: r.status for r in results}


FAST = ("declaration", "options", "connect", "miss", "round-trip", "delete", "concurrency")


def test_a_correct_adapter_passes_every_check() -> None:
    results = check_plugin(system())
    assert not failures(results), failures(results)
    assert [r.name for r in results] == list(CHECKS)
    assert outcome(results)["pubsub"] == "skip" and outcome(results)["server-gone"] == "skip"
    assert all(r.reason for r in results)


def test_a_miss_reported_as_empty_bytes_fails() -> None:
    class EmptyMiss(Client):
        async def get(self, key: bytes) -> bytes | None:
            return self.d.get(key) or b""

    out = check_plugin(system(EmptyMiss), only=["miss"])
    assert out[0].failed and "not None" in out[0].reason


def test_a_value_mangled_on_the_way_fails_round_trip() -> None:
    class Strips(Client):
        async def set(self, key: bytes, value: Any, ttl: float | None) -> None:
            self.d.set(key, bytes(value).rstrip(b"\r\n"), ttl)

    (r,) = check_plugin(system(Strips), only=["round-trip"])
    assert r.failed and "read back" in r.reason


def test_a_memoryview_value_kept_as_is_fails_round_trip() -> None:
    class KeepsView(Client):
        async def set(self, key: bytes, value: Any, ttl: float | None) -> None:
            self.d.data[key] = (value, 0.0)  # type: ignore[assignment]

    (r,) = check_plugin(system(KeepsView), only=["round-trip"])
    assert r.failed and "memoryview" in r.reason


def test_an_ignored_ttl_fails_and_the_check_is_bounded() -> None:
    class NoTtl(Client):
        async def set(self, key: bytes, value: Any, ttl: float | None) -> None:
            self.d.set(key, value, None)

    began = time.monotonic()
    (r,) = check_plugin(system(NoTtl), only=["ttl"])
    assert r.failed and "still there" in r.reason
    assert time.monotonic() - began < 10


def test_a_sub_second_ttl_taken_as_no_expiry_fails() -> None:
    class IntTtl(Client):
        async def set(self, key: bytes, value: Any, ttl: float | None) -> None:
            self.d.set(key, value, int(ttl) if ttl else None)

    (r,) = check_plugin(system(IntTtl), only=["ttl"])
    assert r.failed and "sub-second" in r.reason


def test_a_hanging_operation_fails_within_the_bound() -> None:
    class Hangs(Client):
        async def get(self, key: bytes) -> bytes | None:
            await asyncio.sleep(3600)
            return None

    began = time.monotonic()
    (r,) = check_plugin(system(Hangs), only=["miss"], op_timeout=0.3)
    assert r.failed and "did not return within 0.3s" in r.reason
    assert time.monotonic() - began < 5


def test_a_hanging_blocking_operation_does_not_hang_the_kit() -> None:
    class HangsInThread:
        def __init__(self, d: Dict) -> None:
            self.d = d

        def get(self, key: bytes) -> bytes | None:
            time.sleep(3600)
            return None

        def set(self, key: bytes, value: Any, ttl: float | None) -> None:
            self.d.set(key, value, ttl)

        def delete(self, key: bytes) -> bool:
            return self.d.delete(key)

        def close(self) -> None:
            return None

    began = time.monotonic()
    (r,) = check_plugin(system(HangsInThread, blocking=True), only=["miss"], op_timeout=0.3)
    assert r.failed and "did not return" in r.reason
    assert time.monotonic() - began < 5


def test_plain_methods_in_an_asyncio_strategy_fail_with_a_hint() -> None:
    class Plain:
        def __init__(self, d: Dict) -> None:
            self.d = d

        def get(self, key: bytes) -> bytes | None:
            return self.d.get(key)

        def close(self) -> None:
            return None

    (r,) = check_plugin(system(Plain), only=["miss"])
    assert r.failed and "blocking=True" in r.reason


def test_clients_sharing_state_unsafely_fail_concurrency() -> None:
    class Shared(Client):
        last: dict[bytes, bytes] = {}

        async def set(self, key: bytes, value: Any, ttl: float | None) -> None:
            await asyncio.sleep(0)
            Shared.last[b"k"] = bytes(value)  # every client writes the same slot

        async def get(self, key: bytes) -> bytes | None:
            await asyncio.sleep(0)
            return Shared.last.get(b"k")

    (r,) = check_plugin(system(Shared), only=["concurrency"])
    assert r.failed and "its own key" in r.reason


def test_server_stats_that_are_not_flat_fail() -> None:
    class NestedStats(Conn):
        async def server_stats(self) -> dict[str, Any]:
            return {"memory": {"used": 1}}

    (r,) = check_plugin(system(conn_type=NestedStats), only=["server-stats"])
    assert r.failed and "memory" in r.reason


def test_a_failed_connect_skips_the_live_checks() -> None:
    class Refuses(Conn):
        def __init__(self, client_type: type) -> None:
            raise ConnectionRefusedError("nobody listens")

    out = outcome(check_plugin(system(conn_type=Refuses)))
    assert out["connect"] == "fail" and out["declaration"] == "pass"
    assert out["round-trip"] == "skip"


def test_pub_sub_is_checked_when_declared() -> None:
    class NoPubSub(Client):
        async def publish(self, channel: bytes, message: bytes) -> None:
            return None

        async def subscribe(self, channels: list[bytes]) -> Any:
            async def nothing() -> Any:
                await asyncio.sleep(3600)
                yield b""

            return nothing()

    ops = frozenset({"get", "set", "delete", "publish", "subscribe"})
    (r,) = check_plugin(system(NoPubSub, operations=ops), only=["pubsub"], op_timeout=0.5)
    assert r.failed and "no message arrived" in r.reason


def test_bad_declarations_are_named() -> None:
    bad_default = dataclasses.replace(
        system(), options=OptionSet((Option("size", "int", 0, "entries", minimum=1),))
    )
    (r,) = check_plugin(bad_default, only=["declaration"])
    assert r.failed and "default 0 is invalid" in r.reason and "size" in r.reason
    with pytest.raises(PluginError, match="default strategy"):
        check_plugin(dataclasses.replace(system(), default_strategy="nope"))
    (r,) = check_plugin(
        system(connections=lambda sys, opts, clients: clients / 2), only=["declaration"]
    )
    assert r.failed and "connections(1 clients) gave 0.5; expected an int >= 0" in r.reason


def test_settings_are_parsed_and_routed_with_errors_naming_the_field() -> None:
    fake = system(options=OptionSet((Option("depth", "int", 1, "pipeline depth"),)))
    (t,) = targets(fake, settings=["size=5", "depth=3"])
    assert t.system_options == {"size": 5} and t.strategy_options == {"depth": 3}
    (t,) = targets(fake, settings={"target.options.size": "7", "strategy.options.depth": "2"})
    assert t.system_options == {"size": 7} and t.strategy_options == {"depth": 2}
    with pytest.raises(SpecError) as err:
        targets(fake, settings=["size=lots"])
    assert err.value.where == "target.options.size" and "expected an integer" in err.value.message
    with pytest.raises(SpecError, match=r"unknown option 'colour'.*size, depth"):
        targets(fake, settings=["colour=red"])
    with pytest.raises(SpecError, match="no server launcher"):
        targets(fake, managed=True)
    with pytest.raises(SpecError, match="PATH=VALUE"):
        split_settings(["size"])
    with pytest.raises(PluginError, match="unknown strategy 'x'"):
        targets(fake, strategy="x")
