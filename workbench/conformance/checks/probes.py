"""Keys the checks write (unique per run) and values shown short in a reason."""

from __future__ import annotations

import random


def token() -> str:
    """A random prefix so that two runs of the kit never share keys."""
    return f"{random.getrandbits(40):010x}"


def probe_key(prefix: str, *parts: object) -> bytes:
    return (prefix + ":".join(str(p) for p in parts)).encode()


def show(value: bytes | None, limit: int = 24) -> str:
    if value is None:
        return "None"
    head = value[:limit]
    return f"{len(value)} bytes {head!r}{'...' if len(value) > limit else ''}"


def size_text(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:g} MiB"
    if n >= 1024:
        return f"{n / 1024:g} KiB"
    return f"{n} B"
