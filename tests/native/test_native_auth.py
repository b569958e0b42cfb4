"""Redis authentication in the native engine, against real redis-servers: a password
(requirepass) and an ACL user (AUTH user pass from username_env and password_env), each
right and wrong. A refused AUTH fails the step with the server's own line (WRONGPASS), as
the Python strategies say it, never as "cannot reach"."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from native_workers import run_worker, spec, status, total
from workbench_redis.server import start_redis

from workbench.sdk.servers import ServerProcess

SECRET = "native-s3cret"
USER, USER_SECRET = "loader", "acl-s3cret"


@pytest.fixture(scope="module")
def guarded() -> Iterator[ServerProcess]:
    """A redis-server with a password for the default user and an ACL user of its own."""
    extra = ("--requirepass", SECRET, "--user", USER, "on", f">{USER_SECRET}", "~*", "+@all")
    with start_redis(extra=extra) as server:
        yield server


def _step(server: ServerProcess, strategy: str = "native") -> Any:
    return spec(
        **{
            "target.system": "redis",
            "target.options": {
                "url": server.target_options["url"],
                "password_env": "WB_TEST_NATIVE_PASSWORD",
                "username_env": "WB_TEST_NATIVE_USER",
            },
            "strategy.name": strategy,
            "load.ops": 300,
            "load.warmup": 0.0,
            "load.concurrency": 2,
            "workload.mix": {"get": 1.0, "set": 1.0},
        }
    )


def _errors(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f for f in frames if f["type"] == "error"]


@pytest.mark.parametrize(
    ("user", "password"), [(None, SECRET), (USER, USER_SECRET)], ids=["password", "acl-user"]
)
def test_the_right_credentials_load_the_server(
    guarded: ServerProcess, monkeypatch: pytest.MonkeyPatch, user: str | None, password: str
) -> None:
    monkeypatch.setenv("WB_TEST_NATIVE_PASSWORD", password)
    if user is None:
        monkeypatch.delenv("WB_TEST_NATIVE_USER", raising=False)
    else:
        monkeypatch.setenv("WB_TEST_NATIVE_USER", user)
    frames = run_worker("native", _step(guarded))
    assert status(frames) == "completed", _errors(frames)
    stats = total(frames)
    assert stats.ops == 300 and stats.error_count == 0, stats.first_errors


@pytest.mark.parametrize(
    ("user", "password"),
    [(None, "wrong"), (USER, "wrong"), (USER, SECRET)],
    ids=["password", "acl-user", "acl-user-with-the-default-password"],
)
def test_a_wrong_password_says_wrongpass_in_both_engines(
    guarded: ServerProcess, monkeypatch: pytest.MonkeyPatch, user: str | None, password: str
) -> None:
    monkeypatch.setenv("WB_TEST_NATIVE_PASSWORD", password)
    if user is None:
        monkeypatch.delenv("WB_TEST_NATIVE_USER", raising=False)
    else:
        monkeypatch.setenv("WB_TEST_NATIVE_USER", user)
    frames = run_worker("native", _step(guarded))
    assert status(frames) == "failed"
    (error,) = _errors(frames)
    assert error["kind"] == "server"
    assert "WRONGPASS" in error["message"] and "cannot reach" not in error["message"]
    assert guarded.target_options["url"].split("//")[1].split("/")[0] in error["message"]
    python = run_worker("python", _step(guarded, "multiplexed"))
    said = " ".join(e["message"] for e in _errors(python)) + " ".join(
        str(f["stats"]["first_errors"]) for f in python if f["type"] == "interval"
    )
    assert "WRONGPASS" in said
