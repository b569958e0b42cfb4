"""Draws the README's picture of the workbench: a real run on the embedded cache (quick's
workload swept over 1, 4 and 16 clients, a few seconds a step), opened from History on
the Run dashboard, as Textual saves a screenshot itself (SVG).

    .venv/bin/python docs/images/make-tui-picture.py      # runs it, writes docs/images/tui.svg

The figures are this machine's at that moment, so no two pictures are the same; the
picture records a digest of the sources that draw the dashboard (SOURCES), and
tests/tui/test_readme_picture.py fails when those have changed since: run this script
again, look at the picture, and commit it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from workbench.tui.app import make_app

ROOT = Path(__file__).resolve().parents[2]
PICTURE = ROOT / "docs" / "images" / "tui.svg"
SIZE = (120, 34)  # columns, rows: wide enough for every panel, short enough for a page
SWEEP = "[1,4,16]"

# What draws the Run dashboard of a stored run (and this script): a change to any of them
# may change the picture.
TUI = ROOT / "workbench" / "tui"
SOURCES = (
    TUI / "widgets" / "dashboard.py",
    TUI / "widgets" / "chart.py",
    TUI / "widgets" / "fitted.py",
    TUI / "widgets" / "modebar.py",
    TUI / "screens" / "history.py",
    TUI / "layout.py",
    TUI / "figures.py",
    TUI / "workbench.tcss",
    Path(__file__).resolve(),
)
MARK = "<!-- drawn from the dashboard's sources sha256:{} -->\n"


def sources_digest() -> str:
    """One digest of SOURCES' contents, in their order."""
    digest = hashlib.sha256()
    for path in SOURCES:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def drawn_from(svg: str) -> str | None:
    """The digest a picture records, if it records one."""
    found = re.match(r"<!-- drawn from the dashboard's sources sha256:([0-9a-f]+) -->\n", svg)
    return found.group(1) if found else None


def record_run(store: Path, seconds: float, sweep: str, extra: tuple[str, ...]) -> str:
    """A real sweep on the embedded cache into `store`; its run id."""
    name = "quick c" + sweep.strip("[]")
    done = subprocess.run(
        [sys.executable, "-m", "workbench.cli.main", "run", "quick", "--print-id", "-q",
         "--name", name, "-c", sweep, "--test-time", f"{seconds}s", *extra],
        env={**os.environ, "WORKBENCH_STORE": str(store)},
        capture_output=True, text=True, timeout=120 + 10 * seconds, check=True,
    )  # fmt: skip
    return done.stdout.strip()


async def picture(seconds: float = 3.0, sweep: str = SWEEP, extra: tuple[str, ...] = ()) -> str:
    """The screenshot's SVG text, headed by the digest of what drew it. `extra`: more
    arguments of the run (a test's shorter one)."""
    os.environ["TZ"] = "UTC"
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "runs.sqlite3"
        await asyncio.to_thread(record_run, store, seconds, sweep, extra)
        app = make_app(store, profiles_dir=Path(folder))
        async with app.run_test(size=SIZE) as pilot:
            await app.switch_mode("history")
            for key in (None, "enter"):  # the runs listed, then the newest one opened
                if key:
                    await pilot.press(key)
                for _ in range(3):
                    await pilot.pause()
                    await app.workers.wait_for_complete()
            svg = app.export_screenshot(title="Cache Workbench")
    return MARK.format(sources_digest()) + svg


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else PICTURE
    out.write_text(asyncio.run(picture()))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
