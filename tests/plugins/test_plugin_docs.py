"""docs/plugins.md: its complete plugin works, and it covers the kit and the contract."""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import get_args

import pytest

from workbench.conformance import CHECKS, check_plugin, failures
from workbench.sdk.ops import OPERATIONS
from workbench.sdk.options import OptionKind

DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
FILE_BLOCK = re.compile(r"<!-- file: (\S+) -->\n```\w*\n(.*?)\n```", re.S)


def doc_files() -> dict[str, str]:
    return {path: body + "\n" for path, body in FILE_BLOCK.findall(DOC.read_text())}


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The documented plugin, written out as its files and imported."""
    root = tmp_path_factory.mktemp("doc-plugin")
    for rel, text in doc_files().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    ((name, value),) = meta["project"]["entry-points"]["workbench.plugins"].items()
    module_name, _, attr = value.partition(":")
    sys.path.insert(0, str(root / "src"))
    try:
        module = importlib.import_module(module_name)
        assert getattr(module, attr).name == name
        yield module
    finally:
        sys.path.remove(str(root / "src"))
        sys.modules.pop(module_name, None)


def test_the_page_holds_a_complete_plugin() -> None:
    files = doc_files()
    assert "pyproject.toml" in files
    assert any(p.endswith(".py") for p in files)


def test_the_documented_plugin_passes_the_kit(example: ModuleType, memcached_server) -> None:  # type: ignore[no-untyped-def]
    settings = {"address": memcached_server.address}
    results = check_plugin(example.plugin, settings=settings)
    assert not failures(results), "\n".join(r.line() for r in results)
    assert {r.name for r in results if r.status == "pass"} >= set(CHECKS) - {
        "conditional",
        "pubsub",
        "server-gone",
    }


def test_the_documented_plugin_classifies_a_lost_server(example: ModuleType) -> None:
    results = check_plugin(example.plugin, managed=True)
    assert not failures(results), "\n".join(r.line() for r in results)
    (gone,) = [r for r in results if r.name == "server-gone"]
    assert gone.status == "pass" and "connection" in gone.reason


def test_the_page_names_every_check_operation_and_option_kind() -> None:
    text = DOC.read_text()
    for check in CHECKS:
        assert f"| `{check}` |" in text, check
    for op in OPERATIONS:
        assert f"`{op}" in text, op
    for kind in get_args(OptionKind):
        assert f"`{kind}`" in text, kind
    for flag in ("--strategy", "--set", "--managed", "--only", "plugins new", "--dir"):
        assert flag in text, flag
    assert "workbench.plugins" in text and "blocking=True" in text


WALKTHROUGH = re.compile(r"<!-- walkthrough: (\S+) -->\n```\w*\n(.*?)\n```", re.S)


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The walkthrough's adapter, written out and imported as its package would be."""
    ((rel, body),) = WALKTHROUGH.findall(DOC.read_text())
    root = tmp_path_factory.mktemp("walkthrough")
    path = root / rel
    path.parent.mkdir(parents=True)
    (path.parent / "__init__.py").write_text("")
    path.write_text(body + "\n")
    sys.path.insert(0, str(root / "src"))
    try:
        yield importlib.import_module("workbench_keydb.adapter")
    finally:
        sys.path.remove(str(root / "src"))
        for name in ("workbench_keydb.adapter", "workbench_keydb"):
            sys.modules.pop(name, None)


def test_the_walkthrough_system_declares_what_it_is(walkthrough: ModuleType) -> None:
    from workbench.sdk.adapter import check_declaration

    plugin = check_declaration(walkthrough.plugin, "keydb")
    assert plugin.urls is not None and plugin.urls.options("keydb://10.0.0.5:7000") == {
        "url": "redis://10.0.0.5:7000/0"
    }
    facts = plugin.facts({"threads": 4}, managed=True)
    assert facts["server_cores"] == 4.0 and facts["cache_size"]["option"] == "maxmemory"
    assert plugin.facts({"threads": 4}, managed=False)["server_cores"] is None
    assert plugin.refusals and plugin.figures.cpu == ("used_cpu_user", "used_cpu_sys")


@pytest.mark.redis
def test_the_walkthrough_system_passes_the_kit_on_a_stand_in(walkthrough: ModuleType) -> None:
    """redis-server stands in for keydb-server, as the page says it may."""
    results = check_plugin(
        walkthrough.plugin, managed=True, settings={"server.binary": "redis-server"}
    )
    assert not failures(results), "\n".join(r.line() for r in results)
    (gone,) = [r for r in results if r.name == "server-gone"]
    assert gone.status == "pass"
