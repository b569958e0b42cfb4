"""Opening a trace file as a byte stream, decompressing ``.zst`` on the fly."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Protocol

import zstandard

from workbench.files.output_files import open_output
from workbench.sdk.errors import SpecError
from workbench.workload.traces.records import TraceFormatError

CHUNK = 1 << 20  # bytes read at a time: memory stays bounded whatever the file's size


def compressed(path: str | Path) -> bool:
    return str(path).endswith(".zst")


COMPRESSED_PIECE = 16 * 1024


class ByteStream(Protocol):
    """What a trace reader reads: a file opened "rb", or `_ZstdReader` over one."""

    def read(self, size: int = ..., /) -> bytes: ...


class _ZstdReader:
    """Decompressed bytes of every frame in turn. zstandard's stream_reader ends quietly at a
    truncated frame; this raises instead, so a cut-off download is never half-replayed."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._started = False  # input has been fed to the current frame

    def read(self, _size: int = CHUNK) -> bytes:
        while True:
            # Compressed input goes in small pieces: one piece's output is bounded by the
            # compression ratio, which is in the thousands for repetitive data (a 1 MiB
            # piece of such a file decompressed to hundreds of MB at once).
            data = self._raw.read(COMPRESSED_PIECE)
            if not data:
                if self._started and not self._obj.eof:
                    raise zstandard.ZstdError("the compressed stream ends inside a frame")
                return b""
            out = bytearray()
            while data:
                if self._obj.eof:  # the next frame of a multi-frame file
                    self._obj = self._dctx.decompressobj()
                self._started = True
                out += self._obj.decompress(data)
                data = self._obj.unused_data if self._obj.eof else b""
            if out:
                return bytes(out)


@contextmanager
def open_read(path: str | Path) -> Iterator[ByteStream]:
    """The file's (decompressed) bytes as a stream."""
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise SpecError(f"cannot read the trace: {exc.strerror}", str(path)) from None
    with raw:
        if compressed(path):
            yield _ZstdReader(raw)
        else:
            yield raw


@contextmanager
def open_write(path: str | Path) -> Iterator[BinaryIO]:
    """A stream writing the file, compressing when its name ends in ``.zst``; an output
    as `workbench.files.output_files` writes one (whole or not at all, never over a symlink or
    device, no folder created)."""
    with open_output(path) as raw:
        if compressed(path):
            with zstandard.ZstdCompressor(level=3).stream_writer(raw, closefd=False) as writer:
                yield writer
        else:
            buffered = io.BufferedWriter(raw, CHUNK)
            yield buffered
            buffered.flush()


def read_chunk(stream: ByteStream, path: str, record: int, offset: int) -> bytes:
    try:
        return stream.read(CHUNK)
    except zstandard.ZstdError as exc:
        raise TraceFormatError(path, record, offset, f"corrupt zstd data ({exc})") from None


def iter_records(stream: ByteStream, path: str, size: int) -> Iterator[tuple[int, bytes]]:
    """(byte offset, block) with whole `size`-byte records in each block; a trailing part
    record raises, naming it."""
    offset, rest = 0, b""
    while chunk := read_chunk(stream, path, offset // size, offset):
        data = rest + chunk
        usable = len(data) - len(data) % size
        if usable:
            yield offset, data[:usable]
        offset += usable
        rest = data[usable:]
    if rest:
        raise TraceFormatError(
            path, offset // size, offset, f"truncated: {len(rest)} of {size} bytes"
        )


def iter_lines(stream: ByteStream, path: str) -> Iterator[tuple[int, bytes]]:
    """(byte offset, line without its newline) of every line; the record number a caller
    reports is the line number, from 0."""
    offset, rest, line_no = 0, b"", 0
    while chunk := read_chunk(stream, path, line_no, offset):
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield offset, line
            offset += len(line) + 1
            line_no += 1
    if rest:
        yield offset, rest
