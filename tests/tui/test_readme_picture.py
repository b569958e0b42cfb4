"""The README's picture of the workbench is current, and the script that draws it works.

docs/images/make-tui-picture.py draws it from a real run on the embedded cache (so its
figures differ every time) and records a digest of the sources that draw the dashboard;
run it after a change to them, look at the picture, and commit it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "images" / "make-tui-picture.py"


def maker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_tui_picture", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_picture_was_drawn_by_the_dashboard_of_today() -> None:
    drawing = maker()
    assert "docs/images/tui.svg" in (ROOT / "README.md").read_text()
    assert drawing.drawn_from(drawing.PICTURE.read_text()) == drawing.sources_digest(), (
        "the dashboard's sources changed since docs/images/tui.svg was drawn: run "
        ".venv/bin/python docs/images/make-tui-picture.py, look at it, and commit it"
    )


async def test_the_script_draws_a_real_run_on_the_run_dashboard() -> None:
    drawing = maker()
    shorter = ("-w", "1", "--set", "load.warmup=0", "--set", "workload.prefill=false")
    svg = await drawing.picture(seconds=0.3, sweep="[16]", extra=shorter)
    assert drawing.drawn_from(svg) == drawing.sources_digest()
    text = svg.replace("&#160;", " ")
    for title in ("Throughput", "Latency", "Counters", "Steps", "concurrency=16"):
        assert title in text, title
