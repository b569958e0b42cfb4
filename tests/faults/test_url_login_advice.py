"""Issue 39 item 12: `-s` with a user or password in the URL is refused (a stored spec keeps
no secrets), and the advice names the options of the URL's own system: `http://user:pw@`
was told to use the redis plugin's environment options, which HTTP does not have."""

from __future__ import annotations

import pytest

from workbench.cli.flags import server_overrides
from workbench.sdk.errors import SpecError


def _refusal(url: str) -> str:
    with pytest.raises(SpecError) as refused:
        server_overrides(url, {})
    assert refused.value.where == "--server"
    return str(refused.value)


@pytest.mark.parametrize("url", ["http://user:pw@127.0.0.1:8000", "memcached://u@127.0.0.1:1"])
def test_a_system_without_login_options_names_none(url: str) -> None:
    said = _refusal(url)
    assert "no user or password" in said
    assert "_env" not in said and "redis" not in said.lower(), said


def test_redis_names_its_own_environment_options() -> None:
    said = _refusal("redis://u:p@127.0.0.1:6379")
    assert "target.options.password_env" in said and "target.options.username_env" in said
