"""`workbench check RUN [--fail-on EXPR ...]`: pass/fail thresholds on a stored run, for CI.

The checks are the `--fail-on` expressions plus the ``[checks] fail_on`` list of the
run's spec. Each failed check prints one line (step, expression, measured value).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any

import typer

from workbench.cli.common import ExitStatus, StoreOption, fail, one_line_errors, out, read_store
from workbench.results.checks import Check, Outcome, evaluate, failures, parse_checks, spec_checks
from workbench.results.live import StepView
from workbench.spec.model import ChecksSpec, Spec

FailOnOption = Annotated[
    list[str] | None,
    typer.Option(
        "--fail-on",
        help="a threshold every step must meet, e.g. 'p99<2ms', 'get.p99.9<=5ms', "
        "'errors<0.1%', 'hit_rate>=0.8', 'ops_per_s>50000' (repeatable; exit 3 if one fails)",
    ),
]


def checks_for(spec: Mapping[str, Any], fail_on: Iterable[str], source: str = "") -> list[Check]:
    """The --fail-on checks and the spec's [checks]; a malformed one is a SpecError."""
    return parse_checks(fail_on, "--fail-on") + spec_checks(spec, source)


def with_fail_on(spec: Spec, fail_on: Iterable[str]) -> Spec:
    """The spec with the --fail-on expressions added to its [checks] fail_on, so the stored
    run keeps them: `workbench check RUN` re-applies them and the JSON shows them. A
    malformed expression is a SpecError, before anything runs."""
    given = tuple(fail_on)
    if not given:
        return spec
    parse_checks(given, "--fail-on")
    had = spec.checks.fail_on if spec.checks else ()
    return replace(spec, checks=ChecksSpec(fail_on=(*had, *(e for e in given if e not in had))))


def show_outcomes(outcomes: Sequence[Outcome]) -> bool:
    """One line per failed check, then a count; True when every check passed."""
    failed = failures(outcomes)
    for outcome in failed:
        out(outcome.line)
    if outcomes:
        checks = len({o.check.text for o in outcomes})
        steps = len({o.step for o in outcomes})
        out(
            f"checks: {len(outcomes) - len(failed)} of {len(outcomes)} passed "
            f"({checks} check(s) on {steps} step(s))"
        )
    return not failed


def judge_steps(checks: Sequence[Check], steps: Iterable[StepView]) -> bool:
    return show_outcomes(evaluate(checks, steps))


@one_line_errors
def command(
    run: Annotated[str, typer.Argument(help="run id, id prefix, name, or 'last'")],
    fail_on: FailOnOption = None,
    store: StoreOption = None,
) -> None:
    """Check a stored run against thresholds: --fail-on, and the checks stored with it
    (its profile's, and the --fail-on it was run with).

    Exit codes:
    0 every check passed;
    1 an error (no such run, the store cannot be opened);
    2 a bad check expression, or no checks at all;
    3 a check failed (one line each: step, expression, measured value).
    """
    stored = read_store(store).load(run)
    checks = checks_for(stored.spec, fail_on or [], f"run {stored.id}")
    if not checks:
        raise fail(
            "no checks: give --fail-on EXPR or a [checks] fail_on list in the profile",
            ExitStatus.BAD_INPUT,
        )
    view = stored.view()
    out(f"run {stored.id} '{stored.name}' {stored.status}")
    if not judge_steps(checks, view.steps):
        raise typer.Exit(int(ExitStatus.CHECKS_FAILED))
