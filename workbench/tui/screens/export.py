"""Export: a stored run or a comparison as a report, previewed, then saved to a file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Markdown, Select, Static

from workbench.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp

EXTENSIONS = {"json": "json", "csv": "csv", "hlog": "hlog"}


def report_formats() -> tuple[dict[str, str], tuple[str, ...]] | None:
    """The report package's formats (name → description) and which are markdown; None if
    the package is not there yet."""
    try:
        from workbench import report
    except ImportError:
        return None
    formats = getattr(report, "FORMATS", None)
    if not hasattr(report, "render") or not formats:
        return None
    markdown = tuple(getattr(report, "MARKDOWN", tuple(formats)))
    return {
        name: str(v[1]) if isinstance(v, tuple) else str(v) for name, v in formats.items()
    }, markdown


def render_report(runs: list[Any], fmt: str) -> str:
    from workbench.report import render

    return render(runs, fmt)


class ExportScreen(ModalScreen[None]):
    """Pick a format, read the preview, save it."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("ctrl+s", "save", "Save"),
        Binding("f6", "toggle_source", "Source/preview"),
    ]

    def __init__(self, run_ids: list[str]) -> None:
        super().__init__(classes="dialog-screen")
        self.run_ids = run_ids
        self.text = ""
        self.show_source = False
        self._auto_path = ""
        found = report_formats()
        self.formats, self.markdown = found if found else ({}, ())

    @property
    def wb(self) -> WorkbenchApp:
        return cast("WorkbenchApp", self.app)

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
                    value=next(iter(self.formats), Select.NULL),
                    allow_blank=not self.formats,
                    compact=True,
                    id="format",
                )
            yield Static(id="format-help", classes="hint")
            with Horizontal(classes="field-row"):
                yield Label("file", classes="field-label")
                yield Input(compact=True, id="export-path")
                yield Button("Save", compact=True, variant="primary", id="export-save")
                yield Button("Close", compact=True, id="export-close")
            with VerticalScroll(id="export-preview"):
                yield Markdown(id="export-markdown")
                yield Static(id="export-source")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#export-preview").border_title = "Preview"
        self.query_one("#export-preview").border_subtitle = "F6 source/preview"
        self.refresh_preview()

    def _format(self) -> str:
        value = self.query_one("#format", Select).value
        return "" if value is Select.NULL else str(value)

    def refresh_preview(self) -> None:
        md = self.query_one("#export-markdown", Markdown)
        source = self.query_one("#export-source", Static)
        fmt = self._format()
        if not self.formats:
            self.text = ""
            md.display = False
            source.display = True
            source.update(
                "Reports are not available in this build yet: the workbench.report package "
                "has no render(). The run is stored; `workbench runs show` prints it."
            )
            return
        try:
            runs = [self.wb.store.load(rid) for rid in self.run_ids]
            self.text = render_report(runs, fmt)
        except WorkbenchError as exc:
            self.text = ""
            md.display = False
            source.display = True
            source.update(f"Cannot export: {exc}")
            return
        is_md = fmt in self.markdown
        self.query_one("#format-help", Static).update(self.formats.get(fmt, ""))
        md.display = is_md and not self.show_source
        source.display = not md.display
        if md.display:
            md.update(self.text)
        else:
            from rich.text import Text

            source.update(Text(self.text))
        ext = "md" if is_md else EXTENSIONS.get(fmt, "txt")
        stem = self.run_ids[0] if len(self.run_ids) == 1 else "comparison"
        path_box = self.query_one("#export-path", Input)
        if path_box.value in ("", self._auto_path):
            self._auto_path = path_box.value = f"{stem}-{fmt}.{ext}"

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
        path = Path(self.query_one("#export-path", Input).value.strip()).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.text)
        except OSError as exc:
            self.notify(f"Not saved: {exc}", severity="error")
            return
        self.notify(f"Saved {path}")
