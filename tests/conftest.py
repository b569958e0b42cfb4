"""Shared fixtures: real servers on free loopback ports, each stopped by its pid."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from workbench_memcached.server import start_memcached
from workbench_redis.server import start_redis

from workbench.sdk.servers import ServerProcess


def _need(program: str) -> None:
    if shutil.which(program) is None:
        pytest.fail(f"{program} is not installed; `./dev test` installs it")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[ServerProcess]:
    _need("redis-server")
    with start_redis() as server:
        yield server


@pytest.fixture(scope="session")
def memcached_server() -> Iterator[ServerProcess]:
    _need("memcached")
    with start_memcached(memory_mb=64) as server:
        yield server


@pytest.fixture(scope="module")
def https_store() -> Iterator[ServerProcess]:
    """The workbench's kv-store over HTTPS (a throw-away CA), for one test module."""
    from http_support import kv_store

    server = kv_store(tls=True)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite"
