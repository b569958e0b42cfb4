"""Reading the native crate's Rust source as code: comments, strings and char literals
blanked (`code_only`), functions found with their line counts (`functions`). Shared by the
crate's layout and module tests (tests/unit/test_crate_layout.py, test_crate_modules.py)."""

from __future__ import annotations

import re

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
