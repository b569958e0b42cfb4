"""Issue 13 item 13 and issue 12 "Remote targets first": load stays on this machine unless
the spec opts in, and the refusal comes before any connection.

Nothing here ever connects off loopback: an audit hook (in this process, and through
sitecustomize in every subprocess) records and blocks any such connect, and the tests
assert it recorded none.
"""

from __future__ import annotations

import ipaddress
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faults_support import cli
from workbench_redis.server import start_redis

from workbench.results.store import Store
from workbench.sdk.errors import SpecError, TargetError
from workbench.sdk.remote import ALLOW_REMOTE, require_loopback
from workbench.spec.steps import check_spec, load_spec

REMOTE = {  # documentation addresses (RFC 5737) and a reserved name: never anyone's server
    "redis": ["target.system=redis", "target.options.url=redis://192.0.2.10:6379/0"],
    "memcached": ["target.system=memcached", 'target.options.servers=["198.51.100.7:11211"]'],
    "http": ["target.system=http", "target.options.base_url=http://cache.example.invalid:80"],
    "ipv6": ["target.system=redis", "target.options.url=redis://[2001:db8::1]:6379/0"],
}
ADDRESS = {
    "redis": "192.0.2.10",
    "memcached": "198.51.100.7",
    "http": "cache.example.invalid",
    "ipv6": "2001:db8::1",
}

_OFF_LOOPBACK: list[Any] = []
_GUARDING = {"on": False}  # only while this module's tests run: the hook cannot be removed


@pytest.fixture(autouse=True)
def _guarding() -> Iterator[None]:
    _GUARDING["on"] = True
    _OFF_LOOPBACK.clear()
    try:
        yield
    finally:
        _GUARDING["on"] = False


def _is_loopback(address: Any) -> bool:
    if not isinstance(address, tuple) or not address:
        return True  # a unix socket
    host = address[0]
    if host in (None, "", "localhost") or isinstance(host, bytes | int):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guard(event: str, args: tuple[Any, ...]) -> None:
    if not _GUARDING["on"]:
        return
    if event == "socket.connect" and not _is_loopback(args[1]):
        _OFF_LOOPBACK.append(args[1])
        raise ConnectionRefusedError(f"test guard: no connect to {args[1]!r} off loopback")
    if event == "socket.getaddrinfo" and not _is_loopback((args[0],)):
        _OFF_LOOPBACK.append(args[0])
        raise OSError(f"test guard: no lookup of {args[0]!r}")


sys.addaudithook(_guard)

SITECUSTOMIZE = textwrap.dedent(
    """
    import ipaddress, sys

    def _loop(host):
        if host in (None, "", "localhost") or isinstance(host, bytes | int):
            return True
        try:
            return ipaddress.ip_address(str(host)).is_loopback
        except ValueError:
            return False

    def _guard(event, args):
        if event == "socket.connect" and isinstance(args[1], tuple) and not _loop(args[1][0]):
            with open(LOG, "a") as f:
                f.write(f"connect {args[1]!r}\\n")
            raise ConnectionRefusedError("test guard")
        if event == "socket.getaddrinfo" and not _loop(args[0]):
            with open(LOG, "a") as f:
                f.write(f"lookup {args[0]!r}\\n")
            raise OSError("test guard")

    sys.addaudithook(_guard)
    """
)


