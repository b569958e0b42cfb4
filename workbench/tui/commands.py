"""The command palette (Ctrl+P): modes, the run, profiles, export and the theme."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from workbench.tui.messages import OpenProfile

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp


class WorkbenchCommands(Provider):
    """Everything the keys do, findable by name, plus one command per profile.

    The palette is the App's own (its actions and messages), so it knows the App's type.
    """

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
            ("Export last run", app.action_export_last, "a report with preview"),
            (
                "Search for the highest rate",
                app.action_search,
                "open-loop probes of the set-up until a latency target breaks (p99<1ms)",
            ),
        ]
        for path in sorted(app.context.profiles_dir.glob("*.toml")):
            open_it = partial(app.post_message, OpenProfile(path))
            cmds.append((f"Load profile {path.stem}", open_it, str(path)))
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
