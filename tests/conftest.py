"""Shared fixtures: real servers on free loopback ports, each stopped by its pid; how the
parallel pass groups tests (docs/testing.md)."""

from __future__ import annotations

import gc
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


# Started once per xdist worker, cheap: they never pin a module to one worker.
PER_WORKER = {"redis_server", "memcached_server"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests of a module that share fixtures outliving a test (a TLS server, a Ray cluster,
    the namespace test bed) run on one worker, so that those are set up once, not once per
    worker. The group is the module and the fixtures: a module's tests on different shared
    fixtures (the kit on live targets, the kit on TLS targets) go to different workers."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        shared = sorted(  # the suite's own (pytest's and plugins' have no baseid)
            name
            for name, defs in info.name2fixturedefs.items()
            if defs[-1].scope != "function" and defs[-1].baseid and name not in PER_WORKER
        )
        if shared:
            item.add_marker(pytest.mark.xdist_group(f"{item.path.stem}:{'+'.join(shared)}"))
    items.sort(key=_start_rank)


# The collector scanned each worker's whole heap (every test module, Textual, Ray, numpy)
# at each full collection: a quarter of the CPU of the TUI and report tests (25 of 96
# CPU-s in tests/tui/test_tui_app.py, test_tui_explains_itself.py and tests/golden). With
# what collection loaded frozen out of it and a tenth as many collections, 10 s.
GC_THRESHOLD = (10_000, 10, 10)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


# The parallel pass hands out tests in collection order (after xdist's groups, largest
# first), so a long test collected late runs alone at the end while the other workers
# idle: 20-40 s of a 2-core CI run. These start first, longest first (CI's timings).
START_FIRST = (
    "tests/ray/test_distributed_doc.py",
    "tests/docs/test_doc_commands.py::test_every_command_of_the_page_runs_as_written",
    "tests/integration/test_http_adapter.py::test_the_conformance_kit_passes",
    "tests/unit/test_types.py",
    "tests/tui/test_tui_app.py",
    "tests/faults/test_huge_concurrency.py",
    "tests/tui/test_long_run_charts.py",
    "tests/integration/test_long_run_memory.py",
    "tests/integration/test_profiles.py::test_a_profile_runs_in_its_quick_form",
    "tests/unit/test_traces.py::test_a_large_file_streams_in_bounded_memory",
)


def _start_rank(item: pytest.Item) -> int:
    """Where `item` starts in the parallel pass: `START_FIRST`'s order, then the rest
    (a stable sort keeps their collection order)."""
    return next(
        (k for k, prefix in enumerate(START_FIRST) if item.nodeid.startswith(prefix)),
        len(START_FIRST),
    )


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
