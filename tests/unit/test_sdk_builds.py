"""`workbench.sdk.builds`: a program built once from a source tarball, cached by the
source's content and the make arguments, and a failed build named by its log."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from workbench.sdk import TargetError
from workbench.sdk.builds import build_program

# Each make appends a line to a file outside the tree, so the test sees how often it ran.
MAKEFILE = """\
all:
\tmkdir -p src
\tprintf '#!/bin/sh\\necho $(GREETING)\\n' > src/hello
\tchmod +x src/hello
\techo built >> {counter}
"""


def _tarball(folder: Path, makefile: str) -> Path:
    path = folder / "hello-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        data = makefile.encode()
        info = tarfile.TarInfo("hello-1.0/Makefile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "cache-workbench" / "hello"


def test_a_build_is_made_once_per_source_and_arguments(tmp_path: Path, cache: Path) -> None:
    counter = tmp_path / "makes"
    source = _tarball(tmp_path, MAKEFILE.format(counter=counter))
    first = build_program("hello", source, ("GREETING=hi",), ("src/hello",))
    again = build_program("hello", source, ("GREETING=hi",), ("src/hello",))
    other = build_program("hello", source, ("GREETING=ho",), ("src/hello",))
    assert first == again and first.key != other.key
    assert counter.read_text().count("built") == 2
    assert first.program("hello").read_text().strip().endswith("echo hi")
    assert first.folder.parent == cache and (first.folder / "build.log").is_file()
    assert sorted(p.name for p in cache.iterdir() if p.is_dir()) == sorted([first.key, other.key])


def test_a_failed_build_names_its_log_and_leaves_no_half_build(tmp_path: Path, cache: Path) -> None:
    source = _tarball(tmp_path, "all:\n\techo compiling; exit 3\n")
    with pytest.raises(TargetError) as caught:
        build_program("hello", source, (), ("src/hello",))
    said = str(caught.value)
    assert "make exited with status" in said and caught.value.where == "target.server.source"
    log = Path(said.rsplit("build log: ", 1)[1])
    assert "compiling" in log.read_text()
    assert [p for p in cache.iterdir() if p.is_dir()] == []


def test_a_source_without_a_makefile_is_refused(tmp_path: Path, cache: Path) -> None:
    (tmp_path / "src").mkdir()
    with pytest.raises(TargetError) as caught:
        build_program("hello", tmp_path / "src", (), ("hello",), where="target.server.x")
    assert "no Makefile" in str(caught.value) and caught.value.where == "target.server.x"
