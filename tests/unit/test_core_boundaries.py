"""The core runs without a UI: nothing outside tui/ and cli/ pulls in textual, typer or rich."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_core_imports_no_ui_library() -> None:
    code = (
        "import sys, workbench.session, workbench.store, workbench.live, workbench.engine.worker, "
        "workbench.spec.steps, workbench.spec.save, workbench.plugins;"
        "import importlib; [importlib.import_module(m) for m in "
        "('workbench.report',)];"
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


PLUGIN_MAY_USE = {
    "workbench.adapter",
    "workbench.options",
    "workbench.servers",
    "workbench.remote",
    "workbench.errors",
    "workbench.tls",  # the TLS options, contexts and error lines every client plugin shares
    "workbench.tls_certs",  # throw-away certificates for managed TLS servers
}


def test_the_plugin_contract_forbids_every_other_workbench_module() -> None:
    """A module added to workbench/ is off-limits to plugins until someone decides otherwise."""
    import pkgutil
    import tomllib

    import workbench

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (plugins,) = [c for c in contracts["contracts"] if c["name"].startswith("Plugins use only")]
    modules = {f"workbench.{m.name}" for m in pkgutil.iter_modules(workbench.__path__)}
    assert set(plugins["forbidden_modules"]) == modules - PLUGIN_MAY_USE


def test_no_module_imports_one_that_imports_it_back() -> None:
    """No import circles in workbench/ (issue 26), a deferred import inside a function
    included; imports made only for type checking do not count."""
    import grimp

    graph = grimp.build_graph("workbench", exclude_type_checking_imports=True)
    circles = sorted(
        (module, imported)
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.chain_exists(importer=imported, imported=module)
    )
    assert not circles, f"import circles: {circles}"
