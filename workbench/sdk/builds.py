"""Building a server program from its source, once, into a cache directory.

A plugin whose server is not installed can build it from a source tarball or directory the
user names (``target.server.source``): `build_program` unpacks a private copy, runs
``make`` with the plugin's arguments and keeps the programs it asked for under
``$XDG_CACHE_HOME/cache-workbench/<cache>/<key>/`` (``~/.cache`` without XDG_CACHE_HOME),
where the key names the source's content and the make arguments. Later runs reuse it.
Builds of one key are serialised with a file lock and land by an atomic rename, so two
workbenches never see half a build. The source is never modified, and never copied into
the workbench's own tree. A failed build is one line that names the build log.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from workbench.sdk.errors import TargetError

BUILD_TIMEOUT = 1800.0  # a large C server on a busy 2-core machine
_SOURCE_FILES = (".c", ".h", ".cpp", "Makefile", ".mk", ".in")


@dataclass(frozen=True)
class Built:
    """Programs built from one source with one set of make arguments."""

    folder: Path  # holds each program by its base name, and build.log
    key: str

    def program(self, name: str) -> Path:
        return self.folder / name


def cache_root(cache: str) -> Path:
    """Where the builds of `cache` (a plugin's name for them) are kept."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cache-workbench" / cache


def source_digest(source: Path) -> str:
    """What identifies the source's content: a tarball's bytes, or a directory's source
    files by name, size and modification time."""
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


def build_key(name: str, source: Path, make_args: Sequence[str]) -> str:
    args = hashlib.sha256("\0".join(make_args).encode()).hexdigest()[:8]
    return f"{name}-{source_digest(source)}-{args}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _unpack(source: Path, into: Path, where: str) -> Path:
    """A private copy of the source; the shallowest folder that holds a Makefile."""
    if source.is_file():
        try:
            with tarfile.open(source) as tar:
                tar.extractall(into, filter="data")
        except (OSError, tarfile.TarError) as exc:
            raise TargetError(f"cannot unpack {str(source)!r}: {exc}", where) from None
    else:
        shutil.copytree(source, into / "src", ignore=shutil.ignore_patterns(".git"))
    for makefile in sorted(into.rglob("Makefile"), key=lambda p: len(p.parts)):
        return makefile.parent
    raise TargetError(f"{str(source)!r} holds no Makefile: not a source to build", where)


def _require_tools(name: str, where: str) -> None:
    missing = [tool for tool in ("make", "gcc") if shutil.which(tool) is None]
    if missing:
        raise TargetError(
            f"{name} cannot be built: {' and '.join(missing)} not installed "
            "(apt-get install build-essential); or install its server program",
            where,
        )


def _make(folder: Path, make_args: Sequence[str], log: Path) -> str:
    """Runs make; '' when it succeeded, else what went wrong."""
    jobs = f"-j{max(1, len(os.sched_getaffinity(0)))}"
    with log.open("wb") as out:
        try:
            done = subprocess.run(
                ["make", "-C", str(folder), jobs, *make_args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=BUILD_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"make took over {BUILD_TIMEOUT:g}s"
    return f"make exited with status {done.returncode}" if done.returncode else ""


def build_program(
    name: str,
    source: Path,
    make_args: Sequence[str],
    programs: Sequence[str],
    where: str = "target.server.source",
    cache: str = "",
    notes: Mapping[str, str] | None = None,
    root: Path | None = None,
) -> Built:
    """`programs` (paths relative to the folder of the top Makefile, ``src/x-server``) built
    from `source` with ``make make_args``, now unless a build of the same key is cached.
    `where` is the option errors name; `cache` the folder under the cache root (`name`),
    or `root` the folder itself; `notes` are files written beside the programs (name:
    text), such as the source's commit."""
    root = root or cache_root(cache or name)
    root.mkdir(parents=True, exist_ok=True)
    key = build_key(name, source, make_args)
    final = root / key
    with _locked(root / f"{key}.lock"):
        if all((final / Path(p).name).is_file() for p in programs):
            return Built(final, key)
        _require_tools(name, where)
        work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=root))
        log = root / f"{key}.build.log"
        try:
            folder = _unpack(source, work / "tree", where)
            failed = _make(folder, make_args, log)
            missing = [p for p in programs if not (folder / p).is_file()]
            if failed or missing:
                why = failed or f"no {', '.join(missing)} after make"
                raise TargetError(f"building {name} failed ({why}); build log: {log}", where)
            staged = work / "out"
            staged.mkdir()
            for p in programs:
                shutil.copy2(folder / p, staged / Path(p).name)
            shutil.copy2(log, staged / "build.log")
            for note, text in (notes or {}).items():
                (staged / note).write_text(text)
            os.rename(staged, final)
            log.unlink(missing_ok=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return Built(final, key)
