"""Where the Valkey server is and how to log in: the SDK's RESP reading
(`workbench.sdk.resp.target`) with Valkey's schemes, ``valkey://`` and ``valkeys://`` (the
ones valkey-py reads). Valkey speaks RESP as Redis does, so the Python strategies use
redis-py and the native engine its RESP codec."""

from __future__ import annotations

from workbench.sdk.resp import RespSystem

SYSTEM = RespSystem("valkey", "valkey", "valkeys", version="valkey_version")
DEFAULT_URL = "valkey://127.0.0.1:6379/0"
