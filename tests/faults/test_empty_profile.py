"""Issue 25, "Also": an empty profile still runs the default embedded run, and says so."""

from __future__ import annotations

from pathlib import Path

from faults_support import cli


def test_an_empty_profile_says_in_one_line_that_it_runs_the_default(tmp_path: Path) -> None:
    profile = tmp_path / "empty.toml"
    profile.write_text("")
    res = cli(["run", str(profile), "-q"], tmp_path / "runs.sqlite")
    assert res.returncode == 0, res.stdout + res.stderr
    notes = [ln for ln in res.stdout.splitlines() if "sets nothing" in ln]
    assert notes == [
        f"note: {profile} sets nothing: running the default, a short run on the embedded cache"
    ]
    assert "embedded/direct" in res.stdout


def test_a_profile_of_only_a_comment_with_flags_says_the_flags_run(tmp_path: Path) -> None:
    profile = tmp_path / "comment.toml"
    profile.write_text("# only a comment\n")
    shorter = ["--test-time", "0.3", "--set", "load.warmup=0"]
    res = cli(["run", str(profile), "-q", *shorter], tmp_path / "runs.sqlite")
    assert res.returncode == 0, res.stdout + res.stderr
    notes = [ln for ln in res.stdout.splitlines() if "sets nothing" in ln]
    assert notes == [
        f"note: {profile} sets nothing: running the defaults with the flags and --set given"
    ]
    assert "embedded/direct" in res.stdout


def test_a_profile_that_sets_something_gets_no_note(tmp_path: Path) -> None:
    profile = tmp_path / "named.toml"
    profile.write_text('name = "mine"\n[load]\nduration = 0.2\nwarmup = 0\n')
    res = cli(["run", str(profile), "-q"], tmp_path / "runs.sqlite")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "sets nothing" not in res.stdout
