"""Setup mode: the experiment as a form, checked as you type with the CLI's own messages.

The core fields are generated from `workbench.spec.fields` (defaults from the model), the
plugin options from their declarations; the plan, help and TOML are a `PlanPreview`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.dom import DOMNode
from textual.events import Resize
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from workbench.sdk.discovery import load_plugin, plugin_statuses
from workbench.sdk.errors import PluginError, SpecError
from workbench.spec.fields import SECTION_TITLES, Section, fields_in
from workbench.spec.load import get_path, read_profile
from workbench.spec.model import DEFAULT_SYSTEM, Spec, TargetSpec, spec_to_dict
from workbench.spec.profile_files import is_shipped
from workbench.spec.resolve import default_strategy
from workbench.spec.save import save_spec
from workbench.spec.steps import trace_beside
from workbench.tui.context import ScreenContext
from workbench.tui.form import Checked, check, compose, error_path, field_for, fold_sweeps
from workbench.tui.layout import key_footer, mark_narrow
from workbench.tui.messages import Draft, DraftChanged
from workbench.tui.widgets.fields import FormField, option_field, spec_field
from workbench.tui.widgets.modebar import ModeBar
from workbench.tui.widgets.plan import PlanPreview, status_line

SYSTEM, STRATEGY = "target.system", "strategy.name"
OPTION_TITLES = {"target.options": "system options", "target.server": "managed server options"}


def default_data() -> dict[str, Any]:
    """The spec's defaults written out, so the form starts filled in."""
    data: dict[str, Any] = spec_to_dict(Spec())
    data.pop("sweep", None)
    data.pop("description", None)
    data["workload"].pop("groups", None)
    data["workload"].pop("pubsub", None)
    data["load"].pop("ops", None)
    data["load"].pop("warmup_ops", None)
    data["load"].pop("rate", None)
    for table in ("target", "strategy"):
        data[table] = {k: v for k, v in data[table].items() if v not in ({}, "")}
    data["target"].pop("managed", None)
    return data


def section(title: str) -> Label:
    return Label(title, classes="section")


def core_fields(name: Section) -> ComposeResult:
    """The core spec fields of one section, generated from their declaration."""
    for field in fields_in(name):
        yield spec_field(field)


def chooser(field_id: str, label: str, select: Select[str]) -> ComposeResult:
    """A labelled Select with a line for the core's error under it (system, strategy)."""
    with Vertical(classes="field", id=field_id):
        with Horizontal(classes="field-row"):
            yield Label(label, classes="field-label")
            yield select
        yield Static("", classes="field-error")


def save_path(source: str, name: str, folder: Path) -> str:
    """Where Save writes by default: the opened file, else NAME.toml in the profiles folder;
    but never into the profiles shipped inside the installed package: the current
    directory then."""
    if source and not is_shipped(Path(source)):
        return source
    return f"{name}.toml" if is_shipped(folder) else str(folder / f"{name}.toml")


