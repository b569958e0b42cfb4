"""Issue 25, "Also": an empty profile still runs the default embedded run, and says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import cli


@pytest.mark.parametrize("text", ["", "# only a comment\n"], ids=["empty", "comment"])
def test_an_empty_profile_says_in_one_line_that_it_runs_the_default(
    tmp_path: Path, text: str
) -> None:
    profile = tmp_path / "empty.toml"
    profile.write_text(text)
    res = cli(["run", str(profile), "-q"], tmp_path / "runs.sqlite")
    assert res.returncode == 0, res.stdout + res.stderr
    notes = [ln for ln in res.stdout.splitlines() if "sets nothing" in ln]
    assert notes == [
        f"note: {profile} sets nothing: running the default, a short run on the embedded cache"
    ]
    assert "embedded/direct" in res.stdout


def test_a_profile_that_sets_something_gets_no_note(tmp_path: Path) -> None:
    profile = tmp_path / "named.toml"
    profile.write_text('name = "mine"\n[load]\nduration = 0.2\nwarmup = 0\n')
    res = cli(["run", str(profile), "-q"], tmp_path / "runs.sqlite")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "sets nothing" not in res.stdout
