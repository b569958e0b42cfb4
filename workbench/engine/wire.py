"""Framing between coordinator and workers: a 4-byte big-endian length, then JSON.

Histograms inside travel in the standard HdrHistogram compressed encoding (base64 text),
so a worker can be any process that speaks this: another machine, a native binary.
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
from typing import Any

_HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024


def pack(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return _HEADER.pack(len(body)) + body


def write_frame(fd: int, message: dict[str, Any]) -> None:
    """Blocking write of one frame to a file descriptor (a worker's private stdout)."""
    data = memoryview(pack(message))
    while data:
        n = os.write(fd, data)
        data = data[n:]


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next frame, or None at end of stream."""
    try:
        header = await reader.readexactly(_HEADER.size)
    except asyncio.IncompleteReadError:
        return None
    (size,) = _HEADER.unpack(header)
    if size > MAX_FRAME:
        raise ValueError(f"frame of {size} bytes is larger than {MAX_FRAME}")
    try:
        body = await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return None
    frame: dict[str, Any] = json.loads(body)
    return frame
