"""What the Valkey tests share: the vendored source tarball (or why the tests skip) and the
managed-server options built from it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from workbench_valkey import plugin

REPO = Path(__file__).resolve().parents[1]


def valkey_source() -> Path:
    """``shared/vendor/valkey-*.tar.gz`` beside (or above) the checkout, else a skip: a
    user's clone has no shared/ folder (CI has it)."""
    for folder in REPO.parents:
        found = sorted((folder / "shared" / "vendor").glob("valkey-*.tar.gz"))
        if found:
            break
    else:
        pytest.skip(
            "no Valkey source: shared/vendor/valkey-*.tar.gz is not beside the checkout "
            f"({REPO.parent}/shared/vendor/; CI has it)"
        )
    missing = [tool for tool in ("gcc", "make") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"Valkey cannot be built here: {' and '.join(missing)} not installed")
    return found[-1]


def server_options(**changes: Any) -> dict[str, Any]:
    """Managed-server options with the plugin's defaults, built from the vendored source."""
    assert plugin.server is not None
    return plugin.server.options.resolve(
        {"source": str(valkey_source()), **changes}, "target.server"
    )
