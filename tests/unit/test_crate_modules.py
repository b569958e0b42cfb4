"""The native crate's modules form no import circle (issue 34): the graph of which module
names which, read from the source's paths (`use crate::…`, `super::…`, `self::…`, a child
module's name, and `crate::…` paths in code), is acyclic, file by file and folder by folder.

A module is a file (`src/a/b.rs` is `a::b`, `src/a/mod.rs` is `a`). A path names the
longest module it spells; an item of a folder's `mod.rs` belongs to that folder's module.
A `mod child;` line is where a file sits, not a dependency, and a `#[cfg(test)]` module is
left out (a test may read the module it tests from any side)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from rust_source import code_only

SRC = Path(__file__).resolve().parents[2] / "native" / "src"

Module = tuple[str, ...]  # a module's path in the crate: ("run", "turn")
Graph = dict[Module, set[Module]]  # which modules each module names

USE = re.compile(r"\buse\s+([^;]+);")
PATH = re.compile(r"(?<![\w:])((?:crate|super|self)(?:\s*::\s*(?:\w+|\{))+)")
TEST_MODULE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")
CHILD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)


def module_of(path: Path) -> Module:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] in ("mod", "main"):
        parts = parts[:-1]
    return tuple(parts)


def modules(src: Path = SRC) -> dict[Module, Path]:
    return {module_of(p): p for p in sorted(src.rglob("*.rs"))}


def without_tests(code: str) -> str:
    """The code with each `#[cfg(test)] mod … { … }` block taken out."""
    while m := TEST_MODULE.search(code):
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        code = code[: m.start()] + code[i:]
    return code


def expand(tree: str) -> Iterable[str]:
    """The paths of one `use` tree: `a::{b, c::{d, e}}` gives a::b, a::c::d, a::c::e."""
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        yield tree
        return
    head, _, body = tree.partition("{")
    body = body[: body.rindex("}")]
    depth, start = 0, 0
    for i, ch in enumerate(body + ","):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            if part := body[start:i]:
                yield from expand(head + part)
            start = i + 1


def resolve(here: Module, path: str, known: set[Module]) -> Module | None:
    """The module a path names from module `here` (a mod.rs or main.rs is its folder)."""
    segments = [s for s in path.split("::") if s]
    if not segments:
        return None
    first, rest = segments[0], segments[1:]
    if first == "crate":
        base: Module = ()
    elif first in ("self", "super"):
        base = here
        while first == "super":
            base = base[:-1]
            first, rest = (rest[0], rest[1:]) if rest else ("", [])
        if first not in ("", "self", "super"):
            rest = [first, *rest]
    elif (*here, first) in known:
        base, rest = here, segments
    else:
        return None  # an outside crate, std, or a local item
    found = base
    for seg in rest:
        if (*found, seg) not in known:
            break
        found = (*found, seg)
    return found


def edges(files: dict[Module, Path]) -> Graph:
    known = set(files)
    graph: Graph = {m: set() for m in files}
    for module, path in files.items():
        code = without_tests(code_only(path.read_text()))
        code = CHILD.sub("", code)
        paths = [p for tree in USE.findall(code) for p in expand(tree)]
        code_paths = PATH.findall(USE.sub("", code))
        children = [m.group(0) for m in re.finditer(r"(?<![\w:])\w+(?:::\w+)+", USE.sub("", code))]
        for p in [*paths, *code_paths, *children]:
            target = resolve(module, p.replace("{", ""), known)
            if target is not None and target != module:
                graph[module].add(target)
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[Module, int] = {}
    low: dict[Module, int] = {}
    stack: list[Module] = []
    found: list[list[str]] = []

    def visit(v: Module) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append("::".join(w) or "main")
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def folders(graph: Graph) -> Graph:
    """The same graph between the crate's top-level modules (a folder and all it holds)."""
    top: Graph = {}
    for m, targets in graph.items():
        node = m[:1]
        top.setdefault(node, set()).update(t[:1] for t in targets if t[:1] != node)
    return top


def test_no_module_of_the_crate_is_in_an_import_circle() -> None:
    found = cycles(edges(modules()))
    assert not found, f"native/src modules in an import circle: {found}"


def test_no_folder_of_the_crate_is_in_an_import_circle() -> None:
    found = cycles(folders(edges(modules())))
    assert not found, f"native/src folders in an import circle: {found}"


def test_a_circle_through_use_super_and_code_paths_is_found(tmp_path: Path) -> None:
    for name, text in {
        "main.rs": "mod a;\nmod b;\nfn main() { a::go(); }\n",
        "a/mod.rs": "mod inner;\npub use self::inner::Thing;\npub fn go() {}\n",
        "a/inner.rs": "use crate::{b::{self, Other}};\npub struct Thing;\n",
        "b.rs": "pub struct Other;\nfn f() { let _ = crate::a::Thing; }\n"
        "#[cfg(test)]\nmod tests { use crate::main_only; }\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    global SRC
    saved, SRC = SRC, tmp_path
    try:
        graph = edges(modules(tmp_path))
    finally:
        SRC = saved
    assert graph[("a", "inner")] == {("b",)}
    assert graph[("b",)] == {("a",)}
    assert graph[("a",)] == {("a", "inner")}
    assert cycles(graph) == [["a", "a::inner", "b"]]
    assert cycles(folders(graph)) == [["a", "b"]]