class SetupScreen(Screen[None]):
    """Pick system and strategy, load a profile, edit every knob, save it, start it."""

    AUTO_FOCUS = "#f-name Input"
    HELP = (
        "The experiment as a form: cache system, client strategy, load and workload. Each "
        "field is checked as you type, with the command line's own messages; a list in a "
        "field (1, 4, 16) sweeps it. The line under the form says what Ctrl+R will run; on "
        "a wide terminal the plan and the profile's TOML are beside the form."
    )
    MORE_KEYS = (("Enter", "in the profile path: open that profile; in the save path: save"),)
    BINDINGS = [
        Binding("ctrl+s", "save", "Save profile"),
        Binding("ctrl+o", "open_profile", "Open profile"),
        Binding("ctrl+n", "reset", "Defaults", show=False),
    ]

    def __init__(self, context: ScreenContext) -> None:
        super().__init__()
        self.context = context
        self.base: dict[str, Any] = default_data()
        self.source = ""
        self.checked = Checked(None, (), ())
        self._shown_system: str | None = None
        self._shown_strategy: tuple[str, str] | None = None
        self._loading = False

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield ModeBar("setup")
        with Horizontal(id="setup-body"):
            with VerticalScroll(id="form"):
                yield from self._experiment()
                yield from self._target()
                yield section(SECTION_TITLES["load"])
                yield from core_fields("load")
                yield section(SECTION_TITLES["workload"])
                yield from core_fields("workload")
                yield Label(SECTION_TITLES["pubsub"], classes="subsection")
                yield from core_fields("pubsub")
                yield Static("", id="groups-note", classes="hint")
                yield from self._save_row()
            yield PlanPreview(id="aside")
        with Vertical(id="setup-status"):
            yield Static(id="help-line")
            yield Static(id="status-line")
        yield key_footer()

    def _experiment(self) -> ComposeResult:
        yield section(SECTION_TITLES["experiment"])
        with Horizontal(classes="field-row", id="profile-row"):
            yield Label("profile", classes="field-label")
            yield Select(
                self._profile_options(), prompt="open a profile…", compact=True, id="profile"
            )
            yield Input(placeholder="or a path + Enter", compact=True, id="profile-path")
        yield from core_fields("experiment")

    def _target(self) -> ComposeResult:
        yield section(SECTION_TITLES["target"])
        systems = Select(self._system_options(), allow_blank=False, compact=True, id="system")
        yield from chooser("f-target-system", "cache system", systems)
        yield Static("", id="system-help", classes="hint")
        strategies = Select([("default", "")], allow_blank=False, compact=True, id="strategy")
        yield from chooser("f-strategy-name", "client strategy", strategies)
        yield Static("", id="strategy-help", classes="hint")
        yield from core_fields("target")
        # Filled with the chosen system's and strategy's declared options.
        yield Vertical(id="system-options", classes="options")
        yield Vertical(id="server-options", classes="options")
        yield Vertical(id="strategy-options", classes="options")

    def _save_row(self) -> ComposeResult:
        yield section("Save")
        with Horizontal(classes="field-row", id="save-row"):
            yield Label("profile file", classes="field-label")
            yield Input(compact=True, id="save-path")
            yield Button("Save", compact=True, id="save", variant="primary")

    def _profile_options(self) -> list[tuple[str, str]]:
        folder = self.context.profiles_dir
        return [(p.stem, str(p)) for p in sorted(folder.glob("*.toml"))]

    def _system_options(self) -> list[tuple[str, str]]:
        return [(s.name if s.system else f"{s.name} (broken)", s.name) for s in plugin_statuses()]

    async def on_mount(self) -> None:
        self.watch(self, "focused", self._show_hint)
        await self.apply_base(self.base)
        mark_narrow(self, self.size.width)

    def on_resize(self, event: Resize) -> None:
        mark_narrow(self, event.size.width)

    # -- the form <-> data ----------------------------------------------------------------

    def fields(self) -> list[FormField]:
        return list(self.query(FormField).results(FormField))

    async def apply_base(self, data: dict[str, Any], source: str = "") -> None:
        """Show `data` (a profile's content) in the form."""
        self._loading = True
        try:
            self.base = fold_sweeps(data)
            self.source = source
            system = get_path(self.base, SYSTEM) or DEFAULT_SYSTEM
            select = self.query_one("#system", Select)
            known = {v for _, v in self._system_options()}
            # Checked once, below: each field's own change message, and each select's, would
            # check the whole form again after the load (some twenty checks and layouts).
            with self.prevent(Input.Changed, Checkbox.Changed, Select.Changed):
                if isinstance(system, str) and system in known:
                    select.value = system
                await self._show_system(str(select.value), force=True)
                for f in self.fields():
                    value = get_path(self.base, f.path)
                    f.write(value is not None, value)
                self._show_sweeps()
            name = get_path(self.base, "name") or "experiment"
            default_save = save_path(source, str(name), self.context.profiles_dir)
            self.query_one("#save-path", Input).value = default_save
            groups = get_path(self.base, "workload.groups") or []
            note = self.query_one("#groups-note", Static)
            note.update(
                f"{len(groups)} client group(s) from the profile, each with its own mix and "
                "concurrency (they replace op mix and concurrency; edit them in the TOML)"
                if groups
                else ""
            )
            note.display = bool(groups)
        finally:
            self._loading = False
        self.recheck()

    def _show_sweeps(self) -> None:
        """Fields a [[sweep]] of the profile sets show its values."""
        axes = {a.get("path"): a for a in self.base.get("sweep", []) if isinstance(a, dict)}
        for f in self.fields():
            axis = axes.get(f.path)
            if axis is not None and not axis.get("along") and isinstance(axis.get("values"), list):
                f.show_sweep(axis["values"])

    def _drop_unswept(self, fields: list[FormField]) -> None:
        """A swept field given one value: its sweep leaves the profile."""
        for f in fields:
            if f.swept and not f.still_swept():
                f.swept = ""
                kept = [a for a in self.base.get("sweep", []) if a.get("path") != f.path]
                if kept:
                    self.base["sweep"] = kept
                else:
                    self.base.pop("sweep", None)

    async def _show_system(self, name: str, force: bool = False) -> None:
        """Strategies and option fields of the chosen system."""
        if name == self._shown_system and not force:
            return
        self._shown_system = name
        help_box = self.query_one("#system-help", Static)
        strategy = self.query_one("#strategy", Select)
        try:
            system = load_plugin(name)
        except PluginError as exc:
            help_box.update(Text(exc.message, style="red"))
            strategy.set_options([("default", "")])
            for box in ("#system-options", "#server-options", "#strategy-options"):
                await self.query_one(box).remove_children()
            return
        help_box.update(system.description)
        same = get_path(self.base, SYSTEM) in (None, name)
        names = [s.name for s in system.strategies]
        options = [(f"default ({_default_name(system)})", "")] + [(n, n) for n in names]
        options.append((f"sweep: {', '.join(names)}", ",".join(names)))
        wanted = get_path(self.base, STRATEGY) if same else ""
        if isinstance(wanted, list):
            joined = ",".join(str(w) for w in wanted)
            if joined not in (v for _, v in options):
                options.append((f"sweep: {', '.join(map(str, wanted))}", joined))
            wanted = joined
        strategy.set_options(options)
        strategy.value = wanted if wanted in (v for _, v in options) else ""
        self.query_one("#f-target-managed").display = system.server is not None
        server = system.server.options.options if system.server else ()
        boxes = [
            ("#system-options", "target.options", system.options.options),
            ("#server-options", "target.server", server),
        ]
        await self._fill_options([*boxes, self._strategy_box(force=True)])

    async def _fill_options(self, boxes: list[tuple[str, str, Any] | None]) -> None:
        """Each box (its id, the options' path prefix, the options) shows a field per
        option, with the profile's values when it names the system shown. The boxes are
        filled together: each mount awaited on its own lays the whole form out again."""
        same = get_path(self.base, SYSTEM) in (None, self._shown_system)
        replaced: list[tuple[Vertical, list[Widget]]] = []
        shown_now: list[FormField] = []
        for entry in boxes:
            if entry is None:
                continue
            box_id, prefix, options = entry
            box = self.query_one(box_id, Vertical)
            fields = [option_field(prefix, o) for o in options]
            shown = list(box.query(FormField).results(FormField))
            if [(f.path, f.help) for f in shown] == [(f.path, f.help) for f in fields]:
                fields = shown  # the same options: writing their values is enough
            else:
                title = Label(OPTION_TITLES.get(prefix, "options"), classes="subsection")
                replaced.append((box, [title, *fields] if fields else []))
            box.display = bool(fields)
            shown_now += fields
        if replaced:
            await asyncio.gather(*(box.remove_children() for box, _ in replaced))
            await asyncio.gather(*(box.mount_all(widgets) for box, widgets in replaced if widgets))
        for f in shown_now:
            value = get_path(self.base, f.path) if same else None
            f.write(value is not None, value)

    def _strategy_box(self, force: bool = False) -> tuple[str, str, Any] | None:
        """The chosen strategy's help shown; its options box to fill, unless already shown."""
        system_name = self._shown_system or ""
        value = str(self.query_one("#strategy", Select).value)
        key = (system_name, value)
        if key == self._shown_strategy and not force:
            return None
        self._shown_strategy = key
        try:
            system = load_plugin(system_name)
        except PluginError:
            return None
        names = [n for n in value.split(",") if n] or [_default_name(system)]
        strategies = [s for s in system.strategies if s.name in names]
        lines = []
        for s in strategies:
            kind = "blocking, one thread per client" if s.blocking else "asyncio"
            ops = ", ".join(sorted(s.operations))
            lines.append(f"[b]{s.name}[/b]: {s.description} [dim]({kind}; {ops})[/dim]")
        self.query_one("#strategy-help", Static).update("\n".join(lines))
        opts = strategies[0].options.options if strategies else ()
        return ("#strategy-options", "strategy.options", opts)

    async def _show_strategy(self) -> None:
        await self._fill_options([self._strategy_box()])

    def values(self, fields: list[FormField] | None = None) -> list[tuple[str, bool, Any]]:
        out: list[tuple[str, bool, Any]] = []
        system = self.query_one("#system", Select).value
        out.append((SYSTEM, True, str(system)))
        strategy = str(self.query_one("#strategy", Select).value or "")
        if "," in strategy:
            out.append((STRATEGY, True, strategy.split(",")))
        else:
            out.append((STRATEGY, bool(strategy), strategy))
        for f in self.fields() if fields is None else fields:
            present, value = f.read()
            out.append((f.path, present, value))
        return out

    def data(self, fields: list[FormField] | None = None) -> dict[str, Any]:
        return compose(self.base, self.values(fields))

    def recheck(self) -> None:
        """Check the form with the core; flag each bad field; tell the app the draft."""
        if self._loading:
            return
        fields = self.fields()  # one query of the form's DOM, not one per use
        self._drop_unswept(fields)
        data = self.data(fields)
        self.checked = checked = check(data)
        paths = [f.path for f in fields] + [SYSTEM, STRATEGY]
        flagged: dict[str, str] = {}
        general: list[str] = []
        for err in checked.errors:
            target = field_for(error_path(err.where), paths)
            if target and target not in flagged:
                flagged[target] = str(err) if error_path(err.where) != target else err.message
            elif not target:
                general.append(str(err))
        for f in fields:
            f.flag(flagged.get(f.path))
        for path in (SYSTEM, STRATEGY):
            box = self.query_one("#f-" + path.replace(".", "-"))
            box.set_class(path in flagged, "-invalid")
            box.query_one(".field-error", Static).update(
                f"↳ {flagged[path]}" if path in flagged else ""
            )
        self._show_plan(checked, general, data)
        self.post_message(DraftChanged(Draft(data, checked.spec, checked.errors)))

    def _show_plan(self, checked: Checked, general: list[str], data: dict[str, Any]) -> None:
        self.query_one("#status-line", Static).update(status_line(checked))
        self.query_one(PlanPreview).show(checked, general, data)

    # -- events ---------------------------------------------------------------------------

    @on(Input.Changed)
    @on(Checkbox.Changed)
    def _changed(self, event: Input.Changed | Checkbox.Changed) -> None:
        if event.control.id in ("profile-path", "save-path"):
            return
        self.recheck()

    @on(Select.Changed)
    async def _select_changed(self, event: Select.Changed) -> None:
        sid = event.select.id
        if sid == "profile":
            if event.value is not Select.NULL and not self._loading:
                self.load_profile(Path(str(event.value)))
            return
        if self._loading:
            return
        if sid == "system":
            await self._show_system(str(event.value))
        elif sid == "strategy":
            await self._show_strategy()
        self.recheck()

    @on(Input.Submitted, "#profile-path")
    def _open_path(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.load_profile(Path(event.value.strip()).expanduser())

    @on(Input.Submitted, "#save-path")
    @on(Button.Pressed, "#save")
    def _save_pressed(self) -> None:
        self.action_save()

    def _show_hint(self, focused: Widget | None) -> None:
        """The focused field's help, and its label lit, as focus moves (a watch on the
        screen's focus, not a message behind the form's checks: a hint never names the
        field just left)."""
        node: DOMNode | None = focused
        help_text = ""
        row: DOMNode | None = None
        while node is not None and node is not self:
            if isinstance(node, FormField):
                help_text = f"[b]{node.path}[/b]: {node.help}"
            elif node.id == "system":
                help_text = "[b]target.system[/b]: the cache system under test"
            elif node.id == "strategy":
                help_text = "[b]strategy.name[/b]: how clients talk to it; a sweep runs each"
            if row is None and node.has_class("field-row"):
                row = node
            if help_text:
                break
            node = node.parent
        for lit in self.query(".-focused"):
            lit.remove_class("-focused")
        if row is not None:
            row.add_class("-focused")
        self.query_one(PlanPreview).show_help(help_text)
        self.query_one("#help-line", Static).update(help_text)

    # -- actions --------------------------------------------------------------------------

    @work(exclusive=True, group="profile")
    async def load_profile(self, path: Path) -> None:
        try:
            data = read_profile(path)
        except SpecError as exc:
            self.notify(str(exc), severity="error")
            return
        trace_beside(data, path)  # as the CLI reads it: a relative trace sits beside the profile
        await self.apply_base(data, str(path))
        self.notify(f"Opened {path}")

    def action_open_profile(self) -> None:
        select = self.query_one("#profile", Select)
        select.focus()
        select.expanded = True

    async def action_reset(self) -> None:
        await self.apply_base(default_data())

    def action_save(self) -> None:
        spec = self.checked.spec
        path_text = self.query_one("#save-path", Input).value.strip()
        if spec is None:
            first = self.checked.errors[0] if self.checked.errors else "nothing to save"
            self.notify(f"Not saved: {first}", severity="error")
            return
        if not path_text:
            self.notify("Not saved: give a file name", severity="error")
            return
        path = Path(path_text).expanduser()
        if is_shipped(path):  # the installed package is not a place to write
            path = Path(path.name)
        try:
            written = save_spec(spec, path, header="Saved by the Cache Workbench TUI.")
        except OSError as exc:
            self.notify(f"Not saved: {exc}", severity="error")
            return
        self.source = str(written)
        self.query_one("#save-path", Input).value = str(written)
        self.query_one("#profile", Select).set_options(self._profile_options())
        if written == path:
            self.notify(f"Saved {written}")
        else:  # the file could not be updated faithfully in place
            self.notify(f"{path} left as it was; saved as {written}", severity="warning")


def _default_name(system: Any) -> str:
    """The strategy a spec naming none runs on `system` (the native engine where it can)."""
    return default_strategy(system, Spec(target=TargetSpec(system.name)))[0].name
