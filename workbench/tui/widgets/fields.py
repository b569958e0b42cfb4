"""Setup form fields: a label, an input, and the core's error message under it when flagged.

Every field is bound to a spec path and reads back as ``(present, value)``: what the form
puts at that path (absent: the spec default). Text is read as after ``--set path=``.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Checkbox, Input, Label, Select, Static

from workbench.sdk.ops import CONDITIONAL, MIX_CODES
from workbench.sdk.options import Option
from workbench.spec.fields import SpecField
from workbench.tui.form import (
    CUSTOM,
    DISTRIBUTION_DEFAULTS,
    DISTRIBUTION_KINDS,
    FieldKind,
    join_distribution,
    split_distribution,
    text_to_value,
    value_to_text,
)

SWEPT = "\x00swept"  # the choice that stands for the profile's sweep of a field


def field_id(path: str) -> str:
    return "f-" + path.replace(".", "-")


class FormField(Vertical):
    """One labelled input bound to a spec path."""

    DEFAULT_CSS = """
    FormField { height: auto; }
    FormField > .field-row { height: auto; }
    FormField .field-label { width: 18; padding: 0 1 0 0; color: $text-muted; }
    FormField Input, FormField Select { width: 1fr; }
    FormField > .field-error { display: none; color: $text-error; padding: 0 0 0 18; }
    FormField.-invalid > .field-error { display: block; }
    FormField.-invalid .field-label { color: $text-error; text-style: bold; }
    FormField.-invalid Input { border-left: outer $error; }
    """

    def __init__(
        self,
        path: str,
        label: str,
        help: str = "",
        *,
        kind: FieldKind = "value",
        sweep: bool = False,
        placeholder: str = "",
    ) -> None:
        super().__init__(id=field_id(path), classes="field")
        self.path = path
        self.label = label
        self.help = help
        self.kind = kind
        self.sweep = sweep
        self.placeholder = placeholder
        self._flagged: str | None = None

    swept = ""  # what the field shows while a [[sweep]] of the profile sets its path
    under_sweep: tuple[bool, Any] = (False, None)  # what the profile also writes at the path

    def compose(self) -> ComposeResult:
        with Horizontal(classes="field-row"):
            yield Label(self.label, classes="field-label")
            yield from self.compose_input()
        yield Static("", classes="field-error")

    def compose_input(self) -> ComposeResult:
        yield Input(placeholder=self.placeholder, compact=True, tooltip=self.help or None)

    def show_sweep(self, values: list[Any]) -> None:
        """The profile sweeps this field: show its values (the sweep keeps setting them
        until the field is given one value); what the profile writes at the path stays."""
        boxes = list(self.query(Input).results(Input))
        if len(boxes) != 1:  # a form of several inputs (a distribution, the mix) shows none
            return
        self.under_sweep = self.read()
        self.swept = "sweep: " + ", ".join(value_to_text(v) for v in values)
        boxes[0].value = self.swept

    def still_swept(self) -> bool:
        return bool(self.swept) and self.query_one(Input).value == self.swept

    def read(self) -> tuple[bool, Any]:
        if self.still_swept():
            return self.under_sweep  # the profile's sweep sets it, step by step
        return text_to_value(self.kind, self.query_one(Input).value, self.sweep)

    def write(self, present: bool, value: Any) -> None:
        self.swept = ""
        self.query_one(Input).value = value_to_text(value) if present else ""

    def flag(self, message: str | None) -> None:
        if message == self._flagged:
            return  # every check flags every field: an update each would lay the form out
        self._flagged = message
        self.set_class(bool(message), "-invalid")
        self.query_one(".field-error", Static).update(f"↳ {message}" if message else "")


class TickBox(Checkbox):
    """A checkbox legible without colour: ✓ when ticked, ☐ when not (Textual's ▐X▌ shows an
    X either way and tells them apart by colour alone)."""

    @property
    def _button(self) -> Content:
        # The glyph in the label's own colours: it must read on any theme, in monochrome too.
        style = self.get_visual_style("toggle--label")
        return Content.styled("✓" if self.value else "☐", style)


class BoolField(FormField):
    """A yes/no spec field whose default is no: only a ticked box is written."""

    def compose_input(self) -> ComposeResult:
        yield TickBox(self.placeholder, compact=True, tooltip=self.help or None)

    def read(self) -> tuple[bool, Any]:
        ticked = self.query_one(Checkbox).value
        return ticked, ticked

    def write(self, present: bool, value: Any) -> None:
        self.query_one(Checkbox).value = bool(value) if present else False


class ChoiceField(FormField):
    """A plugin option with choices (or true/false): blank means the option's default."""

    def __init__(self, path: str, label: str, help: str, choices: list[str], default: str) -> None:
        super().__init__(path, label, help, kind="text", placeholder=f"default ({default})")
        self.choices = choices

    def compose_input(self) -> ComposeResult:
        yield Select(
            [(c, c) for c in self.choices],
            prompt=self.placeholder,
            allow_blank=True,
            compact=True,
            tooltip=self.help or None,
        )

    def show_sweep(self, values: list[Any]) -> None:
        self.under_sweep = self.read()
        self.swept = "sweep: " + ", ".join(value_to_text(v) for v in values)
        select = self.query_one(Select)
        select.set_options([(c, c) for c in self.choices] + [(self.swept, SWEPT)])
        select.value = SWEPT

    def still_swept(self) -> bool:
        return bool(self.swept) and self.query_one(Select).value == SWEPT

    def read(self) -> tuple[bool, Any]:
        value = self.query_one(Select).value
        if value == SWEPT:
            return self.under_sweep
        if value is Select.NULL or value is None:
            return False, None
        if set(self.choices) == {"true", "false"}:
            return True, value == "true"
        return True, value

    def write(self, present: bool, value: Any) -> None:
        select = self.query_one(Select)
        if self.swept:  # another profile: the last one's sweep is no choice of this one
            self.swept = ""
            select.set_options([(c, c) for c in self.choices])
        text = value_to_text(value) if present else ""
        if text in self.choices:
            select.value = text
        else:
            select.clear()


