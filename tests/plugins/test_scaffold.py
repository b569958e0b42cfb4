"""`workbench plugins new`: a package that installs, is discovered, runs and passes the kit."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from plugin_helpers import CLI, pip, show

from workbench.sdk.errors import SpecError
from workbench.sdk.scaffold import check_name, files, scaffold

# Unique per test session, so that two sessions sharing the venv cannot trip each other.
NAME = f"wbscaffold{os.getpid()}"


@pytest.mark.parametrize(
    "bad", ["", "x", "Keydb", "key-db", "1cache", "my__cache", "cache_", "a" * 41, "import"]
)
def test_bad_names_are_refused(bad: str) -> None:
    with pytest.raises(SpecError) as err:
        check_name(bad)
    assert err.value.where == "NAME"


def test_an_installed_name_is_refused() -> None:
    with pytest.raises(SpecError, match="already installed"):
        check_name("embedded")


def test_the_package_is_complete_python_and_registers_its_entry_point() -> None:
    out = files("my_cache")
    assert set(out) == {
        "pyproject.toml",
        "README.md",
        "src/workbench_my_cache/__init__.py",
        "src/workbench_my_cache/adapter.py",
        "tests/test_conformance.py",
    }
    meta = tomllib.loads(out["pyproject.toml"])
    assert meta["project"]["name"] == "workbench-my-cache"
    assert meta["project"]["entry-points"]["workbench.plugins"] == {
        "my_cache": "workbench_my_cache.adapter:plugin"
    }
    for path, text in out.items():
        if path.endswith(".py"):
            compile(text, path, "exec")
    assert 'name="my_cache"' in out["src/workbench_my_cache/adapter.py"]


def test_an_existing_directory_is_never_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(SpecError, match="not empty"):
        scaffold("keepme", target)
    assert [p.name for p in target.iterdir()] == ["keep.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (scaffold("keepme", empty) / "pyproject.toml").is_file()


def test_the_new_command_writes_and_then_refuses(workbench_cli: Any, tmp_path: Path) -> None:
    done = workbench_cli("plugins", "new", "twice", "--dir", str(tmp_path / "p"))
    assert done.returncode == 0, show(done)
    assert (tmp_path / "p" / "src" / "workbench_twice" / "adapter.py").is_file()
    assert "pip install -e" in done.stdout
    again = workbench_cli("plugins", "new", "twice", "--dir", str(tmp_path / "p"))
    assert again.returncode == 2 and "not empty" in again.stderr
    bad = workbench_cli("plugins", "new", "Bad-Name")
    assert bad.returncode == 2 and "NAME:" in bad.stderr
    done = workbench_cli("plugins", "new", "defaultdir")  # into ./workbench-defaultdir
    assert done.returncode == 0 and (tmp_path / "workbench-defaultdir" / "pyproject.toml").is_file()


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A scaffolded plugin, `pip install -e`'d into this interpreter's environment."""
    root = tmp_path_factory.mktemp("scaffold") / f"workbench-{NAME}"
    done = subprocess.run(
        [*CLI, "plugins", "new", NAME, "--dir", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, show(done)
    done = pip("install", "--no-deps", "--no-build-isolation", "-q", "-e", str(root))
    assert done.returncode == 0, show(done)
    try:
        yield root
    finally:
        pip("uninstall", "-y", "-q", f"workbench-{NAME}")


def test_the_installed_plugin_is_discovered(installed: Path, workbench_cli: Any) -> None:
    done = workbench_cli("plugins")
    assert done.returncode == 0, show(done)
    assert f"{NAME}: {NAME} cache (in-memory example" in done.stdout
    assert "strategy async (default)" in done.stdout
    assert "strategy blocking: one thread per client" in done.stdout


@pytest.mark.parametrize("strategy", ["async", "blocking"])
def test_a_short_experiment_runs_on_it(installed: Path, workbench_cli: Any, strategy: str) -> None:
    done = workbench_cli(
        "run",
        "--quiet",
        "--set", f"target.system={NAME}",
        "--set", f"strategy.name={strategy}",
        "--set", "load.ops=3000",
        "--set", "load.warmup=0",
        "--set", "load.workers=1",
        "--set", "load.concurrency=4",
        "--set", "workload.mix={get=3, set=1, delete=1}",
    )  # fmt: skip
    assert done.returncode == 0, show(done)
    assert "completed" in done.stdout


def test_the_kit_passes_on_it(installed: Path, workbench_cli: Any) -> None:
    done = workbench_cli("plugins", "check", NAME)
    assert done.returncode == 0, show(done)
    assert "0 failed" in done.stdout
    assert done.stdout.count("PASS") >= 18


def test_its_own_test_suite_passes(installed: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=installed,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, show(done)
    assert "3 passed" in done.stdout


def test_it_gets_a_verdict_a_simulated_hit_rate_and_mrc(
    installed: Path, workbench_cli: Any, tmp_path: Path
) -> None:
    """What it declares (its cache size, its figures; in-process) is all the core needs."""
    done = workbench_cli(
        "run", "--set", f"target.system={NAME}", "--set", "target.options.max_bytes=64KiB",
        "-d", "1KiB", "-n", "3000", "-c", "2", "-w", "1", "--set", "load.warmup=0",
        "--simulate", "lru",
    )  # fmt: skip
    assert done.returncode == 0, show(done)
    (verdict,) = [ln for ln in done.stdout.splitlines() if ln.startswith("verdict:")]
    assert "worker" in verdict and "server CPU not recorded" not in verdict, verdict
    assert "simulated lru at the same limit (libCacheSim): hit rate" in done.stdout
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'[target]\nsystem = "{NAME}"\n[load]\nops = 3000\nconcurrency = 2\nworkers = 1\n'
        "warmup = 0\n[workload]\nvalue_size = 1024\nkeys = 1000\n"
    )
    done = workbench_cli("mrc", str(profile), "--sizes", "64KiB,2MiB", "-p", "lru", "--measure")
    assert done.returncode == 0, show(done)
    rows = [ln.split("|") for ln in done.stdout.splitlines() if ln.startswith("| 64KiB")]
    rows += [ln.split("|") for ln in done.stdout.splitlines() if ln.startswith("| 2MiB")]
    measured = [float(r[3].strip().rstrip("%")) for r in rows]
    assert f"measured: {NAME}" in done.stdout and measured[0] < measured[1], done.stdout
