"""The `[search]` settings checked where a profile is loaded, so that a bad value names
the profile, the field and what was expected (`workbench.results.search_rules` runs the
search they set)."""

from __future__ import annotations

import math

from workbench.sdk.errors import SpecError
from workbench.spec.model import MIN_INTERVAL, SearchSpec


def check_settings(s: SearchSpec, where: str = "search") -> None:
    if s.start <= 0:
        raise SpecError(f"expected a rate above 0 ops/s; got {s.start:g}", f"{where}.start")
    if not s.probe >= MIN_INTERVAL:  # a shorter probe measures no interval: "after 0 probes"
        raise SpecError(
            f"expected at least {MIN_INTERVAL:g} s (the shortest interval); got {s.probe:g}",
            f"{where}.probe",
        )
    if s.max_probes < 2:
        raise SpecError(f"expected at least 2 probes; got {s.max_probes}", f"{where}.max_probes")
    if s.confirm < 1:
        raise SpecError(
            f"expected at least 1 (1: a failing probe counts at once); got {s.confirm}",
            f"{where}.confirm",
        )
    if not (s.max_probe == 0 or (math.isfinite(s.max_probe) and s.max_probe >= s.probe)):
        raise SpecError(
            f"expected 0 (never probe longer) or at least search.probe ({s.probe:g} s); got "
            f"{s.max_probe:g}",
            f"{where}.max_probe",
        )
    if not 0 < s.precision < 1:
        raise SpecError(
            f"expected a share between 0 and 1 (0.05: 5%); got {s.precision:g}",
            f"{where}.precision",
        )
