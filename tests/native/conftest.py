"""The native engine's tests need its binary: ./dev setup builds it."""

from __future__ import annotations

import pytest

from workbench.spec.native_binary import binary_path


@pytest.fixture(autouse=True)
def _native_binary() -> None:
    if binary_path() is None:
        pytest.fail("the native engine is not built: run ./dev setup")
