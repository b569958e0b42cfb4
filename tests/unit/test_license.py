"""The project is MIT, declared where packaging tools and users read it."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_package_declares_mit_and_ships_the_licence() -> None:
    meta = importlib.metadata.metadata("cache-workbench")
    assert meta["License-Expression"] == "MIT"
    assert "LICENSE" in (meta.get_all("License-File") or [])
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_the_native_crate_has_the_same_licence() -> None:
    cargo = tomllib.loads((ROOT / "native" / "Cargo.toml").read_text())
    assert cargo["package"]["license"] == "MIT"
