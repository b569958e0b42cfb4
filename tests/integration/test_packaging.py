"""`pip install .` into a fresh virtual environment: the profiles ship inside the package,
`workbench run NAME` and the TUI find them, and Save never points into site-packages.

The one slow test of packaging. Offline: the wheel is built without build isolation, and
the fresh environment borrows the dependencies of the development one through a path
entry (which adds no .pth files, so the checkout's editable install stays out of it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Both tests build in the checkout (its build/ and egg-info folders): on two workers at once
# one build removed the other's files and its wheel failed.
pytestmark = pytest.mark.xdist_group("packaging")


def sh(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(
        args,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**os.environ, **env},
    )
    assert res.returncode == 0, f"{args}: {res.stdout}\n{res.stderr}"
    return res


def _wheel(tmp_path: Path, **env: str) -> Path:
    wheels = tmp_path / "wheels"
    sh([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
        "-w", str(wheels), str(ROOT)], cwd=tmp_path, **env)  # fmt: skip
    (wheel,) = wheels.glob("cache_workbench-*.whl")
    return wheel


def _install(tmp_path: Path, wheel: Path) -> tuple[Path, Path]:
    """A fresh environment with the wheel installed: its bin folder and site-packages."""
    fresh = tmp_path / "fresh"
    sh([sys.executable, "-m", "venv", "--without-pip", str(fresh)], cwd=tmp_path)
    python = fresh / "bin" / "python"
    site = Path(
        sh([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
           cwd=tmp_path).stdout.strip()
    )  # fmt: skip
    (site / "dev_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    sh([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
        "--no-index", str(wheel)], cwd=tmp_path)  # fmt: skip
    return fresh / "bin", site


def test_pip_install_ships_the_profiles_and_the_native_engine(tmp_path: Path) -> None:
    if not (os.environ.get("WORKBENCH_CARGO") or shutil.which("cargo")):
        pytest.skip("no cargo (WORKBENCH_CARGO or on PATH): the wheel cannot hold the engine")
    wheel = _wheel(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        assert any(n.endswith("workbench/bin/workbench-native") for n in zf.namelist())
    assert "-none-any" not in wheel.name  # a wheel holding a binary is for this platform
    bin_dir, site = _install(tmp_path, wheel)
    fresh, python = bin_dir.parent, bin_dir / "python"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = (
        "import workbench, workbench.tui.app as a, workbench.spec.profile_files as p;"
        "from workbench.tui.screens.setup import save_path;"
        "d = a.default_profiles_dir();"
        "print(workbench.__file__); print(d); print(p.is_shipped(d));"
        "print(save_path(str(d / 'quick.toml'), 'quick', d))"
    )
    where, folder, shipped, save = sh([str(python), "-c", probe], cwd=elsewhere).stdout.split()
    assert where.startswith(str(site))  # the installed package, not the checkout
    assert Path(folder) == site / "workbench" / "profiles"
    assert (Path(folder) / "quick.toml").is_file()
    assert shipped == "True"
    assert save == "quick.toml"  # Save goes to the current directory

    workbench = str(fresh / "bin" / "workbench")
    listing = sh([workbench, "profiles"], cwd=elsewhere).stdout
    assert "quick.toml" in listing and "BROKEN" not in listing
    store = str(tmp_path / "runs.sqlite3")
    sh([workbench, "run", "quick", "-q", "--test-time", "0.5", "--set", "load.warmup=0",
        "--store", store], cwd=elsewhere)  # fmt: skip
    assert not list(elsewhere.iterdir())  # nothing written where it ran
    # The engine inside the package is found (not the checkout's), and runs by default.
    env = {"WORKBENCH_NATIVE": ""}
    doctor = json.loads(sh([workbench, "doctor", "--json"], cwd=elsewhere, **env).stdout)
    assert doctor[0]["ok"], doctor[0]
    engine = site / "workbench" / "bin" / "workbench-native"
    assert str(engine) in doctor[0]["found"]
    assert os.access(engine, os.X_OK)


def test_without_cargo_pip_installs_without_the_engine_and_says_how(tmp_path: Path) -> None:
    no_cargo = tmp_path / "path"
    no_cargo.mkdir()
    for tool in ("git", "cc", "uname"):  # what a build may call, but not cargo
        if found := shutil.which(tool):
            (no_cargo / tool).symlink_to(found)
    wheel = _wheel(tmp_path, PATH=str(no_cargo), WORKBENCH_CARGO="")
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if "workbench/bin/" in n]
    assert wheel.name.endswith("-none-any.whl")
    bin_dir, _ = _install(tmp_path, wheel)
    res = subprocess.run(
        [str(bin_dir / "workbench"), "run", "--set", "target.system=redis",
         "--set", "strategy.name=native", "--store", str(tmp_path / "s.sqlite3")],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env={**os.environ, "PATH": str(no_cargo), "WORKBENCH_NATIVE": ""},
    )  # fmt: skip
    assert res.returncode == 2
    assert "pip install" in res.stderr and "WORKBENCH_NATIVE" in res.stderr
