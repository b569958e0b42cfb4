"""TUI fixtures: a store in a temp folder, seeded with synthetic runs; the app factory."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tui_data import T0, record, synthetic_events

from workbench.results.store import Store
from workbench.tui.app import WorkbenchApp, make_app


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Times on screen are local: pin the zone so screens are the same everywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def store(store_path: Path) -> Iterator[Store]:
    st = Store(store_path)
    yield st
    st.close()


@pytest.fixture
def seeded(store: Store) -> Store:
    """Three stored runs: a sweep and two single-step runs, one slower."""
    record(store, synthetic_events("20231114-221320-aaaa", "quick"))
    record(
        store,
        synthetic_events(
            "20231114-222000-bbbb",
            "sweep",
            concurrency=(1, 4, 16),
            intervals=3,
            started_at=T0 + 400,
        ),
    )
    record(store, synthetic_events("20231114-223000-cccc", "slow", scale=2.0, started_at=T0 + 1000))
    return store


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "fixed.toml").write_text(
        'name = "fixed"\ndescription = "a profile for screenshots"\n\n'
        "[workload]\nmix = { get = 0.8, set = 0.2 }\nkeys = 5000\n"
        'key_distribution = "hotcold(0.8,0.2)"\nvalue_size = "uniform(8,3000)"\n\n'
        "[load]\nconcurrency = [1, 4]\nworkers = 2\nduration = 2.0\nwarmup = 0.5\n"
    )
    return folder


@pytest.fixture
def make(store: Store, profiles: Path):  # type: ignore[no-untyped-def]
    def factory(**kwargs: object) -> WorkbenchApp:
        kwargs.setdefault("profiles_dir", profiles)
        return make_app(store, **kwargs)

    return factory
