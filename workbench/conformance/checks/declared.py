"""Checks that need no live target: the declaration and the option declarations."""

from __future__ import annotations

from typing import Any

from workbench.conformance.bounded import CheckFailed
from workbench.conformance.settings import Target
from workbench.sdk.adapter import check_declaration as validate_declaration
from workbench.sdk.errors import PluginError, SpecError
from workbench.sdk.ops import NEEDS, OPERATIONS
from workbench.sdk.options import Option, OptionSet, parse_option


def _bad_value(opt: Option) -> Any:
    return {
        "int": "not-a-number",
        "float": "not-a-number",
        "bool": "maybe",
        "choice": "no-such-choice",
        "size": "lots",
        "duration": "soon",
        "list": 42,
    }.get(opt.kind)


def _option_sets(t: Target) -> list[tuple[str, OptionSet]]:
    sets = [("target.options", t.system.options), ("strategy.options", t.strategy.options)]
    if t.system.server is not None:
        sets.append(("target.server", t.system.server.options))
    return sets


async def check_declaration(t: Target) -> str:
    try:
        validate_declaration(t.system, t.system.name)
    except PluginError as exc:
        raise CheckFailed(exc.message) from None
    problems = []
    if not t.system.description.strip():
        problems.append("the system has no description")
    if not t.strategy.description.strip():
        problems.append(f"strategy {t.strategy.name!r} has no description")
    if t.strategy.blocking and t.strategy.operations & NEEDS["publish"]:
        problems.append(
            "a blocking strategy declares pub/sub; the engine drives pub/sub on "
            "asyncio clients only"
        )
    ops = t.strategy.operations
    if not (NEEDS["cache_aside"] <= ops or "cache_aside" in ops):
        problems.append("every strategy must support get and set, or cache_aside")
    problems += _connections_problems(t)
    for where, options in _option_sets(t):
        names = options.names()
        if len(set(names)) != len(names):
            problems.append(f"{where}: duplicate option names {names}")
        for opt in options.options:
            if not opt.name.isidentifier():
                problems.append(f"{where}.{opt.name}: option names must be identifiers")
            if not opt.help.strip():
                problems.append(f"{where}.{opt.name}: no help text")
            if opt.kind == "choice" and not opt.choices:
                problems.append(f"{where}.{opt.name}: a choice option with no choices")
            if opt.default is not None and not opt.required:
                try:
                    parse_option(opt, opt.default, f"{where}.{opt.name}")
                except SpecError as exc:
                    problems.append(f"default {opt.default!r} is invalid: {exc}")
    if problems:
        raise CheckFailed("; ".join(problems))
    listed = ", ".join(o for o in OPERATIONS if o in t.strategy.operations)
    return f"{'blocking' if t.blocking else 'asyncio'}; {listed}"


def _connections_problems(t: Target) -> list[str]:
    """`Strategy.connections` answers a whole number of connections for a worker's clients."""
    problems = []
    for clients in (1, 64):
        try:
            n = t.strategy.connections(t.system_options, t.strategy_options, clients)
        except Exception as exc:
            return [f"connections({clients} clients) raised {type(exc).__name__}: {exc}"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            problems.append(f"connections({clients} clients) gave {n!r}; expected an int >= 0")
    return problems


async def check_options(t: Target) -> str:
    problems = []
    tried = 0
    for where, options in _option_sets(t):
        for opt in options.options:
            bad = _bad_value(opt)
            if bad is None:
                continue
            tried += 1
            field_ = f"{where}.{opt.name}"
            try:
                options.resolve({opt.name: bad}, where)
            except SpecError as exc:
                if exc.where != field_ or not exc.message:
                    problems.append(f"{field_}: error names {exc.where!r}: {exc.message}")
            else:
                problems.append(f"{field_}: accepted {bad!r}")
        try:
            options.resolve({"no_such_option": "1"}, where)
        except SpecError as exc:
            if "no_such_option" not in exc.where:
                problems.append(f"{where}: unknown option reported as {exc}")
        else:
            problems.append(f"{where}: accepted an unknown option")
    if problems:
        raise CheckFailed("; ".join(problems))
    return f"{tried} option(s) reject bad values naming the field; unknown names rejected"
