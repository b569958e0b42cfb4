"""The record every trace format reads into, and the error a bad file gives."""

from __future__ import annotations

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


class TraceFormatError(SpecError):
    """A trace file is malformed or truncated: names the record and its byte offset (in the
    decompressed stream for a ``.zst`` file)."""

    def __init__(self, path: str, record: int, offset: int, problem: str) -> None:
        super().__init__(f"record {record} at byte offset {offset}: {problem}", path)
        self.record = record
        self.offset = offset