class DistributionField(FormField):
    """A distribution: its kind, then its parameters (or the written form, for sweeps)."""

    DEFAULT_CSS = """
    DistributionField .dist-kind { width: 16; }
    DistributionField .dist-param { width: 1fr; }
    """

    def __init__(self, path: str, label: str, help: str, default: str = "") -> None:
        super().__init__(path, label, help, kind="text")
        self.kinds = DISTRIBUTION_KINDS[path]
        self.default = split_distribution(path, default) if default else (CUSTOM, [])
        self.shown_kind = ""  # the kind shown: a change to another one is the user's

    def compose_input(self) -> ComposeResult:
        options = [(k, k) for k in self.kinds] + [("list / other", CUSTOM)]
        first = next(iter(self.kinds))
        yield Select(
            options,
            value=first,
            allow_blank=False,
            compact=True,
            classes="dist-kind",
            tooltip=self.help or None,
        )
        for i in range(2):
            yield Input(compact=True, classes=f"dist-param p{i}", tooltip=self.help or None)

    def on_mount(self) -> None:
        if self.default[0] != CUSTOM:
            self.query_one(Select).value = self.default[0]
        self.shown_kind = str(self.query_one(Select).value)
        self._arrange(self.shown_kind)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value != self.query_one(Select).value:
            return  # an earlier change, already overtaken (a profile loaded after another)
        kind = str(event.value)
        if kind != self.shown_kind:  # picked: the new kind's own parameters, never the last one's
            self.shown_kind = kind
            defaults = DISTRIBUTION_DEFAULTS[self.path].get(kind, ())
            for i, box in enumerate(self.query(".dist-param").results(Input)):
                box.value = defaults[i] if i < len(defaults) and kind != CUSTOM else ""
        self._arrange(kind)

    def _arrange(self, kind: str) -> None:
        names = (
            ('expression, e.g. ["zipf(0.99)", "uniform"]',) if kind == CUSTOM else self.kinds[kind]
        )
        default_kind, default_params = self.default
        for i, box in enumerate(self.query(".dist-param").results(Input)):
            box.display = i < len(names)
            if i < len(names):
                box.placeholder = names[i]
                if kind == default_kind and i < len(default_params):
                    box.placeholder = f"{names[i]}: {default_params[i]}"

    def read(self) -> tuple[bool, Any]:
        kind = str(self.query_one(Select).value)
        params = [box.value for box in self.query(".dist-param").results(Input)]
        if kind == CUSTOM:
            return text_to_value("text", params[0])
        if self.kinds[kind] and not any(p.strip() for p in params[: len(self.kinds[kind])]):
            return False, None  # nothing typed: the spec's default
        return True, join_distribution(self.path, kind, params)

    def write(self, present: bool, value: Any) -> None:
        select = self.query_one(Select)
        boxes = list(self.query(".dist-param").results(Input))
        if not present:
            kind = self.default[0] if self.default[0] != CUSTOM else next(iter(self.kinds))
            self.shown_kind = kind
            select.value = kind
            for box in boxes:
                box.value = ""
            self._arrange(kind)
            return
        kind, params = split_distribution(self.path, value)
        self.shown_kind = kind
        select.value = kind
        for i, box in enumerate(boxes):
            box.value = params[i] if i < len(params) else ""
        self._arrange(kind)