@pytest.fixture
def guarded_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Subprocesses that record (and block) any connect or name lookup off loopback."""
    log = tmp_path / "off-loopback.log"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(f"LOG = {str(log)!r}\n" + SITECUSTOMIZE)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    )
    yield log
    assert not log.exists(), log.read_text()


@pytest.mark.parametrize("case", sorted(REMOTE))
def test_a_remote_target_is_refused_when_the_spec_is_checked(case: str) -> None:
    with pytest.raises(SpecError) as err:
        load_spec(None, REMOTE[case])
    text = str(err.value)
    assert ADDRESS[case] in text and "target.allow_remote = true" in text
    assert "--allow-remote" in text and "\n" not in text
    assert _OFF_LOOPBACK == []


@pytest.mark.parametrize("case", ["redis", "http"])
def test_the_cli_refuses_before_any_connection_and_stores_nothing(
    tmp_path: Path, guarded_env: Path, case: str
) -> None:
    args = ["run", "--set", "load.duration=0.5"]
    for override in REMOTE[case]:
        args += ["--set", override]
    store = tmp_path / "runs.sqlite3"
    res = cli(args, store, timeout=60)
    assert res.returncode == 2, res.stdout
    (line,) = res.stderr.strip().splitlines()
    assert ADDRESS[case] in line and "--allow-remote" in line
    assert res.stdout == ""  # no run started
    assert not Store(store).list_runs()


@pytest.mark.parametrize("case", sorted(REMOTE))
def test_the_opt_in_lets_the_check_pass_without_connecting(case: str) -> None:
    (step,) = check_spec(load_spec(None, [*REMOTE[case], "target.allow_remote=true"]))
    assert step.spec.target.allow_remote
    assert _OFF_LOOPBACK == []


def test_the_plugins_connect_time_check_honours_only_the_engines_opt_in() -> None:
    from workbench_memcached.protocol import parse_servers
    from workbench_redis.target import SYSTEM

    with pytest.raises(TargetError):
        require_loopback("192.0.2.10", "target.options.url")
    assert require_loopback("192.0.2.10", "x", {ALLOW_REMOTE: True}) == "192.0.2.10"
    redis_options = {
        "url": "redis://192.0.2.10:6379/0",
        "username_env": "WB_TEST_NO_USER",
        "password_env": "WB_TEST_NO_PASSWORD",
        "connect_timeout": 1.0,
        "timeout": 1.0,
    }
    with pytest.raises(TargetError):
        SYSTEM.target(redis_options)
    assert SYSTEM.target({**redis_options, ALLOW_REMOTE: True}).host == "192.0.2.10"
    with pytest.raises(TargetError):
        parse_servers(["198.51.100.7:11211"])
    assert parse_servers(["198.51.100.7:11211"], options={ALLOW_REMOTE: True}) == [
        ("198.51.100.7", 11211)
    ]
    assert _OFF_LOOPBACK == []


def test_managed_servers_and_serve_stay_on_loopback(tmp_path: Path, guarded_env: Path) -> None:
    with pytest.raises(TargetError, match="loopback only"):
        start_redis(host="192.0.2.10", port=6379)
    res = cli(["serve", "kv-store", "--host", "0.0.0.0"], tmp_path / "r.sqlite3", timeout=60)
    assert res.returncode != 0 and "loopback" in res.stderr
    # A managed target ignores where the options point: its server is on loopback.
    (step,) = check_spec(
        load_spec(None, [*REMOTE["redis"], "target.managed=true", "load.duration=1"])
    )
    assert not step.spec.target.allow_remote


def test_the_opt_in_is_stored_with_the_run_and_shown_in_its_header(
    tmp_path: Path, redis_server: Any, guarded_env: Path
) -> None:
    store = tmp_path / "runs.sqlite3"
    url = redis_server.target_options["url"]
    args = ["run", "--allow-remote", "--set", "target.system=redis", "--set"]
    args += [f"target.options.url={url}", "--set", "load.duration=0.5", "--set", "load.warmup=0"]
    assert cli(args, store, timeout=120).returncode == 0
    st = Store(store)
    run = st.load("last")
    assert run.allow_remote and run.spec["target"]["allow_remote"] is True
    assert run.steps[0].resolved["allow_remote"] is True
    assert "remote targets allowed" in cli(["runs", "show", "last"], store).stdout
    report = cli(["report", "last"], store)
    assert report.returncode == 0 and "remote targets allowed" in report.stdout
    # Without the opt-in, the header says nothing of it.
    args = ["run", "--set", "load.duration=0.5", "--set", "load.warmup=0"]
    assert cli(args, store, timeout=120).returncode == 0
    assert "remote targets allowed" not in cli(["report", "last"], store).stdout
