"""The README's picture of the workbench is current: drawn again, it is the same SVG.

docs/images/make-tui-picture.py draws it (the Run screen during a sweep, from fixed
figures, as Textual saves a screenshot); run it after a change to what the Run screen
shows, look at the picture, and commit it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "images" / "make-tui-picture.py"


async def test_the_readme_picture_is_what_the_tui_draws_today() -> None:
    spec = importlib.util.spec_from_file_location("make_tui_picture", SCRIPT)
    assert spec is not None and spec.loader is not None
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    drawn = await maker.picture()
    assert "docs/images/tui.svg" in (ROOT / "README.md").read_text()
    assert drawn == maker.PICTURE.read_text(), (
        "docs/images/tui.svg is not what the TUI draws: run "
        ".venv/bin/python docs/images/make-tui-picture.py, look at it, and commit it"
    )
