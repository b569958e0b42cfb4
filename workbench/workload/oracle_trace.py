"""Op traces in libCacheSim's oracleGeneral format, captured from what the workers sent.

A record is 24 bytes, little-endian: u32 time (seconds), u64 object id, u32 size, i64
next access (the position, counted from 0, of the next request for the same object; -1
when there is none). The next access can only be known once every request is, so each
worker writes its measured ops to a part file of raw ``(send ns, key index, size)``
records in the order it sent them, and `merge_parts` merges the parts in time order and
fills in the next access when it writes the trace.

The warm-up phase goes beside it, in ``FILE.warmup`` (`warmup_path`), in the same format:
a simulator replays it first, uncounted, so that its cache is as warm as the server's was.

A cache-aside op is one request (its get; the set after a miss is the fill a simulator
makes itself); gets and sets are requests; deletes and publishes are not recorded.
"""

from __future__ import annotations

import heapq
import os
import struct
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from workbench.files.output_files import open_output

RECORD = struct.Struct("<IQIq")  # time, object id, size, next access: oracleGeneral
PART = struct.Struct("<QQI")  # send time (perf_counter_ns), key index, size: one worker's part
NO_NEXT = -1


def step_path(trace_out: str, step: int, steps: int) -> str:
    """The trace file of one step: `trace_out` itself for a one-step run, else with
    ``.stepN`` before its suffix (``t.oracleGeneral`` -> ``t.step2.oracleGeneral``)."""
    if steps <= 1:
        return trace_out
    path = Path(trace_out)
    return str(path.with_name(f"{path.stem}.step{step}{path.suffix}"))


def warmup_path(trace: str) -> str:
    """The warm-up phase's requests, beside the measured ones."""
    return f"{trace}.warmup"


def part_path(trace: str, worker: int) -> str:
    """Where worker `worker` writes its part of a step's trace."""
    return f"{trace}.part{worker}"


def triples(flat: Sequence[int]) -> list[tuple[int, int, int]]:
    """A worker's flat capture (send ns, key, size, ...) as records in send-time order
    (blocking clients on threads may append a little out of order)."""
    it = iter(flat)
    return sorted(zip(it, it, it, strict=True))


def write_part(path: str, records: Iterable[tuple[int, int, int]]) -> None:
    """One worker's measured ops, in the order it sent them."""
    pack = PART.pack
    with open(path, "wb") as f:
        f.write(b"".join(pack(t, key, size) for t, key, size in records))


def _read_part(path: str) -> Iterator[tuple[int, int, int]]:
    with open(path, "rb") as f:
        data = f.read()
    yield from PART.iter_unpack(data)


def merge_parts(parts: list[str], out: str, *, remove: bool = True) -> int:
    """Merge the workers' parts in time order into the oracleGeneral file `out`; the
    number of requests written. The parts are removed afterwards unless told."""
    present = [p for p in parts if os.path.exists(p)]
    merged = heapq.merge(*(_read_part(p) for p in present))
    times, keys, sizes = array("q"), array("Q"), array("I")
    for t, key, size in merged:
        times.append(t)
        keys.append(key)
        sizes.append(min(size, 0xFFFFFFFF))
    write_trace(out, times, keys, sizes)
    if remove:
        for p in present:
            os.unlink(p)
    return len(keys)


def write_trace(out: str, times_ns: array[int], keys: array[int], sizes: array[int]) -> None:
    """Requests (send times in ns, object ids, sizes) as oracleGeneral, next access filled
    in from the end backwards; times become whole seconds since the first request."""
    n = len(keys)
    nxt = array("q", [NO_NEXT]) * n
    last: dict[int, int] = {}
    for i in range(n - 1, -1, -1):
        key = keys[i]
        nxt[i] = last.get(key, NO_NEXT)
        last[key] = i
    origin = times_ns[0] if n else 0
    pack = RECORD.pack
    with open_output(out) as f:
        chunk = 65536
        for start in range(0, n, chunk):
            f.write(
                b"".join(
                    pack((times_ns[i] - origin) // 1_000_000_000, keys[i], sizes[i], nxt[i])
                    for i in range(start, min(n, start + chunk))
                )
            )


def read_trace(path: str) -> Iterator[tuple[int, int, int, int]]:
    """(time, object id, size, next access) of every record of an oracleGeneral file."""
    with open(path, "rb") as f:
        while block := f.read(RECORD.size * 4096):
            usable = len(block) - len(block) % RECORD.size
            yield from RECORD.iter_unpack(block[:usable])
