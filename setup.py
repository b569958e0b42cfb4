"""Ships profiles/ inside the package (as workbench/profiles) when a wheel is built, so an
installed workbench finds its profiles; everything else is declared in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithProfiles(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "workbench" / "profiles"
        self.mkpath(str(target))
        for profile in sorted(Path("profiles").glob("*.toml")):
            self.copy_file(str(profile), str(target / profile.name))


setup(cmdclass={"build_py": BuildWithProfiles})
