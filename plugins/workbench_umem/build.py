"""Building umem-cache from its source, once per option set, into a cache directory.

umem-cache fixes its memory limit, thread count and connection limit at compile time, so
each option set is its own binary. A build goes to
``$XDG_CACHE_HOME/cache-workbench/umem/<key>/`` (``~/.cache`` without XDG_CACHE_HOME),
where the key names the source's commit, the options and a digest of the source, and is
reused from then on. Builds of one key are serialised with a file lock and land by an
atomic rename, so two workbenches never see half a build.

The source is a directory or a ``umem-cache-<commit>.tar.gz`` (as `git archive` makes
it). It is never modified: the build runs on a copy. A failed build is one line that
names the build log.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from workbench.sdk import TargetError

TCP_TIMEOUT_MS = 3000
BUILD_TIMEOUT = 300.0
BINARY = "umem-cache"
WHERE = "target.server.source"
_COMMIT_NAME = re.compile(r"umem-cache-([0-9a-f]{7,40})")
_SOURCE_FILES = (".c", ".h", "Makefile")


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


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cache-workbench" / "umem"


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


def _digest(source: Path) -> str:
    """What identifies the source's content: the tarball's bytes, or the files' stamps."""
    h = hashlib.sha256()
    if source.is_file():
        with source.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    else:
        for path in sorted(source.rglob("*")):
            if path.is_file() and path.name.endswith(_SOURCE_FILES):
                stat = path.stat()
                h.update(
                    f"{path.relative_to(source)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()
                )
    return h.hexdigest()[:12]


def build_key(source: Path, config: BuildConfig) -> str:
    return (
        f"{source_commit(source)}-mem{config.memory}-t{config.threads}-c{config.max_conn}"
        f"-to{config.tcp_timeout_ms}-{_digest(source)}"
    )


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _unpack(source: Path, into: Path) -> Path:
    """A private copy of the source; the folder that holds its Makefile."""
    if source.is_file():
        try:
            with tarfile.open(source) as tar:
                tar.extractall(into, filter="data")
        except (OSError, tarfile.TarError) as exc:
            raise TargetError(f"cannot unpack {str(source)!r}: {exc}", WHERE) from None
    else:
        shutil.copytree(source, into / "src", ignore=shutil.ignore_patterns(".git", BINARY))
    for makefile in sorted(into.rglob("Makefile"), key=lambda p: len(p.parts)):
        return makefile.parent
    raise TargetError(f"{str(source)!r} holds no Makefile: not umem-cache's source", WHERE)


def _tools() -> None:
    missing = [tool for tool in ("make", "gcc") if shutil.which(tool) is None]
    if missing:
        raise TargetError(
            f"umem-cache cannot be built: {' and '.join(missing)} not installed "
            "(apt-get install build-essential); or set target.server.binary to a built one",
            WHERE,
        )


def build(source: Path, config: BuildConfig, root: Path | None = None) -> Built:
    """The binary for `config`, built now unless a build of the same key is cached."""
    root = root or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    key = build_key(source, config)
    final = root / key
    commit = key.split("-", 1)[0]
    with _locked(root / f"{key}.lock"):
        if (final / BINARY).is_file():
            return Built(final / BINARY, commit, final / "build.log")
        _tools()
        work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=root))
        log = root / f"{key}.build.log"
        try:
            folder = _unpack(source, work / "tree")
            with log.open("wb") as out:
                try:
                    done = subprocess.run(
                        ["make", "-C", str(folder), *config.make_args()],
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        timeout=BUILD_TIMEOUT,
                        check=False,
                    )
                    status = f"make exited with status {done.returncode}"
                    ok = done.returncode == 0 and (folder / BINARY).is_file()
                except subprocess.TimeoutExpired:
                    status, ok = f"make took over {BUILD_TIMEOUT:g}s", False
            if not ok:
                raise TargetError(f"building umem-cache failed ({status}); build log: {log}", WHERE)
            staged = work / "out"
            staged.mkdir()
            shutil.copy2(folder / BINARY, staged / BINARY)
            shutil.copy2(log, staged / "build.log")
            (staged / "commit").write_text(commit + "\n")
            os.rename(staged, final)
            log.unlink(missing_ok=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return Built(final / BINARY, commit, final / "build.log")
