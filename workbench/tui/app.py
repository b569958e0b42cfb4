"""The interactive workbench: modes, bindings, and the one run worker (owned by the App).

The run worker lives here and not on a screen, so that switching to History or Compare
never stops a run. It is a plain `async for event in session.run(...)`, exactly as the
CLI's; each event becomes a new immutable `RunView` in the `live` reactive, which every
screen watches.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.reactive import var
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from workbench.results.events import Event
from workbench.results.live import RunView
from workbench.results.search_rules import search_spec
from workbench.results.store import Store
from workbench.run import session
from workbench.run.search import SearchRun
from workbench.sdk.errors import SpecError, WorkbenchError
from workbench.spec.model import Spec
from workbench.spec.profile_files import profiles_dir
from workbench.tui.commands import WorkbenchCommands
from workbench.tui.context import ScreenContext
from workbench.tui.help import help_sections
from workbench.tui.messages import (
    CompareRuns,
    DeleteRun,
    Draft,
    DraftChanged,
    ExportRuns,
    OpenProfile,
    RenameRun,
)
from workbench.tui.screens.compare import CompareScreen
from workbench.tui.screens.dialogs import AskText
from workbench.tui.screens.export import ExportScreen
from workbench.tui.screens.help import HelpScreen
from workbench.tui.screens.history import HistoryScreen
from workbench.tui.screens.run import RunScreen
from workbench.tui.screens.setup import SetupScreen

# How a finished run is announced, by its status (a completed one as information).
SEVERITY: dict[str, SeverityLevel] = {"failed": "error", "interrupted": "warning"}


def default_profiles_dir() -> Path:
    """`profiles/` here, else the ones shipped with the workbench."""
    return profiles_dir()


class WorkbenchApp(App[None]):
    """Setup, Run, History and Compare modes over one results store."""

    TITLE = "Cache Workbench"
    CSS_PATH = "workbench.tcss"
    DEFAULT_MODE = "setup"
    COMMANDS = App.COMMANDS | {WorkbenchCommands}
    # The command palette (tui/commands.py) lists these by description, with the tooltip.
    BINDINGS = [
        Binding(
            "f1",
            "show_help",
            "Help",
            priority=True,
            tooltip="every screen, key and action",
            id="help",
        ),
        # Not a priority binding: in a text field, ? is typed.
        Binding("question_mark", "show_help", "Help", show=False, key_display="?"),
        Binding(
            "f2",
            "switch_mode('setup')",
            "Setup",
            show=False,
            tooltip="edit the experiment",
            id="mode.setup",
        ),
        Binding(
            "f3",
            "switch_mode('run')",
            "Run",
            show=False,
            tooltip="watch the live run",
            id="mode.run",
        ),
        Binding(
            "f4",
            "switch_mode('history')",
            "History",
            show=False,
            tooltip="stored runs",
            id="mode.history",
        ),
        Binding(
            "f5",
            "switch_mode('compare')",
            "Compare",
            show=False,
            tooltip="compare selected runs",
            id="mode.compare",
        ),
        Binding(
            "ctrl+r",
            "start_run",
            "Start",
            priority=True,
            tooltip="run the set-up",
            id="run.start",
        ),
        Binding(
            "f8",
            "stop_run",
            "Stop",
            priority=True,
            tooltip="stop, keeping what was measured",
            id="run.stop",
        ),
        Binding(
            "ctrl+t",
            "toggle_theme",
            "Theme",
            show=False,
            tooltip="toggle the light/dark theme",
            id="theme",
        ),
        # Not a priority binding: a focused text field takes the q as a letter.
        Binding("q", "quit", "Quit", show=False, tooltip="quit the workbench", id="quit"),
    ]

    live: var[RunView] = var(RunView, always_update=True)
    draft: var[Draft] = var(Draft)
    compare_ids: var[tuple[str, ...]] = var((), always_update=True)
    stored_changes: var[int] = var(0)  # bumped when a stored run is renamed or deleted

    def __init__(
        self,
        store: Store,
        *,
        profiles_dir: Path | None = None,
        theme: str | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.profiles_dir = profiles_dir or default_profiles_dir()
        self.context = ScreenContext(store, self.profiles_dir)
        # Each mode's screen is built with the context it reads through (Run reads `live`).
        self.add_mode("setup", partial(SetupScreen, self.context))
        self.add_mode("run", RunScreen)
        self.add_mode("history", partial(HistoryScreen, self.context))
        self.add_mode("compare", partial(CompareScreen, self.context))
        self.stop_event = asyncio.Event()
        self.run_worker_: Worker[None] | None = None
        self.searching: SearchRun | None = None  # the search the run worker runs, if one
        if theme:
            self.theme = theme

    # -- the run --------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        w = self.run_worker_
        return w is not None and w.state in (WorkerState.PENDING, WorkerState.RUNNING)

    def start(self, spec: Spec, name: str | None = None) -> bool:
        """Start `spec` in the app's run worker; False (with a notice) if one is going."""
        if self.running:
            self.notify("A run is in progress: F8 stops it.", severity="warning")
            return False
        self.stop_event = asyncio.Event()
        self.run_worker_ = self.run_worker(
            self._drive(spec, name),
            name="run",
            group="runs",
            exclusive=True,
            exit_on_error=False,
        )
        self.refresh_bindings()
        return True

    async def _drive(self, spec: Spec, name: str | None) -> None:
        await self._follow(session.run(spec, self.store, stop=self.stop_event, name=name))

    async def _follow(self, events: AsyncIterator[Event]) -> None:
        view = RunView()
        async for event in events:
            view = view.apply(event)
            self.live = view

    def start_search(self, spec: Spec, target: str) -> bool:
        """Search for the highest rate meeting `target` ("p99<1ms, errors<0.1%") in the run
        worker: each probe is a step of the live run; the conclusion is a notification."""
        if self.running:
            self.notify("A run is in progress: F8 stops it.", severity="warning")
            return False
        try:
            spec, checks = search_spec(spec, [t.strip() for t in target.split(",") if t.strip()])
        except SpecError as exc:
            self.notify(f"Cannot search: {exc}", severity="error")
            return False
        self.stop_event = asyncio.Event()
        self.searching = SearchRun(spec, checks)
        self.run_worker_ = self.run_worker(
            self._follow(self.searching.events(self.store, stop=self.stop_event, notices=True)),
            name="search",
            group="runs",
            exclusive=True,
            exit_on_error=False,
        )
        self.refresh_bindings()
        return True

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.run_worker_:
            return
        self.refresh_bindings()
        if event.state == WorkerState.ERROR:
            self.notify(f"The run could not start: {event.worker.error}", severity="error")
        elif event.state == WorkerState.SUCCESS:
            v = self.live
            severity = SEVERITY.get(v.status, "information")
            found = ""
            if event.worker.name == "search" and self.searching is not None:
                found = f" Search: {self.searching.search.conclusion()}."
            # Short, and at the top (workbench.tcss): the result it announces stays in sight.
            self.notify(
                f"{v.status.capitalize()}: {v.name}"
                + (f": {v.error}" if v.error else "")
                + (f".{found}" if found else ". F4: History"),
                severity=severity,
                timeout=10 if found else 3,
            )

    def action_start_run(self) -> None:
        draft = self.draft
        if draft.spec is None:
            first = draft.errors[0] if draft.errors else None
            self.notify(
                f"Fix the set-up first: {first}" if first else "Nothing to run yet.",
                severity="error",
            )
            self.switch_mode("setup")
            return
        if self.start(draft.spec):
            self.switch_mode("run")

    def action_stop_run(self) -> None:
        if self.running and not self.stop_event.is_set():
            self.stop_event.set()
            self.notify("Stopping: what was measured is kept.")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "start_run":
            return not self.running
        if action == "stop_run":
            return self.running
        return True

    async def action_quit(self) -> None:
        if self.running:
            self.stop_event.set()
            self.notify("Stopping the run before quitting…")
            worker = self.run_worker_
            if worker is not None:
                # The session marks the run interrupted either way.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(worker.wait(), timeout=15)
        self.exit()

    # -- app-level messages and commands --------------------------------------------------

    @on(DraftChanged)
    def _keep_draft(self, message: DraftChanged) -> None:
        self.draft = message.draft

    @on(CompareRuns)
    def _compare(self, message: CompareRuns) -> None:
        self.compare_ids = tuple(message.run_ids)
        self.switch_mode("compare")

    def action_show_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(help_sections(self.BINDINGS)))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's, with its "Keys" panel (a widget's own keys) replaced by the help."""
        for command in super().get_system_commands(screen):
            if command.title != "Keys":
                yield command
        yield SystemCommand("Help", "every screen, key and action (F1)", self.action_show_help)

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    @on(OpenProfile)
    def _open_profile(self, message: OpenProfile) -> None:
        self.switch_mode("setup")
        screen = self.screen
        if isinstance(screen, SetupScreen):
            screen.load_profile(message.path)

    @on(ExportRuns)
    def _export(self, message: ExportRuns) -> None:
        self.push_screen(ExportScreen(self.context, message.run_ids))

    @on(RenameRun)
    def _rename(self, message: RenameRun) -> None:
        self._change_store(
            partial(self.store.rename, message.run_id, message.name),
            f"Renamed to {message.name!r}",
        )

    @on(DeleteRun)
    def _delete(self, message: DeleteRun) -> None:
        if self.running and self.live.run_id == message.run_id:
            self.notify("That run is still going: stop it first (F8).", severity="warning")
            return
        self._change_store(partial(self.store.delete, message.run_id), f"Deleted {message.label}")

    @work(group="store-writes", exit_on_error=False)
    async def _change_store(self, change: Callable[[], Any], done: str) -> None:
        """A write to the store, off the UI loop; screens that list runs then refresh."""
        try:
            await asyncio.to_thread(change)
        except WorkbenchError as exc:
            self.notify(str(exc), severity="error")
            return
        self.stored_changes += 1
        self.notify(done)

    def action_search(self) -> None:
        """Ask for a target, then search the Setup draft's highest rate meeting it."""
        spec = self.draft.spec
        if spec is None:
            first = self.draft.errors[0] if self.draft.errors else "nothing to run yet"
            self.notify(f"Fix the set-up first: {first}", severity="error")
            self.switch_mode("setup")
            return
        wanted = ", ".join(spec.search.target) if spec.search and spec.search.target else "p99<1ms"

        def chosen(target: str | None) -> None:
            if target and self.start_search(spec, target):
                self.switch_mode("run")

        self.push_screen(AskText("Search target, e.g. p99<1ms, errors<0.1%", wanted), chosen)

    @work(group="store-reads", exclusive=True, exit_on_error=False)
    async def action_export_last(self) -> None:
        rows = await asyncio.to_thread(self.store.list_runs, 1)
        if not rows:
            self.notify("No stored runs to export yet.", severity="warning")
            return
        self.post_message(ExportRuns([rows[0].id]))


def make_app(
    store: Path | str | Store | None = None,
    *,
    profiles_dir: Path | None = None,
    theme: str | None = None,
) -> WorkbenchApp:
    """The app as the CLI builds it; tests build it the same way."""
    st = store if isinstance(store, Store) else Store(store)
    return WorkbenchApp(st, profiles_dir=profiles_dir, theme=theme)


def run_app(store: Path | str | None = None) -> None:
    """Open the workbench on the results store at `store` (default: the usual place)."""
    try:
        app = make_app(store)
    except WorkbenchError as exc:  # the store cannot be opened: one line, as the CLI does
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    app.run()
