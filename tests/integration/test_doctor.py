"""`workbench doctor`: every item of the machine with what it is needed for, as a person and
a script read it; a missing or misnamed native engine says how to get it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WORKBENCH = [sys.executable, "-m", "workbench.cli.main"]
ITEMS = (
    "native engine (workbench-native)",
    "cargo",
    "redis-server",  # the systems' managed servers' programs (`ServerLauncher.programs`)
    "memcached",
    "make",
    "cc",
    "valkey-server",
    "varnishd",
    "ray",
    "libcachesim",
    "open files (ulimit -n)",
    "CPU governor",
    "load",
    "CPU idle",
    "hiccups",
    "latency targets",
)


def doctor(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WORKBENCH, "doctor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
    )


def test_doctor_lists_every_item_with_what_it_is_needed_for() -> None:
    res = doctor("--json", "--seconds", "1")
    assert res.returncode == 0, res.stderr
    items = json.loads(res.stdout)
    assert [i["name"] for i in items] == list(ITEMS)
    assert all(i["needed_for"] and i["found"] for i in items)
    by_name = {i["name"]: i for i in items}
    assert by_name["redis-server"]["ok"] and "v=" in by_name["redis-server"]["found"]
    assert by_name["memcached"]["ok"] and "1." in by_name["memcached"]["found"]
    assert "on 2 CPUs" in by_name["load"]["found"] or "CPUs" in by_name["load"]["found"]
    text = doctor("--seconds", "1").stdout
    for name in ITEMS:
        assert name in text
    assert text.count("needed for:") == len(ITEMS)


def test_a_missing_native_engine_names_the_path_and_the_way_to_it(tmp_path: Path) -> None:
    absent = tmp_path / "no-such-binary"
    res = doctor("--json", "--seconds", "0", WORKBENCH_NATIVE=str(absent))
    native = json.loads(res.stdout)[0]
    assert not native["ok"]
    assert str(absent) in native["found"] and "WORKBENCH_NATIVE" in native["found"]
    # a run on the native strategy says the same, in one line, exit 2
    run = subprocess.run(
        [*WORKBENCH, "run", "--set", "target.system=redis", "--set", "strategy.name=native"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "WORKBENCH_NATIVE": str(absent), "WORKBENCH_STORE": str(tmp_path / "s")},
    )
    assert run.returncode == 2
    assert str(absent) in run.stderr and run.stderr.count("\n") == 1


def test_the_build_hint_tells_a_pip_user_the_command() -> None:
    from workbench.spec.native_binary import build_hint

    hint = build_hint()
    assert "./dev setup" in hint
    assert "pip install" in hint and "cargo" in hint and "WORKBENCH_NATIVE" in hint


def test_the_machines_hiccups_say_which_targets_it_cannot_judge() -> None:
    res = doctor("--json", "--seconds", "1", "-t", "p99<1ns", "-t", "p99.9<100s")
    assert res.returncode == 0, res.stderr
    by_name = {i["name"]: i for i in json.loads(res.stdout)}
    hiccups = by_name["hiccups"]["found"]
    assert hiccups.startswith("over 1 s (native meter, 1.00ms tick): p99 ") and "CPU 0:" in hiccups
    targets = by_name["latency targets"]
    assert not targets["ok"]  # no machine wakes within half a nanosecond
    assert "cannot judge p99<1ns: 1% of moments wait" in targets["found"]
    assert "p99.9<" not in targets["found"]  # 100 s is judged
    assert by_name["CPU idle"]["found"]
    bad = doctor("-t", "hit_rate>0.5", "--seconds", "0")
    assert bad.returncode == 2 and "expected a percentile latency" in bad.stderr
