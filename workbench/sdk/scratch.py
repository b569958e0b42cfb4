"""Scratch folders in the temporary folder, named by the process that made them.

A managed server's directory, a run's scratch trace, the miss-ratio curve's trace: each is
removed when its work ends, but a process killed outright (SIGKILL, the OOM killer) removes
nothing. So each name carries its owner, ``workbench-KIND-wbPID-START-XXXX``: the owner's
pid and its start time (a pid alone can be reused), and every `workbench` command sweeps, as
it starts, the folders whose owner is gone. A live process's folders are never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

PREFIX = "workbench-"
_OWNER = re.compile(r"-wb(\d+)-(\d+)-")


def start_ticks(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot), or None if there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may itself hold spaces or ')'.
    fields = text[text.rfind(")") + 2 :].split()
    try:
        return int(fields[19])  # field 22 overall: starttime
    except (IndexError, ValueError):
        return None


def owner_tag(pid: int | None = None) -> str:
    """``wbPID-START`` of process `pid` (this one by default), as scratch names carry it."""
    pid = os.getpid() if pid is None else pid
    return f"wb{pid}-{start_ticks(pid)}"


def owner_gone(pid: int, started: int) -> bool:
    """True when the process that was `pid`, started at `started`, no longer runs."""
    return start_ticks(pid) != started


def scratch_dir(kind: str) -> Path:
    """A new folder of this process in the temporary folder, for `kind` of work."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{owner_tag()}-"))


@contextmanager
def scratch_folder(kind: str) -> Iterator[Path]:
    """`scratch_dir(kind)` for a block, removed when the block ends, however it ends."""
    path = scratch_dir(kind)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def sweep_dead_owners(root: Path | None = None) -> list[Path]:
    """Remove the scratch folders (of `scratch_dir`) whose owner is gone; what was removed."""
    root = Path(tempfile.gettempdir()) if root is None else root
    removed = []
    with suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            found = _OWNER.search(entry.name) if entry.name.startswith(PREFIX) else None
            if found is None or not owner_gone(int(found[1]), int(found[2])):
                continue
            with suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                    removed.append(Path(entry.path))
    return removed
