"""`workbench plugins new NAME`: write a pip-installable plugin package to start from.

The package holds a working in-memory cache system (an asyncio strategy and a blocking
one), its entry point in the ``workbench.plugins`` group, and a test that runs the
conformance kit on it. After ``pip install -e DIR`` it shows up in ``workbench plugins``.
Templates live here as strings so that they travel with the code in any install.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path
from string import Template

from workbench.sdk.discovery import plugin_names
from workbench.sdk.errors import SpecError, WorkbenchError

NAME_RE = re.compile(r"[a-z][a-z0-9_]{1,39}")


def check_name(name: str) -> str:
    """A plugin name usable as an entry-point name and inside ``workbench_NAME``."""
    if not NAME_RE.fullmatch(name) or name.endswith("_") or "__" in name:
        raise SpecError(
            f"expected 2 to 40 lower-case letters, digits or single underscores, starting "
            f"with a letter (e.g. keydb, my_cache); got {name!r}",
            "NAME",
        )
    if keyword.iskeyword(name) or name in ("workbench", "plugin", "plugins"):
        raise SpecError(f"{name!r} is reserved; pick another name", "NAME")
    if name in plugin_names():
        raise SpecError(f"a plugin named {name!r} is already installed", "NAME")
    return name


def files(name: str) -> dict[str, str]:
    """The package's files by relative path, for plugin `name` (not checked here)."""
    subs = {"name": name, "pkg": f"workbench_{name}", "dist": f"workbench-{name.replace('_', '-')}"}
    return {
        Template(path).substitute(subs): Template(text).substitute(subs)
        for path, text in TEMPLATES.items()
    }


def scaffold(name: str, directory: Path | None = None) -> Path:
    """Write the package for plugin `name` into `directory` (default ./workbench-NAME)."""
    check_name(name)
    root = Path(directory) if directory is not None else Path(f"workbench-{name.replace('_', '-')}")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise SpecError(f"{root} already exists and is not empty; nothing written", "--dir")
    content = files(name)
    try:
        for rel, text in content.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    except OSError as exc:
        raise WorkbenchError(f"cannot write the plugin: {exc}", str(root)) from exc
    return root.resolve()


PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "A Cache Workbench plugin: the $name cache system"
requires-python = ">=3.11"
dependencies = ["cache-workbench"]

[project.optional-dependencies]
test = ["pytest>=8"]

# How the workbench finds the plugin: NAME = "module:object" in this group.
[project.entry-points."workbench.plugins"]
$name = "$pkg.adapter:plugin"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

README = """\
# $dist

A [Cache Workbench](https://example.invalid/cache-workbench) plugin for the `$name`
cache system. It starts as a working in-memory example: replace the cache in
`src/$pkg/adapter.py` with calls to your cache or client library.

```sh
pip install -e .                      # registers the entry point
workbench plugins                     # lists $name with its strategies and options
workbench plugins check $name         # the conformance kit, one line per check
workbench run --set target.system=$name --set load.duration=2
pytest                                # runs the conformance kit as a test
```

The adapter contract is described in the workbench's `docs/plugins.md`.
"""

INIT = '''\
"""The $name plugin for Cache Workbench; the declaration is in `$pkg.adapter`."""
'''

