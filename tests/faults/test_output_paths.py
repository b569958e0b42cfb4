"""Issue 25 item 11: every output file is checked before the load starts, and no folder
is created unasked. `--json-out /nonexistent/dir/x.json` created the folder; a folder or
/dev/full as the output failed only after the load."""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import cli

SHORT = ["run", "--set", "load.duration=0.2", "--set", "load.warmup=0",
         "--set", "load.interval=0.1"]  # fmt: skip


@pytest.mark.parametrize("flag", ["--json-out", "--csv-out", "--hlog-out", "--report"])
@pytest.mark.parametrize("kind", ["missing-folder", "folder", "full-device"])
def test_an_output_that_cannot_be_written_is_refused_before_the_load(
    tmp_path: Path, flag: str, kind: str
) -> None:
    target = {
        "missing-folder": tmp_path / "no" / "such" / "out.txt",
        "folder": tmp_path,
        "full-device": Path("/dev/full"),
    }[kind]
    args = [flag, f"csv:{target}"] if flag == "--report" else [flag, str(target)]
    store = tmp_path / "runs.sqlite"
    res = cli([*SHORT, *args], store)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {flag}: "), res.stderr
    assert str(target) in lines[0]
    assert not store.exists(), "refused before the load: nothing stored"
    assert not (tmp_path / "no").exists(), "no folder created"


def test_a_new_file_in_an_existing_folder_is_written(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    res = cli([*SHORT, "--json-out", str(out)], tmp_path / "runs.sqlite")
    assert res.returncode == 0, res.stdout + res.stderr
    assert out.read_text().startswith("{")
