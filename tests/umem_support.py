"""What the umem-cache tests share: the vendored source (or why the tests skip), servers."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from workbench_umem import UmemConnection, plugin
from workbench_umem.build import vendored_source

from workbench.sdk.servers import ServerProcess

REPO = Path(__file__).resolve().parents[1]
MiB = 1024 * 1024


def umem_source() -> Path:
    """The umem-cache tarball in shared/vendor/ beside (or above) the repo, else a skip."""
    found = vendored_source(REPO)
    if found is None:
        pytest.skip(
            "no umem-cache source: shared/vendor/umem-cache-*.tar.gz is not beside the "
            f"checkout ({REPO.parent}/shared/vendor/; CI has it)"
        )
    missing = [tool for tool in ("gcc", "make") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"umem-cache cannot be built here: {' and '.join(missing)} not installed")
    return found


def server_options(**changes: Any) -> dict[str, Any]:
    """Managed-server options with the plugin's defaults, built from the vendored source."""
    assert plugin.server is not None
    raw = {"source": str(umem_source()), **changes}
    return plugin.server.options.resolve(raw, "target.server")


def start(**changes: Any) -> ServerProcess:
    assert plugin.server is not None
    server = plugin.server.start(server_options(**changes))
    assert isinstance(server, ServerProcess)
    return server


def system_options(server: ServerProcess, **changes: Any) -> dict[str, Any]:
    raw = {**server.target_options, **changes}
    return plugin.options.resolve(raw, "target.options")


async def connect(server: ServerProcess, **changes: Any) -> UmemConnection:
    (strategy,) = plugin.strategies
    conn = await strategy.connect(system_options(server, **changes), {})
    assert isinstance(conn, UmemConnection)
    return conn