ADAPTER = '''\
"""The $name cache system: what it declares, and the clients the engine drives.

A working in-memory example to start from. Replace `Store` with calls to your cache or
client library; keep the shapes:

- ``get`` returns the value's bytes, or None for a miss (never b"" for a miss);
- ``set`` takes bytes or a memoryview and a TTL in seconds (a float, maybe below one
  second) or None for no expiry;
- ``delete`` returns True when the key was there;
- raise ``AdapterError("connection", ...)`` (or let a ConnectionError/TimeoutError
  through) when the server cannot be reached: never report that as a miss.

Do not time anything here: the engine holds the stopwatch.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from typing import Any

from workbench.sdk import (
    AdapterError,
    CacheSize,
    CacheSystem,
    Option,
    OptionSet,
    ServerFigures,
    Strategy,
    no_connections,
)


class Store:
    """Stands in for the cache server: a dict bounded in entries and in bytes of values,
    with TTLs (oldest evicted first)."""

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.data: OrderedDict[bytes, tuple[bytes, float]] = OrderedDict()
        self.used_bytes = 0
        self.lock = threading.Lock()  # the blocking strategy calls from many threads
        self.evictions = 0

    def get(self, key: bytes) -> bytes | None:
        with self.lock:
            entry = self.data.get(key)
            if entry is None:
                return None
            value, expires = entry
            if expires and expires <= time.monotonic():
                self._drop(key)
                return None
            return value

    def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        if len(value) > 8 * 1024 * 1024:
            # A refusal from the "server": an error of our own kind, counted apart.
            raise AdapterError("server", f"value of {len(value)} bytes is over the 8 MiB limit")
        with self.lock:
            self._drop(key)
            # bytes(): keep a copy; the engine reuses the memoryview's buffer.
            self.data[key] = (bytes(value), time.monotonic() + ttl if ttl else 0.0)
            self.used_bytes += len(value)
            while len(self.data) > self.max_entries or self.used_bytes > self.max_bytes:
                self._drop(next(iter(self.data)))
                self.evictions += 1

    def delete(self, key: bytes) -> bool:
        with self.lock:
            return self._drop(key)

    def _drop(self, key: bytes) -> bool:
        entry = self.data.pop(key, None)
        if entry is not None:
            self.used_bytes -= len(entry[0])
        return entry is not None


class AsyncClient:
    """One virtual client of the asyncio strategy: every method is a coroutine."""

    def __init__(self, store: Store, delay: float) -> None:
        self.store = store
        self.delay = delay

    async def _round_trip(self) -> None:
        # Where a real client awaits the network; here, an optional simulated delay.
        await asyncio.sleep(self.delay)

    async def get(self, key: bytes) -> bytes | None:
        await self._round_trip()
        return self.store.get(key)

    async def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        await self._round_trip()
        self.store.set(key, value, ttl)

    async def delete(self, key: bytes) -> bool:
        await self._round_trip()
        return self.store.delete(key)

    async def close(self) -> None:
        return None


class BlockingClient:
    """One virtual client of the blocking strategy: plain methods, one thread each."""

    def __init__(self, store: Store, delay: float) -> None:
        self.store = store
        self.delay = delay

    def get(self, key: bytes) -> bytes | None:
        time.sleep(self.delay)
        return self.store.get(key)

    def set(self, key: bytes, value: bytes | memoryview, ttl: float | None) -> None:
        time.sleep(self.delay)
        self.store.set(key, value, ttl)

    def delete(self, key: bytes) -> bool:
        time.sleep(self.delay)
        return self.store.delete(key)

    def close(self) -> None:
        return None


class Connection:
    """What `connect` gives a worker: opens clients, reports server figures, closes."""

    def __init__(self, store: Store, client_type: type, delay: float) -> None:
        self.store = store
        self.client_type = client_type
        self.delay = delay

    async def client(self) -> Any:
        return self.client_type(self.store, self.delay)

    async def server_stats(self) -> dict[str, Any]:
        # Numbers or strings, keyed by name; the engine asks once per interval.
        return {
            "curr_items": len(self.store.data),
            "used_bytes": self.store.used_bytes,
            "evictions": self.store.evictions,
        }

    async def close(self) -> None:
        return None


async def connect_async(system: dict[str, Any], strategy: dict[str, Any]) -> Connection:
    # Options arrive parsed, with defaults filled in: system's and strategy's apart.
    return Connection(_store(system), AsyncClient, strategy["delay"])


async def connect_blocking(system: dict[str, Any], strategy: dict[str, Any]) -> Connection:
    return Connection(_store(system), BlockingClient, strategy["delay"])


def _store(system: dict[str, Any]) -> Store:
    # Options arrive parsed, with defaults filled in: a size is an int of bytes.
    return Store(system["max_entries"], system["max_bytes"])


DELAY = Option("delay", "duration", 0.0, "simulated round trip per operation", maximum=1.0)

plugin = CacheSystem(
    name="$name",
    description="$name cache (in-memory example: replace with your own)",
    options=OptionSet(
        (
            Option("max_entries", "int", 100_000, "evict the oldest past this many", minimum=1),
            Option("max_bytes", "size", 64 * 1024**2, "evict the oldest past this many bytes"),
        )
    ),
    strategies=(
        Strategy(
            "async",
            "asyncio clients sharing one store",
            connect_async,
            operations=frozenset({"get", "set", "delete"}),
            options=OptionSet((DELAY,)),
            # How many connections a worker opens (limits.py checks open files with it):
            # none here, the store lives in the worker; per_client, one_per_worker,
            # pool_of("pool_size") or count_of("connections") for a real client.
            connections=no_connections,
        ),
        Strategy(
            "blocking",
            "one thread per client, plain methods",
            connect_blocking,
            operations=frozenset({"get", "set", "delete"}),
            options=OptionSet((DELAY,)),
            blocking=True,
            connections=no_connections,
        ),
    ),
    default_strategy="async",
    # Each worker process holds its own store here; a real server is shared (True). Not
    # shared, the CPU verdict counts the workers' cores only: the cache runs in them.
    shared_state=False,
    # What the core asks of a system (docs/plugins.md, "What a system declares"). The
    # option that sizes the cache, in bytes (unit=1) of the system's own options
    # (server=False), capped in entries as well: `--simulate` replays the run at this limit
    # and `workbench mrc` sets it per size.
    cache_size=CacheSize("max_bytes", server=False, entries="max_entries"),
    # Which of `server_stats`'s figures are the bytes held and the items held.
    figures=ServerFigures(used_bytes="used_bytes", items="curr_items"),
    # A system with a server declares, besides:
    # server=ServerLauncher(OptionSet(...), start),  # how to start one (`target.managed`)
    # server_cores=lambda server, managed: ServerCores(1.0),  # the cores it may use
    # urls=Urls(("$name",), lambda url: {...}),  # `workbench run -s $name://HOST:PORT`
    # refusals=(Refusal("out of memory", "raise max_bytes"),),  # advice for its errors
)
'''

TEST = '''\
"""The workbench conformance kit against this plugin: one test per strategy."""

from __future__ import annotations

import pytest
from workbench.conformance import check_plugin, failures

from $pkg.adapter import plugin


@pytest.mark.parametrize("strategy", [s.name for s in plugin.strategies])
def test_the_plugin_keeps_the_contract(strategy: str) -> None:
    # For a server-backed plugin, point the kit at a server:
    #   check_plugin(plugin, strategy, settings={"url": "..."}) or managed=True
    results = check_plugin(plugin, strategy)
    assert not failures(results), failures(results)


def test_the_workbench_discovers_it() -> None:
    from workbench.sdk import load_plugin

    assert load_plugin("$name").name == "$name"
'''

TEMPLATES = {
    "pyproject.toml": PYPROJECT,
    "README.md": README,
    "src/$pkg/__init__.py": INIT,
    "src/$pkg/adapter.py": ADAPTER,
    "tests/test_conformance.py": TEST,
}
