"""Files the workbench writes where a person says (`--json-out`, `report -o`, `--trace-out`,
`trace convert -o`, `mrc -o`...): checked before any work, written without ever destroying
what the path named before.

- An output is refused when it is a folder, in a folder that does not exist (none is ever
  created), not writable, a device that refuses writes, or an SQLite database: the results
  store (or its journal) that this process opened or is about to open, or any file that
  starts with SQLite's header. A JSON report written over the store lost every run.
- A symlink is written through (the link stays, its target gets the text), and so is a
  device, pipe or socket: nothing but a regular file is ever replaced by a rename.
- A regular file is written to a scratch file beside it and renamed over it when complete,
  so a failed write leaves the old file as it was. The scratch name carries the writing
  process's pid and start time: it is removed when the write fails, and one a killed process
  left is swept by the next write of the same output.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from workbench.sdk.errors import SpecError
from workbench.sdk.scratch import owner_tag

SQLITE_HEADER = b"SQLite format 3\x00"
WAL_MAGICS = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")  # a SQLite write-ahead log's header
DATABASE_SIDECARS = ("", "-wal", "-shm", "-journal")

_databases: set[str] = set()  # real paths of the SQLite files this process opens


def protect_database(path: str | Path) -> None:
    """Never write an output over `path` (an SQLite database this process opens, even one
    not created yet) or over its journal files."""
    real = os.path.realpath(path)
    _databases.update(real + suffix for suffix in DATABASE_SIDECARS)


def _is_database(real: str) -> bool:
    if real in _databases:
        return True
    try:
        with open(real, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError:
        return False
    return head == SQLITE_HEADER or head[:4] in WAL_MAGICS


def check_output(path: str | Path, where: str) -> None:
    """Refuse, before any work, an output that could not be written after it or that must
    not be: see the module's docstring. Nothing is created or changed here."""
    path = Path(path)
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise SpecError(f"cannot use {str(path)!r}: {exc.strerror or exc}", where) from None
    if (st is None or stat.S_ISREG(st.st_mode)) and _is_database(real):
        raise SpecError(
            f"{str(path)!r} is an SQLite database (the results store?); writing there "
            "would destroy it: give another file",
            where,
        )
    if st is None:
        _check_new_file(path, Path(real).parent, where)
        return
    if stat.S_ISDIR(st.st_mode):
        raise SpecError(f"{str(path)!r} is a folder; expected a file", where)
    # An existing file, device or pipe: opened without truncating, and a write of nothing
    # tried (a full device refuses even that; a pipe nobody reads cannot be opened).
    try:
        fd = os.open(real, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)
    except OSError as exc:
        why = "a pipe nobody reads" if exc.errno == errno.ENXIO else exc.strerror or str(exc)
        raise SpecError(f"cannot write {str(path)!r}: {why}", where) from None
    try:
        os.write(fd, b"")
    except OSError as exc:
        raise SpecError(f"cannot write {str(path)!r}: {exc.strerror or exc}", where) from None
    finally:
        os.close(fd)
    if stat.S_ISREG(st.st_mode) and not os.access(Path(real).parent, os.W_OK | os.X_OK):
        raise SpecError(
            f"cannot replace {str(path)!r}: no permission to create files in its folder", where
        )


def _check_new_file(path: Path, parent: Path, where: str) -> None:
    if not parent.is_dir():
        raise SpecError(
            f"cannot write {str(path)!r}: no folder {str(path.parent)!r}; expected a file in "
            "an existing folder (none is created)",
            where,
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise SpecError(
            f"cannot write {str(path)!r}: no permission to create files in {str(parent)!r}",
            where,
        )


def scratch_path(path: str | Path, kind: str) -> Path:
    """A scratch file of this process beside the output `path` (through a symlink, beside
    its target): ``.NAME.wbPID-START.KIND``."""
    real = Path(os.path.realpath(path))
    return real.with_name(f".{real.name}.{owner_tag()}.{kind}")


def sweep_scratch(path: str | Path) -> None:
    """Remove the scratch files a process that is gone left beside the output `path`
    (killed mid-write); a live process's are left alone."""
    real = Path(os.path.realpath(path))
    prefix = f".{real.name}.wb"
    with suppress(OSError), os.scandir(real.parent) as entries:
        for entry in entries:
            if not entry.name.startswith(prefix):
                continue
            owner = entry.name[len(prefix) :].split(".", 1)[0]
            pid, _, started = owner.partition("-")
            if pid.isdigit() and f"wb{owner}" != owner_tag(int(pid)) and started:
                with suppress(OSError):
                    os.unlink(entry.path)


def remove_quietly(path: str | Path) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)


@contextmanager
def open_output(path: str | Path) -> Iterator[BinaryIO]:
    """A binary stream writing the output `path` (see the module's docstring): a regular or
    new file is replaced whole when the block ends without an error, and left as it was
    when it raises; a device or pipe is written through; a symlink is followed."""
    real = Path(os.path.realpath(path))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(real, "wb") as through:
            yield through
        return
    sweep_scratch(real)
    tmp = scratch_path(real, "tmp")
    try:
        with open(tmp, "wb") as f:
            yield f
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, real)
    except BaseException:
        remove_quietly(tmp)
        raise


def write_text(path: str | Path, text: str) -> None:
    """`text` as UTF-8 into the output `path`, by `open_output`."""
    with open_output(path) as f:
        f.write(text.encode("utf-8"))
