"""The options `workbench compare` shares with `workbench run --baseline`, kept apart from
the comparison itself so that `workbench run` does not load it (and numpy) unless asked."""

from __future__ import annotations

from typing import Annotated

import typer

from workbench.sdk.errors import SpecError
from workbench.stats import NOISE

DEFAULT_NOISE = f"{NOISE:.0%}"

FailOnRegressionOption = Annotated[
    list[str] | None,
    typer.Option(
        "--fail-on-regression",
        metavar="METRIC:[+|-]N%",
        help="exit 3 when a figure regressed significantly beyond N%, e.g. 'p99:+5%', "
        "'ops_per_s:-3%' (also p50, p99.9, errors, hit_rate); a step too short to judge "
        "fails too; repeatable",
    ),
]
NoiseOption = Annotated[
    str,
    typer.Option(
        "--noise",
        metavar="N%",
        help="changes within +-N% are no change, as criterion's noise threshold",
    ),
]


def parse_noise(text: str) -> float:
    """`2%` or `2` as 0.02; a negative, huge or malformed one is a SpecError."""
    try:
        value = float(text.strip().removesuffix("%")) / 100
    except ValueError:
        raise SpecError(f"{text!r}: expected a percentage such as 2%", "--noise") from None
    if not 0 <= value < 1:
        raise SpecError(f"{text!r}: expected 0% to 99%", "--noise")
    return value
