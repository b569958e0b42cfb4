"""A plain CSV with the header ``time,key,size[,op][,ttl]``; op defaults to get, ttl to 0."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from workbench.sdk.ops import TRACE_OPS
from workbench.workload.traces.records import Request, TraceFormatError, checked
from workbench.workload.traces.stream import iter_lines, open_read, open_write

NAME = "csv"
HEADERS = ("time,key,size", "time,key,size,op", "time,key,size,op,ttl", "time,key,size,ttl")


def read(path: str) -> Iterator[Request]:
    with open_read(path) as stream:
        lines = iter_lines(stream, path)
        first = next(lines, None)
        header = first[1].decode(errors="replace").strip().replace(" ", "") if first else ""
        if header not in HEADERS:
            raise TraceFormatError(
                path, 0, 0, f"expected the header {' or '.join(HEADERS)}; got {header[:80]!r}"
            )
        columns = header.split(",")
        for record, (offset, line) in enumerate(lines, start=1):
            if line.strip():
                yield _parse(line, columns, path, record, offset)


def _parse(line: bytes, columns: list[str], path: str, record: int, offset: int) -> Request:
    try:
        fields = dict(zip(columns, line.decode().strip().split(","), strict=True))
        op = fields.get("op", "get").strip() or "get"
        if op not in TRACE_OPS:
            raise ValueError(f"unknown operation {op!r}")
        return checked(
            Request(
                float(fields["time"]),
                fields["key"],
                0,
                int(fields["size"]),
                op,
                int(fields.get("ttl") or 0),
            )
        )
    except (ValueError, UnicodeDecodeError) as exc:
        raise TraceFormatError(
            path, record, offset, f"expected {','.join(columns)} ({exc}); got {line[:80]!r}"
        ) from None


def write(requests: Iterable[Request], path: str) -> int:
    n = 0
    with open_write(path) as out:
        out.write(b"time,key,size,op,ttl\n")
        for r in requests:
            time = int(r.time) if r.time == int(r.time) else r.time
            out.write(f"{time},{r.key},{r.value_size},{r.op},{r.ttl}\n".encode())
            n += 1
    return n
