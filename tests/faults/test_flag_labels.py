"""Issue 39 item 12: an error about a field a familiar flag set names that flag, not
`--set`: `--key-pattern 'bogus(1)'` was reported as `--set: workload.key_distribution`."""

from __future__ import annotations

from pathlib import Path

from faults_support import cli


def test_a_bad_key_pattern_names_the_flag(tmp_path: Path) -> None:
    res = cli(["run", "--key-pattern", "bogus(1)"], tmp_path / "runs.sqlite", timeout=60)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    line = res.stderr.strip()
    assert "(set by --key-pattern)" in line and "--set" not in line, line
    assert not (tmp_path / "runs.sqlite").exists()
