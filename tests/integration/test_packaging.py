"""`pip install .` into a fresh virtual environment: the profiles ship inside the package,
`workbench run NAME` and the TUI find them, and Save never points into site-packages.

The one slow test of packaging. Offline: the wheel is built without build isolation, and
the fresh environment borrows the dependencies of the development one through a path
entry (which adds no .pth files, so the checkout's editable install stays out of it)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


def test_pip_install_ships_the_profiles(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    sh([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
        "-w", str(wheels), str(ROOT)], cwd=tmp_path)  # fmt: skip
    (wheel,) = wheels.glob("cache_workbench-*.whl")
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

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = (
        "import workbench, workbench.tui.app as a, workbench.profile_files as p;"
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
