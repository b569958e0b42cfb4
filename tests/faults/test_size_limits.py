"""Issue 25 item 5: profile files, --set values and stored names have a size limit.

A 50 MB `name` was accepted: 9 s, half a gigabyte, a 52 MB line, and stored three times.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import cli

from workbench.results.store import Store
from workbench.spec.load import MAX_OVERRIDE_CHARS, MAX_PROFILE_BYTES
from workbench.spec.model import MAX_NAME_CHARS


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert len(lines[0]) < 300, "the refusal does not echo the text"
    return lines[0]


def _refused(args: list[str], store: Path) -> str:
    res = cli(args, store, timeout=60)
    assert res.returncode == 2, res.stdout[-500:] + res.stderr[-500:]
    assert not store.exists(), "nothing started, nothing stored"
    return _one_line(res.stderr)


def test_a_profile_over_the_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text('name = "' + "x" * (2 * MAX_PROFILE_BYTES) + '"\n')
    line = _refused(["run", str(big)], tmp_path / "runs.sqlite")
    assert str(big) in line and "larger than 1 MiB" in line


def test_an_endless_file_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    line = _refused(["run", "/dev/zero"], tmp_path / "runs.sqlite")
    assert "/dev/zero" in line and "larger than 1 MiB" in line


def test_a_set_value_over_the_limit_is_refused(tmp_path: Path) -> None:
    text = 'name="' + "y" * MAX_OVERRIDE_CHARS + '"'
    line = _refused(["run", "--set", text], tmp_path / "runs.sqlite")
    assert line.startswith("error: --set: expected PATH=VALUE of at most")


@pytest.mark.parametrize("how", ["profile", "set", "flag"])
def test_a_run_name_over_the_limit_is_refused(tmp_path: Path, how: str) -> None:
    long = "n" * (MAX_NAME_CHARS + 1)
    profile = tmp_path / "named.toml"
    profile.write_text(f'name = "{long}"\n')
    args = {
        "profile": ["run", str(profile)],
        "set": ["run", "--set", f'name="{long}"'],
        "flag": ["run", "--name", long],
    }[how]
    line = _refused(args, tmp_path / "runs.sqlite")
    assert f"expected a name of at most {MAX_NAME_CHARS} characters" in line
    assert "name" in line.split(": expected")[0]


def test_renaming_a_stored_run_to_an_overlong_name_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "runs.sqlite"
    made = cli(["run", "--set", "load.duration=0.2", "--set", "load.warmup=0",
                "--set", "load.interval=0.1", "--name", "short"], store)  # fmt: skip
    assert made.returncode == 0, made.stderr
    res = cli(["runs", "rename", "last", "r" * (MAX_NAME_CHARS + 1)], store)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "expected a name of at most" in _one_line(res.stderr)
    assert Store(store).load("last").name == "short"
