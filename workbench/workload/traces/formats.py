"""The trace formats by name, and which one a file is in."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from types import ModuleType

from workbench.sdk.errors import SpecError
from workbench.workload.traces import oracle_general, plain_csv, twitter
from workbench.workload.traces.records import Request, TraceFormatError
from workbench.workload.traces.stream import open_read, read_chunk

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (oracle_general, twitter, plain_csv)}
_SUFFIXES = {
    ".oraclegeneral": "oracleGeneral",
    ".bin": "oracleGeneral",
    ".twitter": "twitter",
    ".twitter.csv": "twitter",
    ".csv": "csv",
}


def format_of(path: str, given: str | None = None, where: str = "format") -> str:
    """The format named, or the one the file name says (``.oracleGeneral``, ``.twitter``,
    ``.twitter.csv``, ``.csv``, each optionally ``.zst``), or for reading an existing file
    without such a name, what its first bytes look like."""
    if given:
        if given not in FORMATS:
            raise SpecError(f"expected one of {', '.join(FORMATS)}; got {given!r}", where)
        return given
    name = path.lower().removesuffix(".zst")
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return _SUFFIXES[suffix]
    sniffed = _sniff(path)
    if sniffed:
        return sniffed
    raise SpecError(
        "cannot tell the trace format from the name; end it in .oracleGeneral, .twitter.csv "
        f"or .csv (optionally .zst), or name the format; got {path!r}",
        where,
    )


def _sniff(path: str) -> str | None:
    try:
        with open_read(path) as stream:
            head = read_chunk(stream, path, 0, 0)[:4096]
    except TraceFormatError:
        raise  # a corrupt .zst says so, naming the offset, rather than "cannot tell"
    except (SpecError, OSError):
        return None
    first = head.split(b"\n", 1)[0]
    if first.replace(b" ", b"").startswith(b"time,key,size"):
        return "csv"
    if first.count(b",") >= 6 and first.split(b",", 1)[0].strip().replace(b".", b"").isdigit():
        return "twitter"
    return None


def reader(fmt: str) -> Callable[[str], Iterator[Request]]:
    read: Callable[[str], Iterator[Request]] = FORMATS[fmt].read
    return read


def writer(fmt: str) -> Callable[[Iterable[Request], str], int]:
    write: Callable[[Iterable[Request], str], int] = FORMATS[fmt].write
    return write


def read(path: str, fmt: str | None = None) -> Iterator[Request]:
    return reader(format_of(path, fmt))(path)
