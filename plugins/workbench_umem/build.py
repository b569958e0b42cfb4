"""Building umem-cache from its source, once per option set, into a cache directory.

umem-cache fixes its memory limit, thread count and connection limit at compile time, so
each option set is its own binary, built by the SDK's `build_program`
(`workbench.sdk.builds`: a private copy, a file lock, an atomic rename, one line naming the
build log when it fails) into ``$XDG_CACHE_HOME/cache-workbench/umem/<key>/``. What is
umem-cache's own is here: the make arguments of an option set, the source's commit, and
where the vendored source is.

The source is a directory or a ``umem-cache-<commit>.tar.gz`` (as `git archive` makes it).
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from workbench.sdk import TargetError
from workbench.sdk.builds import build_key as sdk_build_key
from workbench.sdk.builds import build_program

TCP_TIMEOUT_MS = 3000
BINARY = "umem-cache"
WHERE = "target.server.source"
_COMMIT_NAME = re.compile(r"umem-cache-([0-9a-f]{7,40})")


@dataclass(frozen=True)
class BuildConfig:
    """What umem-cache's Makefile compiles in."""

    memory: int  # MEM_LIMIT, bytes
    threads: int  # THREAD_NR
    max_conn: int  # MAX_CONN, shared by the threads
    tcp_timeout_ms: int = TCP_TIMEOUT_MS

    def make_args(self) -> list[str]:
        return [
            "RAFT=0",
            "TLS=0",
            f"THREAD_NR={self.threads}",
            f"MAX_CONN={self.max_conn}",
            f"MEM_LIMIT={self.memory}",
            f"TCP_TIMEOUT={self.tcp_timeout_ms}",
        ]


@dataclass(frozen=True)
class Built:
    binary: Path
    commit: str  # short commit, or "unknown"
    log: Path


def vendored_source(start: Path | None = None) -> Path | None:
    """The newest ``shared/vendor/umem-cache-*.tar.gz`` beside this checkout or above it."""
    here = (start or Path(__file__)).resolve()
    for folder in here.parents:
        found = sorted((folder / "shared" / "vendor").glob("umem-cache-*.tar.gz"))
        if found:
            return found[-1]
    return None


def find_source(given: str) -> Path:
    """The source to build: the one given, else the vendored tarball; or a TargetError."""
    if given:
        path = Path(given).expanduser()
        if not path.exists():
            raise TargetError(f"no such file or directory: {str(path)!r}", WHERE)
        return path
    found = vendored_source()
    if found is None:
        raise TargetError(
            "no umem-cache to run: set target.server.source to its source (a directory or "
            "umem-cache-<commit>.tar.gz) or target.server.binary to a built umem-cache",
            WHERE,
        )
    return found


def source_commit(source: Path) -> str:
    """The short commit of a tarball (git archive's header, else its name) or a checkout."""
    if source.is_file():
        with contextlib.suppress(OSError, tarfile.TarError), tarfile.open(source) as tar:
            comment = tar.pax_headers.get("comment", "")
            if re.fullmatch(r"[0-9a-f]{40}", comment):
                return comment[:7]
    else:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run(
                ["git", "-C", str(source), "rev-parse", "--short=7", "HEAD"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout.strip()
    m = _COMMIT_NAME.search(source.name)
    return m.group(1)[:7] if m else "unknown"


def build_key(source: Path, config: BuildConfig) -> str:
    return sdk_build_key(BINARY, source, config.make_args())


def build(source: Path, config: BuildConfig, root: Path | None = None) -> Built:
    """The binary for `config`, built now unless a build of the same key is cached; its
    folder also keeps the source's commit (``commit``), which a given binary is read by."""
    commit = source_commit(source)
    built = build_program(
        BINARY, source, config.make_args(), (BINARY,), WHERE, cache="umem",
        notes={"commit": commit + "\n"}, root=root,
    )  # fmt: skip
    return Built(built.program(BINARY), commit, built.program("build.log"))