class MixField(FormField):
    """The operation mix: a weight per operation (cache_aside is get, then set on a miss);
    the conditional writes, and the gets whose token a cas sends, on rows of their own."""

    OPS = tuple(MIX_CODES)
    PER_ROW = 5  # weights a row holds: each keeps a few columns at 80

    DEFAULT_CSS = """
    MixField .mix-rows { height: auto; width: 1fr; }
    MixField .mix-row { height: auto; }
    MixField .mix-op { width: 1fr; }
    MixField .mix-name { width: auto; padding: 0 1 0 1; color: $text-muted; }
    """

    def compose_input(self) -> ComposeResult:
        first = [op for op in self.OPS if op not in CONDITIONAL]
        more = [op for op in self.OPS if op in CONDITIONAL]
        rows = [first] + [more[i : i + self.PER_ROW] for i in range(0, len(more), self.PER_ROW)]
        with Vertical(classes="mix-rows"):
            for row in rows:
                with Horizontal(classes="mix-row"):
                    for op in row:
                        yield Label("aside" if op == "cache_aside" else op, classes="mix-name")
                        yield Input(
                            compact=True,
                            classes=f"mix-op op-{op}",
                            tooltip=self.help or None,
                            id=f"mix-{op}",
                        )

    def read(self) -> tuple[bool, Any]:
        mix = {}
        for op in self.OPS:
            present, value = text_to_value("value", self.query_one(f"#mix-{op}", Input).value)
            if present:
                mix[op] = value
        return bool(mix), mix

    def write(self, present: bool, value: Any) -> None:
        value = value if present and isinstance(value, dict) else {}
        for op in self.OPS:
            self.query_one(f"#mix-{op}", Input).value = value_to_text(value.get(op))


def option_field(prefix: str, opt: Option) -> FormField:
    """The field for one plugin option, at ``prefix.name``."""
    path = f"{prefix}.{opt.name}"
    help_text = f"{opt.help} ({opt.describe_kind()}; default {opt.default!r})"
    if opt.env:
        help_text += f"; read from ${opt.env} when empty"
    if opt.kind == "choice":
        return ChoiceField(path, opt.name, help_text, list(opt.choices), str(opt.default))
    if opt.kind == "bool":
        return ChoiceField(path, opt.name, help_text, ["true", "false"], value_to_text(opt.default))
    kind: FieldKind = "text" if opt.kind in ("str", "list") else "value"
    return FormField(path, opt.name, help_text, kind=kind, placeholder=value_to_text(opt.default))


def empty_hint(field: SpecField) -> str:
    """What an empty field shows: the model's default and the field's note."""
    default = field.default
    if default is None or default == "":
        return field.note
    return value_to_text(default) + field.note


def spec_field(field: SpecField) -> FormField:
    """The field for one core spec field, at its path (see `workbench.spec.fields`)."""
    path, label, help_text = field.path, field.label, field.help
    if field.entry == "mix":
        return MixField(path, label, help_text)
    if field.entry == "distribution":
        return DistributionField(path, label, help_text, field.default)
    if field.entry == "bool":
        return BoolField(path, label, help_text, kind="bool", placeholder=field.note)
    return FormField(
        path,
        label,
        help_text,
        kind=field.entry,
        sweep=field.sweepable,
        placeholder=empty_hint(field),
    )
