"""Where profiles are found: `profiles/` in the current directory, the one of a source
checkout, or the copy shipped inside the installed package (read only: never saved into)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # workbench/, this file being in spec/
SHIPPED = _PACKAGE / "profiles"  # package data of an installed wheel (see setup.py)
CHECKOUT = _PACKAGE.parent / "profiles"  # a source checkout or editable install


def shipped_dir() -> Path | None:
    """The profiles that came with the workbench, wherever it is installed."""
    for folder in (SHIPPED, CHECKOUT):
        if folder.is_dir() and any(folder.glob("*.toml")):
            return folder
    return None


def profiles_dir() -> Path:
    """`profiles/` here when there is one, else the shipped profiles."""
    here = Path("profiles")
    if here.is_dir():
        return here
    return shipped_dir() or here


def is_shipped(path: Path) -> bool:
    """True for a file inside the installed package (site-packages): never written to."""
    try:
        path.resolve().relative_to(_PACKAGE)
    except ValueError:
        return False
    return True


def find_profile(ref: Path) -> Path:
    """`ref` itself when it exists; else a profile of that name (`quick`, `quick.toml`) in
    `profiles/` here or among the shipped ones; else `ref` (its loader names it missing)."""
    if ref.exists() or ref.parent != Path("."):
        return ref
    name = ref.name if ref.suffix == ".toml" else f"{ref.name}.toml"
    for folder in (Path("profiles"), shipped_dir()):
        if folder is not None and (folder / name).is_file():
            return folder / name
    return ref
