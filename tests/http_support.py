"""Helpers shared by the HTTP test modules: a managed reference server, started for real."""

from __future__ import annotations

from typing import Any

from workbench_http.managed import SERVER_OPTIONS, start_server

from workbench.sdk.servers import ServerProcess


def kv_store(**server: Any) -> ServerProcess:
    """The workbench's kv-store on a free loopback port (`server`: its target.server options)."""
    started = start_server(SERVER_OPTIONS.resolve({"kind": "kv-store", **server}, "target.server"))
    assert isinstance(started, ServerProcess)
    return started
