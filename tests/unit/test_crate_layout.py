"""The native crate stays a crate of one-job files (issue 26): no source file over 700 lines
and no function over 80, counted from the `fn` line to its closing brace."""

from __future__ import annotations

from pathlib import Path

from rust_source import functions

SRC = Path(__file__).resolve().parents[2] / "native" / "src"
MAX_FILE_LINES = 700
MAX_FN_LINES = 80


def sources() -> list[Path]:
    files = sorted(SRC.rglob("*.rs"))
    assert len(files) > 20  # the crate is where this test thinks it is
    return files


def test_no_source_file_is_over_700_lines() -> None:
    long = {p.name: n for p in sources() if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES}
    assert not long, f"native/src files over {MAX_FILE_LINES} lines: {long}"


def test_no_function_is_over_80_lines() -> None:
    long = [
        f"{p.name}:{at} {name} ({n} lines)"
        for p in sources()
        for name, at, n in functions(p.read_text())
        if n > MAX_FN_LINES
    ]
    assert not long, f"native functions over {MAX_FN_LINES} lines: {long}"


def test_the_counter_sees_braces_in_strings_and_comments_as_text() -> None:
    src = (
        "fn a() {\n"
        '    let s = "}}}"; // }\n'
        "    let c = '}';\n"
        "    /* { */\n"
        '    let r = r#"{"#;\n'
        "}\n"
        "trait T { fn b(&self); }\n"
        "pub(crate) fn c(x: u8) -> u8 {\n"
        "    x\n"
        "}\n"
    )
    assert functions(src) == [("a", 1, 6), ("c", 8, 3)]
