"""The boundaries between the workbench's packages, derived from the directory layout.

The import-linter contracts in pyproject.toml state the rules; these tests check that their
lists name every package there is (a new package cannot slip past a hand list), and check the
two rules a plugin author relies on straight from the import graph: plugins import only the
SDK, and the SDK imports nothing else of the workbench.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FACES = {"workbench.cli", "workbench.tui"}
SDK = "workbench.sdk"


def packages_in(folder: Path) -> set[str]:
    return {p.parent.name for p in folder.glob("*/__init__.py")}


PLUGINS = packages_in(ROOT / "plugins")
CORE = {f"workbench.{name}" for name in packages_in(ROOT / "workbench")}


@cache
def contracts() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def contract(name_start: str) -> dict[str, Any]:
    (found,) = [c for c in contracts()["contracts"] if c["name"].startswith(name_start)]
    return found


@cache
def graph() -> Any:
    import grimp

    return grimp.build_graph("workbench", *sorted(PLUGINS), exclude_type_checking_imports=True)


def workbench_imports(package: str) -> set[tuple[str, str]]:
    """(importer, imported) for every import of a workbench module by a module of `package`."""
    g = graph()
    return {
        (module, imported)
        for module in g.find_descendants(package) | {package}
        for imported in g.find_modules_directly_imported_by(module)
        if imported.split(".")[0] == "workbench"
    }


def test_the_root_of_workbench_holds_only_packages() -> None:
    loose = sorted(p.name for p in (ROOT / "workbench").glob("*.py") if p.name != "__init__.py")
    assert not loose, f"modules loose at the root of workbench/: {loose}; put each in a package"


def test_plugins_import_from_the_workbench_only_the_sdk() -> None:
    bad = sorted(
        (m, i)
        for plugin in PLUGINS
        for m, i in workbench_imports(plugin)
        if i != SDK and not i.startswith(SDK + ".")
    )
    assert not bad, f"plugins importing the workbench behind the SDK: {bad}"


def test_the_sdk_imports_nothing_else_of_the_workbench() -> None:
    bad = sorted((m, i) for m, i in workbench_imports(SDK) if not i.startswith(SDK))
    assert not bad, f"the SDK imports the rest of the workbench: {bad}"


def test_the_contracts_name_every_package_of_the_layout() -> None:
    """Each list in the contracts is the layout's, so a new package is covered the day it is
    made; the layers contract is exhaustive, so import-linter itself refuses an unplaced one."""
    layers = contract("The core's packages are layers")
    assert layers["exhaustive"] is True
    layered = {f"workbench.{n.strip()}" for layer in layers["layers"] for n in layer.split("|")}
    assert layered == CORE
    assert layers["layers"][-1] == "sdk"  # the bottom layer
    assert set(contracts()["root_packages"]) == {"workbench"} | PLUGINS
    plugins = contract("Plugins import only the SDK")
    assert set(plugins["source_modules"]) == PLUGINS
    assert set(plugins["forbidden_modules"]) == CORE - {SDK}
    assert set(contract("The core runs without a UI")["source_modules"]) == CORE - FACES
    assert set(contract("Only the Ray launcher")["source_modules"]) == {"workbench"} | PLUGINS
    subprocess_only = {"workbench_libcachesim"}  # the one package that imports libcachesim
    never = set(contract("The workbench never imports libcachesim")["source_modules"])
    assert never == ({"workbench"} | PLUGINS) - subprocess_only
    reports = set(contract("Reports are rendered")["forbidden_modules"])
    assert PLUGINS - subprocess_only <= reports


def test_core_imports_no_ui_library() -> None:
    code = (
        "import sys, importlib;"
        f"[importlib.import_module(m) for m in {sorted(CORE - FACES)!r}];"
        "import workbench.run.session, workbench.run.search, workbench.run.mrc, "
        "workbench.results.store, workbench.engine.worker, workbench.spec.steps, "
        "workbench.spec.save, workbench.sdk.discovery, workbench.report;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'typer', 'rich'));"
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == ""


def test_import_linter_contracts_hold() -> None:
    lint = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    out = subprocess.run([lint], capture_output=True, text=True, check=False, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr


def test_no_module_imports_one_that_imports_it_back() -> None:
    """No import circles in workbench/ (issue 26), a deferred import inside a function
    included; imports made only for type checking do not count."""
    import grimp

    g = grimp.build_graph("workbench", exclude_type_checking_imports=True)
    circles = sorted(
        (module, imported)
        for module in g.modules
        for imported in g.find_modules_directly_imported_by(module)
        if g.chain_exists(importer=imported, imported=module)
    )
    assert not circles, f"import circles: {circles}"
