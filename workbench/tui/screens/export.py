"""Export: a stored run or a comparison as a report, previewed, then saved to a file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Markdown, Select, Static

from workbench.report import FORMATS, MARKDOWN, render
from workbench.results.store import Store
from workbench.sdk.errors import WorkbenchError
from workbench.tui.context import ScreenContext
from workbench.tui.layout import key_footer

EXTENSIONS = {"json": "json", "csv": "csv", "hlog": "hlog", "html": "html", "svg": "svg"}


def render_report(store: Store, run_ids: list[str], fmt: str) -> str:
    """Read the runs and render them: blocking work, run in a thread."""
    return render([store.load(rid) for rid in run_ids], fmt)


class ExportScreen(ModalScreen[None]):
    """Pick a format, read the preview, save it."""

    HELP = (
        "A stored run, or a comparison, as a report: pick a format, read the preview, and "
        "save it; the dialog shows the full path the file goes to."
    )

    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("ctrl+s", "save", "Save"),
        Binding("f6", "toggle_source", "Source/preview"),
    ]

    def __init__(self, context: ScreenContext, run_ids: list[str]) -> None:
        super().__init__(classes="dialog-screen")
        self.context = context
        self.run_ids = run_ids
        self.text = ""
        self.show_source = False
        self._auto_path = ""
        self.formats = {name: description for name, (_, description) in FORMATS.items()}

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            n = len(self.run_ids)
            yield Label(
                f"Export {'run ' + self.run_ids[0] if n == 1 else f'a comparison of {n} runs'}",
                classes="dialog-title",
            )
            with Horizontal(classes="field-row"):
                yield Label("format", classes="field-label")
                yield Select(
                    [(k, k) for k in self.formats],
                    value=next(iter(self.formats)),
                    allow_blank=False,
                    compact=True,
                    id="format",
                )
            yield Static(id="format-help", classes="hint")
            with Horizontal(classes="field-row"):
                yield Label("save to", classes="field-label")
                yield Input(compact=True, id="export-path")
                yield Button("Save", compact=True, variant="primary", id="export-save")
                yield Button("Close", compact=True, id="export-close")
            yield Static(id="export-where", classes="hint")
            with VerticalScroll(id="export-preview"):
                yield Markdown(id="export-markdown")
                yield Static(id="export-source")
        yield key_footer()

    def on_mount(self) -> None:
        self.query_one("#export-preview").border_title = "Preview"
        self.query_one("#export-preview").border_subtitle = "F6 source/preview"
        self.query_one("#export-path", Input).focus()  # where it goes is the question asked
        self.refresh_preview()

    def target(self) -> Path:
        """The file Save writes: the path typed, from the current directory if relative."""
        typed = self.query_one("#export-path", Input).value.strip()
        return (Path.cwd() / Path(typed).expanduser()).resolve()

    @on(Input.Changed, "#export-path")
    def _show_where(self) -> None:
        where = self.query_one("#export-where", Static)
        typed = self.query_one("#export-path", Input).value.strip()
        where.update(f"the file: {self.target()}" if typed else "type where to save it")

    def _format(self) -> str:
        value = self.query_one("#format", Select).value
        return "" if value is Select.NULL else str(value)

    @work(group="export", exclusive=True, exit_on_error=False)
    async def refresh_preview(self) -> None:
        """Render the report off the UI loop, then show it."""
        fmt = self._format()
        try:
            self.text = await asyncio.to_thread(
                render_report, self.context.store, self.run_ids, fmt
            )
        except WorkbenchError as exc:
            self.text = ""
            self._show_source(f"Cannot export: {exc}")
            return
        self._show(fmt)

    def _show_source(self, text: str) -> None:
        self.query_one("#export-markdown", Markdown).display = False
        source = self.query_one("#export-source", Static)
        source.display = True
        source.update(Text(text))

    def _show(self, fmt: str) -> None:
        is_md = fmt in MARKDOWN
        self.query_one("#format-help", Static).update(self.formats.get(fmt, ""))
        if is_md and not self.show_source:
            md = self.query_one("#export-markdown", Markdown)
            md.display = True
            self.query_one("#export-source", Static).display = False
            md.update(self.text)
        else:
            self._show_source(self.text)
        ext = "md" if is_md else EXTENSIONS.get(fmt, "txt")
        stem = self.run_ids[0] if len(self.run_ids) == 1 else "comparison"
        path_box = self.query_one("#export-path", Input)
        if path_box.value in ("", self._auto_path):
            self._auto_path = path_box.value = str(Path.cwd() / f"{stem}-{fmt}.{ext}")

    @on(Select.Changed, "#format")
    def _format_changed(self) -> None:
        self.refresh_preview()

    def action_toggle_source(self) -> None:
        self.show_source = not self.show_source
        self.refresh_preview()

    @on(Button.Pressed, "#export-close")
    def _close(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#export-save")
    @on(Input.Submitted, "#export-path")
    def action_save(self) -> None:
        if not self.text:
            self.notify("Nothing to save.", severity="warning")
            return
        if not self.query_one("#export-path", Input).value.strip():
            self.notify("Not saved: type where to save it.", severity="warning")
            return
        path = self.target()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.text)
        except OSError as exc:
            self.notify(f"Not saved: {exc}", severity="error")
            return
        self.notify(f"Saved {path}", timeout=4)
