"""Ships profiles/ inside the package (as workbench/profiles) when a wheel is built, so an
installed workbench finds its profiles, and builds the native engine (native/, Rust) into
the package as workbench/bin/workbench-native when cargo is on PATH, so that `pip install .`
gives the engine too. Everything else is declared in pyproject.toml.

WORKBENCH_BUILD_NATIVE=0 skips the engine (./dev builds it itself, beside the venv's Python);
without cargo the package installs without it and the native strategies say how to get it.
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

try:  # setuptools >= 70 has its own; older ones use the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # pragma: no cover
    from wheel.bdist_wheel import bdist_wheel  # type: ignore[no-redef]

NATIVE = Path("native")
BINARY = "workbench-native"


def _cargo() -> str | None:
    """The cargo that builds the engine, as ./dev picks it: WORKBENCH_CARGO, else the one on
    PATH. The same one as ./dev's build finds its release build in native/target up to date
    (another toolchain would rebuild the whole crate, minutes on 2 cores)."""
    return os.environ.get("WORKBENCH_CARGO") or shutil.which("cargo")


def _wants_native() -> bool:
    return (
        os.environ.get("WORKBENCH_BUILD_NATIVE", "1") != "0"
        and (NATIVE / "Cargo.toml").is_file()
        and _cargo() is not None
    )


def _cargo_build() -> Path:
    """`cargo build --release` of native/; a cargo before 1.68 (Debian 12's 0.66 with rustc
    1.63) reaches crates.io through the sparse index as ./dev does."""
    cargo = _cargo() or "cargo"
    version = subprocess.run([cargo, "--version"], capture_output=True, text=True, check=True)
    minor = int(version.stdout.split()[1].split(".")[1])
    env = dict(os.environ)
    args = [cargo]
    if minor < 68:
        env.update(RUSTC_BOOTSTRAP="1", CARGO_REGISTRIES_CRATES_IO_PROTOCOL="sparse")
        args += ["-Z", "sparse-registry"]
    args += ["build", "--release", "--quiet", "--manifest-path", str(NATIVE / "Cargo.toml")]
    subprocess.run(args, check=True, env=env)
    target = Path(env.get("CARGO_TARGET_DIR") or NATIVE / "target")
    return target / "release" / BINARY


class BuildWithProfiles(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "workbench" / "profiles"
        self.mkpath(str(target))
        for profile in sorted(Path("profiles").glob("*.toml")):
            self.copy_file(str(profile), str(target / profile.name))
        self.mkpath(str(target / "traces"))
        for trace in sorted(Path("profiles/traces").glob("*.zst")):  # the profiles' samples
            self.copy_file(str(trace), str(target / "traces" / trace.name))
        bin_dir = Path(self.build_lib) / "workbench" / "bin"
        if bin_dir.exists():  # a build folder reused from an earlier build with cargo
            shutil.rmtree(bin_dir)
        if _wants_native():
            built = _cargo_build()
            self.mkpath(str(bin_dir))
            self.copy_file(str(built), str(bin_dir / BINARY))
            os.chmod(bin_dir / BINARY, 0o755)


class PlatformWheel(bdist_wheel):
    """A wheel holding the engine binary is for this platform only."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if _wants_native():
            self.root_is_pure = False


setup(cmdclass={"build_py": BuildWithProfiles, "bdist_wheel": PlatformWheel})
