"""Issue 13 item 12: a file that is not a profile is one line naming it, exit 2.

A binary or non-UTF-8 file and a directory gave a Python exception's text, deep nesting
a RecursionError; a UTF-8 byte order mark made a valid profile "not valid TOML". Errors
about --set itself said "--set: --set:", and the HTTP strategies "GET GET /lookup".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import cli

from workbench.sdk.errors import SpecError
from workbench.spec.steps import load_spec


def one_line(res_stderr: str) -> str:
    lines = res_stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res_stderr, res_stderr
    return lines[0]


def _files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)))
    latin1 = tmp_path / "latin1.toml"
    latin1.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    nul = tmp_path / "nul.toml"
    nul.write_bytes(b'name = "x"\n\x00\x00')
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 2000 + "]" * 2000 + "\n")
    nested = tmp_path / "nested.toml"
    nested.write_text("a = " + "[" * 100 + "1" + "]" * 100 + "\n")
    directory = tmp_path / "profiles.toml"
    directory.mkdir()
    return {
        "binary": (binary, "not a UTF-8 text file"),
        "latin1": (latin1, "not a UTF-8 text file"),
        "nul": (nul, "a binary file"),
        "deep": (deep, "nested more than"),
        "nested": (nested, "nested more than"),
        "directory": (directory, "is a directory"),
    }


@pytest.mark.parametrize("kind", ["binary", "latin1", "nul", "deep", "nested", "directory"])
def test_a_file_that_is_not_a_profile_is_one_line_naming_it(tmp_path: Path, kind: str) -> None:
    path, why = _files(tmp_path)[kind]
    with pytest.raises(SpecError) as err:  # in-process: the message and where
        load_spec(path)
    assert err.value.where == str(path) and why in err.value.message
    res = cli(["run", str(path)], tmp_path / "runs.sqlite3", timeout=60)
    assert res.returncode == 2
    assert one_line(res.stderr) == f"error: {path}: {err.value.message}"


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + b'name = "with-bom"\n[load]\nconcurrency = 3\n')
    spec = load_spec(path)
    assert spec.name == "with-bom" and spec.load.concurrency == 3


def test_errors_about_set_itself_name_it_once(tmp_path: Path) -> None:
    res = cli(["run", "--set", "foo"], tmp_path / "runs.sqlite3", timeout=60)
    assert res.returncode == 2
    line = one_line(res.stderr)
    assert line.startswith("error: --set: expected PATH=VALUE") and "--set: --set" not in line
    deep = cli(["run", "--set", "load.rate=" + "[" * 50 + "]" * 50], tmp_path / "r.db")
    assert deep.returncode == 2 and "nested more than" in one_line(deep.stderr)


def test_an_http_error_names_the_method_once() -> None:
    from workbench_http.config import _status_error

    for target in ("GET /lookup?key={key}", "/lookup?key=k1"):  # lean's and aiohttp's
        message = str(_status_error("GET", target, 500, "Internal Server Error", b"oops"))
        assert message.startswith("GET /lookup?key=") and "GET GET" not in message
