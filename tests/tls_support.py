"""One set and get through a strategy, as the TLS tests of every system try it."""

from __future__ import annotations

import asyncio
from typing import Any

from workbench.sdk.adapter import error_kind
from workbench.sdk.discovery import load_plugin


async def set_get(system_name: str, strategy_name: str, options: dict[str, Any]) -> tuple[str, str]:
    """("ok", value) or (error kind, message) for one set and get of `system_name` through
    `strategy_name` with target `options` ("<miss>" when the get finds nothing)."""
    system = load_plugin(system_name)
    strategy = system.strategy(strategy_name)
    try:
        conn = await strategy.connect(
            system.options.resolve(options, "target.options"),
            strategy.options.resolve({}, "strategy.options"),
        )
        try:
            client = await conn.client()

            async def call(method: str, *args: Any) -> Any:
                fn = getattr(client, method)
                return await (asyncio.to_thread(fn, *args) if strategy.blocking else fn(*args))

            await call("set", b"tls:k", b"v", None)
            value = await call("get", b"tls:k")
            return "ok", value.decode() if value is not None else "<miss>"
        finally:
            await conn.close()
    except Exception as exc:
        return error_kind(exc), str(exc)
