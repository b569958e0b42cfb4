"""The command palette (Ctrl+P): every key of the App and of the screen it was opened on,
two palette-only actions, and the profiles.

The commands are read from the `BINDINGS` themselves (a binding's description names the
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
from workbench.tui.screens.help import key_name

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


class WorkbenchCommands(Provider):
    """Everything the keys do, findable by name, plus one command per profile."""

    def commands(self) -> list[Command]:
        app = self.app
        cmds: list[Command] = []
        seen: set[str] = set()
        for owner, bindings in ((app, app.BINDINGS), (self.screen, self.screen.BINDINGS)):
            keys: dict[str, list[str]] = {}
            named: dict[str, Binding] = {}
            for binding in bindings:
                if isinstance(binding, Binding):
                    keys.setdefault(binding.action, []).append(
                        binding.key_display or key_name(binding.key)
                    )
                    if binding.action not in named or binding.tooltip:
                        named[binding.action] = binding
            for action, binding in named.items():
                if binding.description in seen:
                    continue
                seen.add(binding.description)
                key = " / ".join(keys[action])
                help_text = f"{binding.tooltip} ({key})" if binding.tooltip else key
                cmds.append(
                    (binding.description, partial(app.run_action, action, owner), help_text)
                )
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
