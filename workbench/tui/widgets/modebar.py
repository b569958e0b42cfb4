"""The top line of every screen: the modes (clickable, with their keys) and the run's state."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from workbench.results.live import RunView
from workbench.tui.figures import format_rate

MODES = (
    ("setup", "F2", "Setup"),
    ("run", "F3", "Run"),
    ("history", "F4", "History"),
    ("compare", "F5", "Compare"),
)


def run_state(view: RunView) -> Text:
    """A few words on the run in progress (or the last one), for every screen."""
    if not view.run_id:
        return Text("no run yet", style="dim")
    text = Text(no_wrap=True, overflow="ellipsis")
    if view.status == "running":
        text.append("● ", style="green")
        step = view.step
        if step is not None:
            if len(view.steps) > 1:
                text.append(f"step {step.index + 1}/{len(view.steps)} ")
            if step.latest is not None:
                text.append(f"{format_rate(step.latest.ops_per_s)} ops/s ")
            elif not step.points:
                text.append("warming up ", style="yellow")
        text.append(view.name, style="bold")
    else:
        style = {"completed": "green", "interrupted": "yellow", "failed": "red"}.get(
            view.status, ""
        )
        text.append("■ ", style=style)
        text.append(f"{view.name} ", style="bold")
        text.append(view.status, style=style)
    return text


class ModeBar(Horizontal):
    """Mode tabs on the left, the run's state on the right."""

    DEFAULT_CSS = """
    ModeBar {
        height: 1;
        dock: top;
        background: $panel;
    }
    ModeBar > #modes { width: auto; }
    ModeBar > #state { width: 1fr; text-align: right; padding: 0 1; }
    """

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    def compose(self) -> ComposeResult:
        parts = []
        for name, key, label in MODES:
            if name == self.mode:
                parts.append(f"[reverse bold] {key} {label} [/]")
            else:
                parts.append(f"[@click=app.switch_mode('{name}')] [dim]{key}[/] {label} [/]")
        yield Static("".join(parts), id="modes")
        yield Static(id="state")

    def on_mount(self) -> None:
        self.watch(self.app, "live", self._show_state)

    def _show_state(self, view: RunView) -> None:
        self.query_one("#state", Static).update(run_state(view))
