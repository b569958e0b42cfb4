"""Listing the plugins stays cheap: `-s URL`, `workbench doctor`, `workbench plugins` and the
TUI import every plugin to read its declaration, so a plugin that imports its client library
at the top makes every one of those commands pay for it. aiohttp loads the system's CA
certificates when imported (about 0.1 s of CPU, a quarter of a short command's start); the
HTTP and Varnish plugins import it when a strategy connects or a server starts."""

from __future__ import annotations

import json
import subprocess
import sys

# Imported only by what connects or serves, never by a plugin's declaration.
CLIENT_ONLY = ("aiohttp", "httptools")
BUILT_IN = {"embedded", "http", "memcached", "redis", "umem", "valkey", "varnish"}


def test_reading_every_plugins_declaration_imports_no_http_client() -> None:
    code = (
        "import json, sys\n"
        "from workbench.sdk.discovery import plugin_statuses\n"
        "rows = [(r.name, r.error) for r in plugin_statuses()]\n"
        f"print(json.dumps([rows, [m for m in {list(CLIENT_ONLY)!r} if m in sys.modules]]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    rows, imported = json.loads(out.stdout)
    built_in = {name: error for name, error in rows if name in BUILT_IN}
    assert built_in == dict.fromkeys(BUILT_IN), rows  # each loaded, none broken
    assert imported == [], f"a plugin's declaration imported {imported}"
