"""The command palette (Ctrl+P): every App key binding, two palette-only actions, profiles.

The commands are read from the App's own `BINDINGS` (a binding's description names the
command, its tooltip says what it does), so a key added there is findable by name here
without this module knowing the App.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from workbench.tui.context import ScreenContext
from workbench.tui.messages import OpenProfile

# Actions of the App that no key starts: (name, action, what it does).
PALETTE_ONLY = (
    ("Export last run", "export_last", "a report with preview"),
    (
        "Search for the highest rate",
        "search",
        "open-loop probes of the set-up until a latency target breaks (p99<1ms)",
    ),
)

Command = tuple[str, Callable[[], object], str]


def key_name(key: str) -> str:
    """A binding's key as people write it: "ctrl+r" -> "Ctrl+R", "f2" -> "F2"."""
    parts = key.split(",")[0].split("+")
    return "+".join(p.upper() if len(p) == 1 or p[0] == "f" else p.capitalize() for p in parts)


class WorkbenchCommands(Provider):
    """Everything the keys do, findable by name, plus one command per profile."""

    def commands(self) -> list[Command]:
        app = self.app
        cmds: list[Command] = []
        for binding in app.BINDINGS:
            if isinstance(binding, Binding):
                key = key_name(binding.key)
                help_text = f"{binding.tooltip} ({key})" if binding.tooltip else key
                run_it = partial(app.run_action, binding.action)
                cmds.append((binding.description, run_it, help_text))
        for name, action, help_text in PALETTE_ONLY:
            cmds.append((name, partial(app.run_action, action), help_text))
        context = getattr(app, "context", None)
        if isinstance(context, ScreenContext):
            for path in sorted(context.profiles_dir.glob("*.toml")):
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
