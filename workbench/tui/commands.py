"""The command palette (Ctrl+P): modes, the run, profiles, export and the theme."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp


class WorkbenchCommands(Provider):
    """Everything the keys do, findable by name, plus one command per profile."""

    def commands(self) -> list[tuple[str, Callable[[], object], str]]:
        app = cast("WorkbenchApp", self.app)
        cmds: list[tuple[str, Callable[[], object], str]] = [
            ("Setup", partial(app.switch_mode, "setup"), "edit the experiment (F2)"),
            ("Run", partial(app.switch_mode, "run"), "watch the live run (F3)"),
            ("History", partial(app.switch_mode, "history"), "stored runs (F4)"),
            ("Compare", partial(app.switch_mode, "compare"), "compare selected runs (F5)"),
            ("Start run", app.action_start_run, "run the set-up (Ctrl+R)"),
            ("Stop run", app.action_stop_run, "stop, keeping what was measured (F8)"),
            ("Toggle light/dark theme", app.action_toggle_theme, "Ctrl+T"),
            ("Export last run", partial(_export_last, app), "markdown report with preview"),
            (
                "Search for the highest rate",
                partial(_search, app),
                "open-loop probes of the set-up until a latency target breaks (p99<1ms)",
            ),
        ]
        for path in sorted(app.profiles_dir.glob("*.toml")):
            cmds.append((f"Load profile {path.stem}", partial(app.load_profile, path), str(path)))
        return cmds

    async def discover(self) -> Hits:
        for name, callback, help_text in self.commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self.commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)


def _export_last(app: WorkbenchApp) -> None:
    from workbench.tui.screens.export import ExportScreen

    rows = app.store.list_runs(limit=1)
    if not rows:
        app.notify("No stored runs to export yet.", severity="warning")
        return
    app.push_screen(ExportScreen([rows[0].id]))


def _search(app: WorkbenchApp) -> None:
    """Ask for a target, then search the Setup draft's highest rate meeting it."""
    from workbench.tui.screens.dialogs import AskText

    spec = app.draft.spec
    if spec is None:
        first = app.draft.errors[0] if app.draft.errors else "nothing to run yet"
        app.notify(f"Fix the set-up first: {first}", severity="error")
        app.switch_mode("setup")
        return
    wanted = ", ".join(spec.search.target) if spec.search and spec.search.target else "p99<1ms"

    def chosen(target: str | None) -> None:
        if target and app.start_search(spec, target):
            app.switch_mode("run")

    app.push_screen(AskText("Search target, e.g. p99<1ms, errors<0.1%", wanted), chosen)
