"""Twitter's Twemcache traces (OSDI '20): CSV lines of timestamp, anonymized key, key size,
value size, client id, operation, TTL; no header."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from workbench.sdk.ops import TRACE_OPS
from workbench.workload.traces.records import Request, TraceFormatError, checked
from workbench.workload.traces.stream import iter_lines, open_read, open_write

NAME = "twitter"
FIELDS = "timestamp,key,key size,value size,client id,op,ttl"


def parse(line: bytes, path: str, record: int, offset: int) -> Request:
    try:
        time, rest = line.decode().split(",", 1)
        key, key_size, value_size, _client, op, ttl = rest.rsplit(",", 5)
        op = op.strip()
        if op not in TRACE_OPS:
            raise ValueError(f"unknown operation {op!r}")
        return checked(Request(float(time), key, int(key_size), int(value_size), op, int(ttl)))
    except (ValueError, UnicodeDecodeError) as exc:
        raise TraceFormatError(
            path, record, offset, f"expected {FIELDS} ({exc}); got {line[:80]!r}"
        ) from None


def read(path: str) -> Iterator[Request]:
    with open_read(path) as stream:
        for record, (offset, line) in enumerate(iter_lines(stream, path)):
            if line.strip():
                yield parse(line, path, record, offset)


def write(requests: Iterable[Request], path: str) -> int:
    n = 0
    with open_write(path) as out:
        for r in requests:
            key_size = r.key_size or len(r.key)
            time = int(r.time) if r.time == int(r.time) else r.time
            out.write(f"{time},{r.key},{key_size},{r.value_size},0,{r.op},{r.ttl}\n".encode())
            n += 1
    return n
