"""Every profile in profiles/ runs end to end, shrunk to seconds with --set overrides.

The profiles are the experiments of the source documents; CI runs each of them in a
quick form (shorter steps, fewer sweep values) so that a profile that no longer loads
or runs is caught, while the full ones stay what users run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from quick_profiles import QUICK
from support import collect, finished
from umem_support import umem_source

from workbench.results.store import Store
from workbench.spec.steps import check_spec, load_spec, plan

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
# Errors a profile may meet for real: memcached refuses items when a slab class is full.
ALLOWED_ERRORS: dict[str, set[str]] = {
    "memory-limit-hit-rate": {"server"},
    "memory-limit-hit-rate-quick": {"server"},
    "trace-replay": {"server"},
}
# Any profile, on a loaded machine (the server shares the test's 2 cores): an op in flight
# at the end can outlast the wait after it (one 0.25 s interval) and is counted abandoned.
LOADED_MACHINE = {"abandoned"}


def test_every_profile_has_a_quick_form_here() -> None:
    names = {p.stem for p in PROFILES.glob("*.toml")}
    assert names <= set(QUICK), f"add a quick form for {sorted(names - set(QUICK))}"


@pytest.mark.parametrize("path", sorted(PROFILES.glob("*.toml")), ids=lambda p: p.stem)
def test_a_profile_loads_and_plans(path: Path) -> None:
    steps = check_spec(load_spec(path))
    assert steps
    assert load_spec(path).description, "say what the experiment is in one line"
    assert path.read_text().startswith("#"), "head the profile with a comment naming its source"


def _reproduces_a_document(path: Path) -> bool:
    """The profile's heading comment names a source document (../shared/seeds/)."""
    heading = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        heading.append(line)
    return "shared/seeds/" in "\n".join(heading)


DOCUMENTS = [p for p in sorted(PROFILES.glob("*.toml")) if _reproduces_a_document(p)]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_a_profile_of_a_source_document_names_the_strategy_of_every_step(path: Path) -> None:
    """Its published figures must not move when a system's default strategy changes
    (issue 24: native became the default where the engine is built)."""
    for step in plan(load_spec(path)):
        assert step.spec.strategy.name, f"step {step.title!r} runs the default strategy"


@pytest.mark.parametrize("name", sorted(QUICK))
async def test_a_profile_runs_in_its_quick_form(name: str, tmp_path: Path) -> None:
    path = PROFILES / f"{name}.toml"
    planned = check_spec(load_spec(path, QUICK[name]))
    if any(s.spec.target.system == "umem" and s.spec.target.managed for s in planned):
        umem_source()  # a skip saying why, where umem-cache cannot be built (no ../shared)
    events = await collect(QUICK[name], Store(tmp_path / "runs.sqlite"), profile=path)
    steps = finished(events)
    assert len(steps) == len(planned)
    for step in steps:
        assert step.status == "completed", (step.step, step.reason, step.stats.first_errors)
        assert step.stats.ops > 0
        allowed = ALLOWED_ERRORS.get(name, set()) | LOADED_MACHINE
        assert set(step.stats.errors) <= allowed, step.stats.first_errors
