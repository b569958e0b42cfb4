"""The record every trace format reads into, and the error a bad file gives."""

from __future__ import annotations

import math
from typing import NamedTuple

from workbench.sdk.errors import SpecError


class Request(NamedTuple):
    """One request of a trace. `key` is the trace's object id as text; `key_size` is the
    recorded key length (0 when the format has none); `ttl` is seconds, 0 for none."""

    time: float
    key: str
    key_size: int
    value_size: int
    op: str
    ttl: int


# What both engines take from a trace: a time a signed 64-bit count of nanoseconds holds
# (infinity, NaN or 1e300 at speed 1 were sent at once by one engine and waited for by the
# other), and sizes and TTLs of 32 bits, as the native engine and oracleGeneral read them.
MAX_TIME = 9.2e9
MAX_U32 = 2**32 - 1


def checked(req: Request) -> Request:
    """The request, or ValueError saying which of its numbers no engine can replay."""
    if not math.isfinite(req.time) or abs(req.time) > MAX_TIME:
        raise ValueError(f"a time that is a finite number of at most {MAX_TIME:g} s")
    if min(req.key_size, req.value_size, req.ttl) < 0:
        raise ValueError("negative size or TTL")
    if max(req.key_size, req.value_size, req.ttl) > MAX_U32:
        raise ValueError(f"sizes and TTL of at most {MAX_U32}")
    return req


class TraceFormatError(SpecError):
    """A trace file is malformed or truncated: names the record and its byte offset (in the
    decompressed stream for a ``.zst`` file)."""

    def __init__(self, path: str, record: int, offset: int, problem: str) -> None:
        super().__init__(f"record {record} at byte offset {offset}: {problem}", path)
        self.record = record
        self.offset = offset
