"""libCacheSim's oracleGeneral: 24-byte little-endian records of u32 time (s), u64 object
id, u32 size, i64 next access (the index of the object's next request, -1 for none).

It has no ops, key sizes or TTLs: every request reads as a get."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from workbench.files.output_files import remove_quietly, scratch_path
from workbench.sdk.errors import SpecError
from workbench.workload.oracle_trace import NO_NEXT, RECORD
from workbench.workload.traces.records import MAX_U32, Request, TraceFormatError
from workbench.workload.traces.stream import CHUNK, iter_records, open_read, open_write

NAME = "oracleGeneral"


def read(path: str) -> Iterator[Request]:
    with open_read(path) as stream:
        for _offset, block in iter_records(stream, path, RECORD.size):
            for time, obj, size, _next in RECORD.iter_unpack(block):
                yield Request(float(time), str(obj), 0, size, "get", 0)


def check_whole(path: str) -> None:
    """A file of whole records, or TraceFormatError naming the part record at its end.
    libCacheSim reads what whole records there are and says nothing of the rest (a corrupt
    100-byte trace simulated as 4 requests)."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise SpecError(f"cannot read the trace: {exc.strerror}", path) from None
    rest = size % RECORD.size
    if rest:
        whole = size - rest
        raise TraceFormatError(
            path, whole // RECORD.size, whole, f"truncated: {rest} of {RECORD.size} bytes"
        )


def _object_id(key: str) -> int:
    """A trace's key as a u64 id: a decimal id as itself, any other key hashed."""
    if key.isdigit() and int(key) < 1 << 64:
        return int(key)
    import hashlib

    return int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "little")


def write(requests: Iterable[Request], path: str) -> int:
    """Writes every request (deletes excluded: the format has no ops); the number written.
    Next access is filled in by a backward pass over an uncompressed copy, so memory holds
    one entry per distinct object, not per request."""
    tmp = scratch_path(path, "raw")
    try:
        n = _write_raw(requests, tmp)
        _fill_next_access(tmp, n)
        with open(tmp, "rb") as src, open_write(path) as dst:
            shutil.copyfileobj(src, dst, CHUNK)
    finally:
        remove_quietly(tmp)
    return n


def _write_raw(requests: Iterable[Request], tmp: Path) -> int:
    """The records with no next access yet; how many."""
    pack = RECORD.pack
    n = 0
    origin: float | None = None
    with open(tmp, "wb") as f:
        batch: list[bytes] = []
        for r in requests:
            if r.op == "delete":
                continue
            origin = r.time if origin is None else origin
            batch.append(
                pack(_seconds(r.time - origin, n), _object_id(r.key), r.value_size, NO_NEXT)
            )
            n += 1
            if len(batch) >= 65536:
                f.write(b"".join(batch))
                batch.clear()
        f.write(b"".join(batch))
    return n


def _seconds(since_first: float, index: int) -> int:
    """A request's time as oracleGeneral holds it: whole seconds after the first request."""
    if not 0 <= since_first <= MAX_U32:
        raise SpecError(
            f"request {index + 1} of the input is {since_first:g} s after the first; "
            f"oracleGeneral holds 0 to {MAX_U32} s (times in order)",
            "--output",
        )
    return int(since_first)


def _fill_next_access(path: Path, n: int) -> None:
    size = RECORD.size
    per_block = 65536
    last: dict[int, int] = {}
    with open(path, "r+b") as f:
        end = n
        while end > 0:
            start = max(0, end - per_block)
            f.seek(start * size)
            records = list(RECORD.iter_unpack(f.read((end - start) * size)))
            for i in range(len(records) - 1, -1, -1):
                time, obj, vsize, _ = records[i]
                records[i] = (time, obj, vsize, last.get(obj, NO_NEXT))
                last[obj] = start + i
            f.seek(start * size)
            f.write(b"".join(RECORD.pack(*rec) for rec in records))
            end = start
