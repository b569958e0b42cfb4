"""Choosing where workers run: the spec fields and the errors people see for them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.sdk.errors import SpecError
from workbench.spec.steps import check_spec, load_spec, workers_for


def _check_error(*overrides: str) -> SpecError:
    with pytest.raises(SpecError) as err:
        check_spec(load_spec(None, list(overrides)))
    return err.value


def test_the_launcher_defaults_to_local_processes() -> None:
    spec = load_spec(None, [])
    assert (spec.load.launcher, spec.load.ray_address, spec.load.ray_placement) == (
        "local",
        "auto",
        "spread",
    )


def test_an_unknown_launcher_or_placement_is_named_with_the_choices() -> None:
    err = _check_error("load.launcher=slurm")
    assert err.where.endswith("load.launcher") and "local, ray" in err.message
    err = _check_error("load.launcher=ray", "load.ray_placement=strict")
    assert err.where.endswith("load.ray_placement") and "spread, pack" in err.message


def test_one_worker_per_core_counts_the_cores_the_launcher_offers() -> None:
    spec = load_spec(None, ["load.concurrency=64"])
    assert workers_for(spec, cpus=12) == 12
    assert workers_for(load_spec(None, ["load.concurrency=64", "load.workers=3"]), cpus=12) == 3


def test_asking_for_ray_without_ray_installed_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # `ray` hidden from this process: importlib finds no module named ray.
    code = (
        "import sys; sys.modules['ray'] = None; "
        "from workbench.cli.main import main; "
        "sys.argv = ['workbench', 'run', '--set', 'load.launcher=ray']; main()"
    )
    env = {**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite3")}
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "error: --set: load.launcher: the Ray launcher needs Ray: "
        "pip install 'cache-workbench[ray]'"
    ]
    assert res.stdout == ""  # refused before any run began
