"""The server as memtier_benchmark and redis-benchmark users name it (-s HOST -p PORT,
-h HOST, -s HOST:PORT, -P PROTOCOL) lands on the same spec as the URL form."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.cli.flags import Flags, load_with_flags
from workbench.sdk.errors import SpecError


def target_of(flags: Flags, profile: Path | None = None) -> tuple[str, dict[str, object]]:
    spec = load_with_flags(profile, flags, [])
    assert spec.target.managed is False
    return spec.target.system, dict(spec.target.options)


@pytest.mark.parametrize(
    "flags",
    [
        Flags(server="127.0.0.1", port=7001),
        Flags(host="127.0.0.1", port=7001),
        Flags(server="127.0.0.1:7001"),
        Flags(port=7001),
        Flags(server="127.0.0.1", port=7001, protocol="resp3"),
        Flags(server="redis://127.0.0.1", port=7001),
        Flags(server="redis://127.0.0.1:7001"),
    ],
)
def test_memtier_spellings_name_the_same_redis_server(flags: Flags) -> None:
    assert target_of(flags) == ("redis", {"url": "redis://127.0.0.1:7001"})


def test_the_protocol_or_the_profiles_system_picks_the_scheme(tmp_path: Path) -> None:
    memcached = Flags(server="127.0.0.1", port=7002, protocol="memcache_text")
    assert target_of(memcached) == ("memcached", {"servers": ["127.0.0.1:7002"]})
    profile = tmp_path / "mc.toml"
    profile.write_text('[target]\nsystem = "memcached"\nmanaged = true\n')
    assert target_of(Flags(server="127.0.0.1", port=7002), profile)[0] == "memcached"
    assert target_of(Flags(server="::1", port=7003)) == ("redis", {"url": "redis://[::1]:7003"})


@pytest.mark.parametrize(
    ("flags", "where", "says"),
    [
        (Flags(server="127.0.0.1", host="127.0.0.1"), "--host", "not both"),
        (Flags(server="127.0.0.1:7001", port=7002), "--port", "one port"),
        (Flags(server="127.0.0.1", port=7001, protocol="memcache_binary"), "--protocol", "text"),
        (Flags(server="127.0.0.1", port=7001, protocol="gopher"), "--protocol", "resp2"),
        (Flags(server="127.0.0.1", port=7001, protocol="16"), "--protocol", "--pipeline 16"),
        (Flags(protocol="redis"), "--protocol", "-s HOST or -p PORT"),
        (Flags(server="127.0.0.1:http"), "--server", "port from 1 to 65535"),
    ],
)
def test_an_address_that_cannot_be_read_names_the_flag(flags: Flags, where: str, says: str) -> None:
    with pytest.raises(SpecError) as err:
        load_with_flags(None, flags, [])
    assert err.value.where == where and says in err.value.message
