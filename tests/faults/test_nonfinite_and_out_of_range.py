"""Issue 13 item 11: NaN and infinities, empty sweeps and huge values are refused up front.

`load.duration=nan` ran forever; `value_size` of 256 MiB or more failed at run time with
an OverflowError. Each must be one line naming the field, exit 2, and no run stored.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from faults_support import cli

from workbench.results.store import Store

CASES = [
    ("load.duration=nan", "load.duration"),
    ("load.duration=inf", "load.duration"),
    ("load.warmup=inf", "load.warmup"),
    ("load.interval=nan", "load.interval"),
    ("load.rate=nan", "load.rate"),
    ("load.rate=-inf", "load.rate"),
    ("workload.key_distribution=zipf(nan)", "workload.key_distribution"),
    ("workload.key_distribution=gaussian(0.5,nan)", "workload.key_distribution"),
    ("workload.key_distribution=hotcold(inf,0.2)", "workload.key_distribution"),
    ("workload.mix={get=inf}", "workload.mix.get"),
    ("workload.mix={get=nan}", "workload.mix.get"),
    ("workload.value_size=weighted(100:nan)", "workload.value_size"),
    ("workload.value_size=fixed(256MiB)", "workload.value_size"),
    ("workload.value_size=uniform(1,300MB)", "workload.value_size"),
    ("workload.ttl=fixed(inf)", "workload.ttl"),
    ("target.options.max_bytes=inf", "target.options.max_bytes"),
]


@pytest.mark.parametrize(("override", "field"), CASES, ids=[c[0] for c in CASES])
def test_a_nonsense_number_is_one_line_naming_the_field(
    tmp_path: Path, override: str, field: str
) -> None:
    store = tmp_path / "runs.sqlite3"
    res = cli(["run", "--set", "load.duration=0.5", "--set", override], store, timeout=60)
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert lines[0].startswith(f"error: --set: {field}"), lines[0]
    assert not Store(store).list_runs()


def test_an_empty_sweep_is_refused(tmp_path: Path) -> None:
    profile = tmp_path / "empty.toml"
    profile.write_text('[[sweep]]\npath = "load.concurrency"\nvalues = []\n')
    res = cli(["run", str(profile)], tmp_path / "runs.sqlite3", timeout=60)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"error: {profile}: sweep[0].values: expected at least one value to sweep load.concurrency"
    ]


def test_values_just_below_the_limit_are_accepted() -> None:
    from workbench.spec.steps import load_spec

    load_spec(None, ["workload.value_size=fixed(255MiB)", "workload.mix={set=1}"])
