"""The Setup form's side panel: the plan the form gives, the focused field's help, the TOML.

It takes the checked draft (`tui.form.Checked`) and shows it; it never reads the form.
"""

from __future__ import annotations

from typing import Any

import tomli_w
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from workbench.spec.resolve import total_clients, workers_for
from workbench.spec.save import spec_to_toml
from workbench.spec.steps import Step
from workbench.tui.form import Checked


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def status_line(checked: Checked) -> Text:
    """One line under the form: ready with n steps, or the first problem."""
    if checked.spec is None:
        text = Text(f"✗ {plural(len(checked.errors), 'problem')}: ", style="bold red")
        text.append(str(checked.errors[0]) if checked.errors else "", style="red")
        return text
    s = checked.spec
    text = Text("✓ ", style="bold green")
    text.append(f"{plural(len(checked.steps), 'step')} on {s.target.system}")
    if s.sweep:
        axes = " x ".join(f"{a.path} ({len(a.values)})" for a in s.sweep)
        text.append(f", sweeping {axes}", style="dim")
    text.append("  Ctrl+R starts", style="dim")
    return text


def step_lines(step: Step) -> tuple[str, str]:
    """A step's title line and what it runs: system/strategy, clients, workers, how long."""
    sp = step.spec
    # A checked step (check_spec) carries what it resolved to.
    strategy = step.resolved.strategy.name if step.resolved else sp.strategy.name or "default"
    how = f"{sp.load.ops:,} ops" if sp.load.ops else f"{sp.load.duration:g} s"
    if sp.load.warmup:
        how += f" + {sp.load.warmup:g} s warm-up"
    return (
        f"{step.index + 1}. {step.title}",
        f"   {sp.target.system}/{strategy}, {total_clients(sp)} clients on "
        f"{workers_for(sp)} worker(s), {how}",
    )


def plan_text(checked: Checked, general: list[str]) -> Text:
    """Every step the form would run, or every problem that stops it."""
    if checked.spec is None:
        body = Text("Not ready to run:\n", style="bold red")
        for err in checked.errors:
            body.append(f"• {err}\n", style="red")
        return body
    body = Text()
    body.append(f"{plural(len(checked.steps), 'step')}\n", style="bold")
    for step in checked.steps:
        title, what = step_lines(step)
        body.append(f"{title}\n")
        body.append(f"{what}\n", style="dim")
    for g in general:
        body.append(f"{g}\n", style="red")
    return body


def toml_text(checked: Checked, data: dict[str, Any]) -> str:
    """The profile the form would save: the spec's, or the raw data while it has errors."""
    if checked.spec is not None:
        return spec_to_toml(checked.spec)
    try:
        return tomli_w.dumps(data)
    except (TypeError, ValueError):  # data tomli_w cannot write (a None in a list, say)
        return ""


class PlanPreview(Vertical):
    """Plan, help and TOML, one above the other."""

    def compose(self) -> ComposeResult:
        yield Static(id="plan")
        yield Static(id="help")
        with VerticalScroll(id="toml-scroll"):
            yield Static(id="toml")

    def on_mount(self) -> None:
        self.border_title = "Plan"
        self.query_one("#toml-scroll").border_title = "Profile (TOML)"

    def show(self, checked: Checked, general: list[str], data: dict[str, Any]) -> None:
        self.query_one("#plan", Static).update(plan_text(checked, general))
        self.query_one("#toml", Static).update(Text(toml_text(checked, data)))

    def show_help(self, text: str) -> None:
        self.query_one("#help", Static).update(text)
