"""Setup mode: the experiment as a form, checked as you type with the CLI's own messages."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import tomli_w
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.events import DescendantFocus, Resize
from textual.screen import Screen
from textual.widgets import Button, Checkbox, Footer, Input, Label, Select, Static

from workbench.errors import PluginError, SpecError
from workbench.plugins import load_plugin, plugin_statuses
from workbench.profile_files import is_shipped
from workbench.spec.load import get_path, read_profile
from workbench.spec.model import Spec, Workload, spec_to_dict
from workbench.spec.save import save_spec, spec_to_toml
from workbench.tui.form import Checked, check, compose, error_path, field_for, fold_sweeps
from workbench.tui.messages import Draft, DraftChanged
from workbench.tui.widgets.fields import (
    BoolField,
    DistributionField,
    FormField,
    MixField,
    option_field,
)
from workbench.tui.widgets.modebar import ModeBar

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp

NARROW = 110  # below this width the side panel (plan, help, TOML) folds away

SYSTEM, STRATEGY = "target.system", "strategy.name"
DEFAULTS = Workload()


def default_data() -> dict[str, Any]:
    """The spec's defaults written out, so the form starts filled in."""
    data = spec_to_dict(Spec())
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
    BINDINGS = [
        Binding("ctrl+s", "save", "Save profile"),
        Binding("ctrl+o", "open_profile", "Open profile"),
        Binding("ctrl+n", "reset", "Defaults", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.base: dict[str, Any] = default_data()
        self.source = ""
        self.checked = Checked(None, (), ())
        self._shown_system: str | None = None
        self._shown_strategy: tuple[str, str] | None = None
        self._loading = False

    @property
    def wb(self) -> WorkbenchApp:
        return cast("WorkbenchApp", self.app)

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield ModeBar("setup")
        with Horizontal(id="setup-body"):
            with VerticalScroll(id="form"):
                yield section("Experiment")
                with Horizontal(classes="field-row", id="profile-row"):
                    yield Label("profile", classes="field-label")
                    yield Select(
                        self._profile_options(),
                        prompt="open a profile…",
                        compact=True,
                        id="profile",
                    )
                    yield Input(placeholder="or a path + Enter", compact=True, id="profile-path")
                yield FormField(
                    "name", "name", "the stored run's name", kind="text", placeholder="default"
                )
                yield FormField(
                    "description", "description", "one line for the report", kind="text"
                )
                yield FormField(
                    "seed", "seed", "same seed and spec: the same operations", placeholder="1"
                )
                yield section("Target")
                with Vertical(classes="field", id="f-target-system"):
                    with Horizontal(classes="field-row"):
                        yield Label("cache system", classes="field-label")
                        yield Select(
                            self._system_options(), allow_blank=False, compact=True, id="system"
                        )
                    yield Static("", classes="field-error")
                yield Static("", id="system-help", classes="hint")
                with Vertical(classes="field", id="f-strategy-name"):
                    with Horizontal(classes="field-row"):
                        yield Label("client strategy", classes="field-label")
                        yield Select(
                            [("default", "")], allow_blank=False, compact=True, id="strategy"
                        )
                    yield Static("", classes="field-error")
                yield Static("", id="strategy-help", classes="hint")
                yield BoolField(
                    "target.managed",
                    "managed server",
                    "start the system's own server on a free loopback port for the run",
                    kind="bool",
                    placeholder="start and stop a server of its own",
                )
                yield Vertical(id="system-options", classes="options")
                yield Vertical(id="server-options", classes="options")
                yield Vertical(id="strategy-options", classes="options")
                yield section("Load")
                yield FormField(
                    "load.concurrency",
                    "concurrency",
                    "virtual clients; a list such as 1, 4, 16 sweeps",
                    sweep=True,
                    placeholder="16, or 1, 4, 16 to sweep",
                )
                yield FormField(
                    "load.workers",
                    "workers",
                    "worker processes; 0 is one per core (never more than clients)",
                    sweep=True,
                    placeholder="0 (one per core)",
                )
                yield FormField(
                    "load.duration", "duration (s)", "seconds measured", placeholder="5.0"
                )
                yield FormField(
                    "load.ops",
                    "ops",
                    "an op count instead of a duration (wins when given)",
                    placeholder="none: run for the duration",
                )
                yield FormField(
                    "load.warmup",
                    "warm-up (s)",
                    "seconds of load before measuring",
                    placeholder="1.0",
                )
                yield FormField(
                    "load.warmup_ops",
                    "warm-up ops",
                    "an op count of warm-up instead of seconds",
                    placeholder="none: warm up for the seconds above",
                )
                yield FormField(
                    "load.rate",
                    "rate (ops/s)",
                    "total ops/s, open loop (latency counted from the intended start); "
                    "a list sweeps",
                    sweep=True,
                    placeholder="none: closed loop, as fast as it goes",
                )
                yield FormField(
                    "load.interval",
                    "interval (s)",
                    "seconds between live figures",
                    placeholder="1.0",
                )
                yield section("Workload")
                yield MixField(
                    "workload.mix",
                    "op mix",
                    "weights per operation; aside = cache-aside (get, then set on a miss)",
                )
                yield FormField(
                    "workload.keys", "keys", "size of the key space", placeholder="10000"
                )
                yield DistributionField(
                    "workload.key_distribution",
                    "key distribution",
                    "uniform, zipf(s), gaussian(mean, stddev), sequential, or hotcold(hot "
                    "access share, hot key share) e.g. 80% of accesses on 20% of the keys",
                    DEFAULTS.key_distribution,
                )
                yield DistributionField(
                    "workload.value_size",
                    "value size",
                    "fixed(N), uniform(MIN,MAX) or weighted(SIZE:WEIGHT, ...); units 4KiB, 1MB",
                    DEFAULTS.value_size,
                )
                yield DistributionField(
                    "workload.ttl",
                    "TTL",
                    "none, fixed(2s) or range(1,5) seconds",
                    DEFAULTS.ttl,
                )
                yield BoolField(
                    "workload.prefill",
                    "prefill",
                    "set every key once before measuring",
                    kind="bool",
                    placeholder="set every key once first",
                )
                yield FormField(
                    "workload.key_prefix",
                    "key prefix",
                    "prepended to every key",
                    kind="text",
                    placeholder="wb:",
                )
                yield FormField(
                    "workload.key_length", "key length", "characters per key", placeholder="12"
                )
                yield Label("publish / subscribe", classes="subsection")
                yield FormField(
                    "workload.pubsub.channels",
                    "channels",
                    "channels published to (publish in the op mix)",
                    placeholder="1",
                )
                yield FormField(
                    "workload.pubsub.subscribers_per_channel",
                    "subscribers",
                    "subscribers per channel; every delivery's latency is measured",
                    placeholder="1",
                )
                yield FormField(
                    "workload.pubsub.message_size",
                    "message size",
                    "bytes per message (at least 16: a timestamp and a sequence number)",
                    placeholder="64",
                )
                yield Static("", id="groups-note", classes="hint")
                yield section("Save")
                with Horizontal(classes="field-row", id="save-row"):
                    yield Label("profile file", classes="field-label")
                    yield Input(compact=True, id="save-path")
                    yield Button("Save", compact=True, id="save", variant="primary")
            with Vertical(id="aside"):
                yield Static(id="plan")
                yield Static(id="help")
                with VerticalScroll(id="toml-scroll"):
                    yield Static(id="toml")
        with Vertical(id="setup-status"):
            yield Static(id="help-line")
            yield Static(id="status-line")
        yield Footer()

    def _profile_options(self) -> list[tuple[str, str]]:
        folder = self.wb.profiles_dir
        return [(p.stem, str(p)) for p in sorted(folder.glob("*.toml"))]

    def _system_options(self) -> list[tuple[str, str]]:
        return [(s.name if s.system else f"{s.name} (broken)", s.name) for s in plugin_statuses()]

    async def on_mount(self) -> None:
        self.query_one("#aside").border_title = "Plan"
        self.query_one("#toml-scroll").border_title = "Profile (TOML)"
        await self.apply_base(self.base)
        self._arrange(self.size.width)

    def on_resize(self, event: Resize) -> None:
        self._arrange(event.size.width)

    def _arrange(self, width: int) -> None:
        self.set_class(width < NARROW, "narrow")

    # -- the form <-> data ----------------------------------------------------------------

    def fields(self) -> list[FormField]:
        return list(self.query(FormField).results(FormField))

    async def apply_base(self, data: dict[str, Any], source: str = "") -> None:
        """Show `data` (a profile's content) in the form."""
        self._loading = True
        try:
            self.base = fold_sweeps(data)
            self.source = source
            system = get_path(self.base, SYSTEM) or "embedded"
            select = self.query_one("#system", Select)
            known = {v for _, v in self._system_options()}
            if isinstance(system, str) and system in known:
                select.value = system
            await self._show_system(str(select.value), force=True)
            for f in self.fields():
                value = get_path(self.base, f.path)
                f.write(value is not None, value)
            name = get_path(self.base, "name") or "experiment"
            default_save = save_path(source, str(name), self.wb.profiles_dir)
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
        options = [(f"default ({system.default_strategy})", "")] + [(n, n) for n in names]
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
        await self._fill_options("#system-options", "target.options", system.options.options, same)
        await self._fill_options(
            "#server-options",
            "target.server",
            system.server.options.options if system.server else (),
            same,
        )
        await self._show_strategy(force=True)

    async def _fill_options(self, box_id: str, prefix: str, options: Any, same: bool) -> None:
        box = self.query_one(box_id, Vertical)
        await box.remove_children()
        fields = [option_field(prefix, o) for o in options]
        if fields:
            title = {"target.options": "system options", "target.server": "managed server options"}
            await box.mount(Label(title.get(prefix, "options"), classes="subsection"))
            await box.mount_all(fields)
        box.display = bool(fields)
        for f in fields:
            value = get_path(self.base, f.path) if same else None
            f.write(value is not None, value)

    async def _show_strategy(self, force: bool = False) -> None:
        system_name = self._shown_system or ""
        value = str(self.query_one("#strategy", Select).value)
        key = (system_name, value)
        if key == self._shown_strategy and not force:
            return
        self._shown_strategy = key
        try:
            system = load_plugin(system_name)
        except PluginError:
            return
        names = [n for n in value.split(",") if n] or [system.default_strategy]
        strategies = [s for s in system.strategies if s.name in names]
        lines = []
        for s in strategies:
            kind = "blocking, one thread per client" if s.blocking else "asyncio"
            ops = ", ".join(sorted(s.operations))
            lines.append(f"[b]{s.name}[/b]: {s.description} [dim]({kind}; {ops})[/dim]")
        self.query_one("#strategy-help", Static).update("\n".join(lines))
        same = get_path(self.base, SYSTEM) in (None, system_name)
        opts = strategies[0].options.options if strategies else ()
        await self._fill_options("#strategy-options", "strategy.options", opts, same)

    def values(self) -> list[tuple[str, bool, Any]]:
        out: list[tuple[str, bool, Any]] = []
        system = self.query_one("#system", Select).value
        out.append((SYSTEM, True, str(system)))
        strategy = str(self.query_one("#strategy", Select).value or "")
        if "," in strategy:
            out.append((STRATEGY, True, strategy.split(",")))
        else:
            out.append((STRATEGY, bool(strategy), strategy))
        for f in self.fields():
            present, value = f.read()
            if f.path == "target.managed" and not value:
                present = False
            if f.path == "workload.prefill" and not value:
                present = False
            out.append((f.path, present, value))
        return out

    def data(self) -> dict[str, Any]:
        return compose(self.base, self.values())

    def recheck(self) -> None:
        """Check the form with the core; flag each bad field; tell the app the draft."""
        if self._loading:
            return
        data = self.data()
        self.checked = checked = check(data)
        paths = [f.path for f in self.fields()] + [SYSTEM, STRATEGY]
        flagged: dict[str, str] = {}
        general: list[str] = []
        for err in checked.errors:
            target = field_for(error_path(err.where), paths)
            if target and target not in flagged:
                flagged[target] = str(err) if error_path(err.where) != target else err.message
            elif not target:
                general.append(str(err))
        for f in self.fields():
            f.flag(flagged.get(f.path))
        for path in (SYSTEM, STRATEGY):
            box = self.query_one("#f-" + path.replace(".", "-"))
            box.set_class(path in flagged, "-invalid")
            box.query_one(".field-error", Static).update(
                f"↳ {flagged[path]}" if path in flagged else ""
            )
        self._show_plan(checked, general)
        self.post_message(DraftChanged(Draft(data, checked.spec, checked.errors)))

    def _show_plan(self, checked: Checked, general: list[str]) -> None:
        status = self.query_one("#status-line", Static)
        plan = self.query_one("#plan", Static)
        toml = self.query_one("#toml", Static)
        if checked.spec is None:
            n = len(checked.errors)
            text = Text(f"✗ {n} problem{'s' if n != 1 else ''}: ", style="bold red")
            text.append(str(checked.errors[0]) if checked.errors else "", style="red")
            status.update(text)
            body = Text("Not ready to run:\n", style="bold red")
            for err in checked.errors:
                body.append(f"• {err}\n", style="red")
            plan.update(body)
            try:
                toml.update(Text(tomli_w.dumps(self.data())))
            except Exception:
                toml.update("")
            return
        steps = checked.steps
        s = checked.spec
        target = f"{s.target.system}"
        text = Text("✓ ", style="bold green")
        text.append(f"{len(steps)} step{'s' if len(steps) != 1 else ''} on {target}")
        if s.sweep:
            axes = " x ".join(f"{a.path} ({len(a.values)})" for a in s.sweep)
            text.append(f", sweeping {axes}", style="dim")
        text.append("  Ctrl+R starts", style="dim")
        status.update(text)
        from workbench.spec.plan import resolve_strategy, total_clients, workers_for

        body = Text()
        body.append(f"{len(steps)} step{'s' if len(steps) != 1 else ''}\n", style="bold")
        for st in steps:
            sp = st.spec
            strategy = resolve_strategy(load_plugin(sp.target.system), sp).name
            how = (f"{sp.load.ops:,} ops" if sp.load.ops else f"{sp.load.duration:g} s") + (
                f" + {sp.load.warmup:g} s warm-up" if sp.load.warmup else ""
            )
            body.append(f"{st.index + 1}. {st.title}\n")
            body.append(
                f"   {sp.target.system}/{strategy}, {total_clients(sp)} clients on "
                f"{workers_for(sp)} worker(s), {how}\n",
                style="dim",
            )
        for g in general:
            body.append(f"{g}\n", style="red")
        plan.update(body)
        toml.update(Text(spec_to_toml(s)))

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

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        node = event.widget
        help_text = ""
        while node is not None and node is not self:
            if isinstance(node, FormField):
                help_text = f"[b]{node.path}[/b]: {node.help}"
                break
            if node.id == "system":
                help_text = "[b]target.system[/b]: the cache system under test"
                break
            if node.id == "strategy":
                help_text = "[b]strategy.name[/b]: how clients talk to it; a sweep runs each"
                break
            node = node.parent  # type: ignore[assignment]
        self.query_one("#help", Static).update(help_text)
        self.query_one("#help-line", Static).update(help_text)

    # -- actions --------------------------------------------------------------------------

    @work(exclusive=True, group="profile")
    async def load_profile(self, path: Path) -> None:
        try:
            data = read_profile(path)
        except SpecError as exc:
            self.notify(str(exc), severity="error")
            return
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
