"""The native crate stays a crate of one-job files (issue 26): no source file over 700 lines
and no function over 80, counted from the `fn` line to its closing brace."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "native" / "src"
MAX_FILE_LINES = 700
MAX_FN_LINES = 80

FN = re.compile(
    r'^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern\s+"C")\s+)*fn\s+(\w+)'
)
RAW_STRING = re.compile(r'r(#*)"')
CHAR = re.compile(r"'(?:\\.|\\x[0-9a-fA-F]{2}|\\u\{[0-9a-fA-F]+\}|[^\\'])'")


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def code_only(src: str) -> str:
    """The source with comments, strings and char literals blanked (newlines kept), so
    that only the code's own braces are counted."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        if src.startswith("//", i):
            end = src.find("\n", i)
            end = n if end < 0 else end
        elif src.startswith("/*", i):
            end = src.find("*/", i) + 2
        elif (raw := RAW_STRING.match(src, i)) and (
            i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")
        ):
            end = src.find('"' + raw.group(1), raw.end()) + 1 + len(raw.group(1))
        elif src[i] == '"':
            end = i + 1
            while src[end] != '"':
                end += 2 if src[end] == "\\" else 1
            end += 1
        elif char := CHAR.match(src, i):
            end = char.end()
        else:
            out.append(src[i])
            i += 1
            continue
        out.append(_blank(src[i:end]))
        i = end
    return "".join(out)


def functions(src: str) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of every function with a body."""
    lines = code_only(src).split("\n")
    found = []
    for first, line in enumerate(lines):
        if not (m := FN.match(line)):
            continue
        depth, opened = 0, False
        for last in range(first, len(lines)):
            for ch in lines[last]:
                if ch == "{":
                    depth, opened = depth + 1, True
                elif ch == "}":
                    depth -= 1
                elif ch == ";" and not opened:
                    break  # a declaration (a trait's), no body
            else:
                if opened and depth == 0:
                    found.append((m.group(1), first + 1, last - first + 1))
                    break
                continue
            break
    return found


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
