"""Small modules with one job each: no Python module in workbench/ or plugins/ over 500
lines, no function over 60 lines from its def line to its end (issue 34 item 6, as the
crate's size check). The ones still over are listed by name and size here, so the list
can only shrink: a listed one that grew, or that is no longer over, fails too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60

# Still over: path -> lines, "path:function" -> lines (its size today).
STILL_OVER: dict[str, int] = {
    # The Python engine's per-op loops: one function each, so that an op costs no call
    # more than it must (a split would add one or two per op on the load path).
    "workbench/engine/clients.py:async_client": 77,
    "workbench/engine/clients.py:thread_client": 73,
}


def sources() -> list[Path]:
    return sorted(p for d in ("workbench", "plugins") for p in (ROOT / d).rglob("*.py"))


def sizes() -> dict[str, int]:
    """Every module over its limit and every function over its limit, with its lines."""
    over: dict[str, int] = {}
    for path in sources():
        text = path.read_text()
        name = str(path.relative_to(ROOT))
        if (lines := len(text.splitlines())) > MAX_MODULE_LINES:
            over[name] = lines
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    over[f"{name}:{node.name}"] = length
    return over


def test_no_module_or_function_is_over_its_size() -> None:
    over = sizes()
    new = {k: v for k, v in over.items() if k not in STILL_OVER}
    assert not new, (
        f"over {MAX_MODULE_LINES} lines a module or {MAX_FUNCTION_LINES} a function: {new}"
    )
    grown = {
        k: (STILL_OVER[k], v) for k, v in over.items() if k in STILL_OVER and v > STILL_OVER[k]
    }
    assert not grown, f"grown since listed (listed, now): {grown}"
    done = sorted(set(STILL_OVER) - set(over))
    assert not done, f"no longer over its size: take it off STILL_OVER: {done}"


def test_the_check_sees_an_over_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    tree = ast.parse(f"def long() -> None:\n{body}\n")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert (node.end_lineno or 0) - node.lineno + 1 == MAX_FUNCTION_LINES + 1
