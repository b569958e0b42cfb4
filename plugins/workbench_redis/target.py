"""Where the Redis server is and how to log in: the SDK's RESP reading
(`workbench.sdk.resp.target`) with Redis's schemes, ``redis://`` and ``rediss://``."""

from __future__ import annotations

from workbench.sdk.resp import RespSystem

SYSTEM = RespSystem("redis", "redis", "rediss", version="redis_version")
DEFAULT_URL = "redis://127.0.0.1:6379/0"
