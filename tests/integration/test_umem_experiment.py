"""umem-cache through the engine: managed builds, the 003 profile, refusals, lost servers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import collect, finished
from umem_support import MiB, server_options, start, umem_source
from workbench_umem import build as umem_build
from workbench_umem import plugin
from workbench_umem.build import BuildConfig, build, build_key, source_commit, vendored_source

from workbench.conformance import check_plugin, failures
from workbench.report import render
from workbench.results.events import Event, Interval, Notice, StepStarted
from workbench.results.store import Store
from workbench.sdk.errors import SpecError, TargetError
from workbench.spec.steps import load_spec

PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "memory-limit-hit-rate-quick.toml"
QUICK = ["load.ops=400", "load.warmup_ops=400"]  # as tests/integration/test_profiles.py


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "runs.sqlite")


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def _wait_gone(pid: int, seconds: float = 5.0) -> bool:
    for _ in range(int(seconds / 0.05)):  # bounded
        if _gone(pid):
            return True
        time.sleep(0.05)
    return _gone(pid)


# Refused before the run


@pytest.mark.parametrize(
    ("override", "where", "why"),
    [
        ("workload.mix={get=1}", "workload.mix", "GET-OR-SET"),
        ("workload.mix={cache_aside=1, set=1}", "workload.mix", "no plain set"),
        ("workload.ttl=fixed(2s)", "workload.ttl", "no TTL"),
    ],
)
def test_what_umem_cache_lacks_is_a_spec_error_saying_why(
    override: str, where: str, why: str
) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(None, ["target.system=umem", "workload.mix={cache_aside=1}", override])
    assert info.value.where.endswith(where)
    assert why in info.value.message


def test_cache_aside_and_delete_are_what_it_runs() -> None:
    spec = load_spec(None, ["target.system=umem", "workload.mix={cache_aside=4, delete=1}"])
    assert spec.target.system == "umem"


# Building


def test_the_commit_is_read_from_the_tarball() -> None:
    assert source_commit(umem_source()) == "9ba02d4"


def test_a_build_is_made_once_per_option_set_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = umem_source()
    config = BuildConfig(memory=4 * MiB, threads=1, max_conn=64)
    first = build(source, config, tmp_path)
    assert first.binary.is_file() and first.commit == "9ba02d4"
    assert first.binary.parent.name == build_key(source, config)
    assert "MEM_LIMIT=4194304" in first.log.read_text()
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))  # a rebuild could not run make
    again = build(source, config, tmp_path)
    assert again.binary == first.binary
    other = BuildConfig(memory=4 * MiB, threads=2, max_conn=64)
    assert build_key(source, other) != build_key(source, config)
    leftovers = [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")]
    assert leftovers == [first.binary.parent.name]  # no half builds, no stray logs


def test_a_failed_build_is_one_line_naming_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "umem-cache-broken"
    broken.mkdir()
    (broken / "Makefile").write_text("umem-cache:\n\t@echo 'main.c:1: error: broken'; exit 1\n")
    with pytest.raises(TargetError) as info:
        build(broken, BuildConfig(memory=4 * MiB, threads=1, max_conn=64), tmp_path / "cache")
    message = info.value.message
    assert "\n" not in message and info.value.where == "target.server.source"
    log = Path(message.rsplit("build log: ", 1)[1])
    assert "error: broken" in log.read_text()
    assert not (broken / "umem-cache").exists()  # the source is never built in place


def test_without_gcc_or_without_source_the_start_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert plugin.server is not None
    options = server_options()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing built yet
    monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    with pytest.raises(TargetError) as info:
        plugin.server.start(options)
    assert "make and gcc not installed" in info.value.message
    with pytest.raises(TargetError) as info:
        plugin.server.start({**options, "source": str(tmp_path / "nowhere")})
    assert "no such file or directory" in info.value.message
    assert vendored_source(tmp_path) is None
    # A checkout with no shared/vendor/ above it cannot be made here: stand in for it.
    monkeypatch.setattr(umem_build, "vendored_source", lambda start=None: None)
    with pytest.raises(TargetError) as info:
        plugin.server.start({**options, "source": ""})
    assert info.value.where == "target.server.source"
    assert "set target.server.source" in info.value.message


# The managed server


def test_the_managed_server_dies_with_the_process_that_started_it() -> None:
    options = server_options(memory=16 * MiB, threads=1)
    script = (
        "import sys, time\n"
        "from workbench_umem.server import start_umem\n"
        f"server = start_umem({options!r})\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert not _gone(pid)
    finally:
        parent.kill()  # SIGKILL: no atexit, no cleanup of its own
        parent.wait()
    assert _wait_gone(pid), f"umem-cache {pid} outlived its parent"


async def test_a_managed_run_records_version_limit_and_memory(store: Store) -> None:
    umem_source()
    events = await collect(
        [
            "target.system=umem",
            "target.managed=true",
            'target.server={memory="16MiB", threads=2, max_conn=64}',
            # No deletes: one that meets another client's fill closes that client's
            # connection (umem-cache's way), an error this test does not want.
            "workload.mix={cache_aside=1}",
            "workload.keys=300",
            'workload.value_size="uniform(0,64KiB)"',
            "load.ops=2000",
            "load.concurrency=4",
            "load.workers=1",
        ],
        store,
    )
    (started,) = [e for e in events if isinstance(e, StepStarted)]
    (step,) = finished(events)
    assert step.status == "completed", step.stats.first_errors
    assert step.stats.errors == {}
    assert started.server["version"] == "umem-cache 9ba02d4"
    assert started.server["address"].startswith("[::1]:")
    assert step.stats.server["limit_bytes"] == 16 * MiB
    assert step.stats.server["peak_rss_bytes"] > 0 and step.stats.server["rss_bytes"] > 0
    assert 0 < step.stats.hits < step.stats.hits + step.stats.misses
    assert _wait_gone(started.server["pid"])


async def test_a_killed_server_is_counted_as_errors_and_the_run_kept(store: Store) -> None:
    server = start(memory=16 * MiB, threads=2)
    killed: list[float] = []
    try:

        def on_event(e: Event) -> None:
            # Two measured seconds before the kill, one after, by the intervals' clock (they
            # are a quarter second long): a refused connection fails fast, and on a loaded
            # machine a second of them outnumbered one of answers (more than half failed:
            # the step read "failed").
            if isinstance(e, Interval) and not e.warmup and e.elapsed > 1.9 and not killed:
                killed.append(e.elapsed)
                os.kill(server.pid, signal.SIGKILL)

        events = await collect(
            [
                "target.system=umem",
                f'target.options.address="{server.target_options["address"]}"',
                "target.options.threads=2",
                "target.options.timeout=1",
                "workload.mix={cache_aside=1}",
                "load.duration=3",
                "load.concurrency=4",
                "load.workers=1",
            ],
            store,
            on_event=on_event,
        )
    finally:
        server.stop()
    (step,) = finished(events)
    s = step.stats
    assert killed, "the step ended before two measured seconds"
    assert step.status == "completed"
    assert s.ops > 0 and s.error_count > 0
    assert set(s.errors) <= {"connection", "timeout"}, s.first_errors
    assert store.load(events[0].run_id).steps[0].stats.error_count == s.error_count  # type: ignore[attr-defined]


async def test_a_step_that_cannot_build_fails_in_one_line_and_the_others_run(
    store: Store, tmp_path: Path
) -> None:
    broken = tmp_path / "umem-cache-broken"
    broken.mkdir()
    (broken / "Makefile").write_text("umem-cache:\n\texit 1\n")
    events = await collect(
        [
            "workload.mix={cache_aside=1}",
            "load.ops=200",
            "load.workers=1",
            'sweep=[{path="target", values=['
            f'{{system="umem", managed=true, server={{source="{broken}"}}}}, '
            '{system="memcached", managed=true, server={memory_mb=16}}]}]',
        ],
        store,
    )
    umem, memcached = finished(events)
    assert umem.status == "failed" and memcached.status == "completed"
    (notice,) = [e for e in events if isinstance(e, Notice) and e.step == umem.step]
    assert "build log: " in notice.message and "\n" not in notice.message


# The experiment and the kit


async def test_the_003_profile_quick_form_runs_all_three_systems(store: Store) -> None:
    umem_source()
    events = await collect(QUICK, store, profile=PROFILE)
    steps = finished(events)
    systems = [e.spec["target"]["system"] for e in events if isinstance(e, StepStarted)]
    assert systems == ["umem", "memcached", "redis"]
    for step in steps:
        assert step.status == "completed", step.stats.first_errors
        assert step.stats.hits + step.stats.misses == 400
    report = render(store.load(events[0].run_id), "hitrate")
    umem_section = report.split("### umem/", 1)[1].split("### ", 1)[0]
    assert "commit: 9ba02d4" in umem_section
    assert "built: MEM_LIMIT=67108864 THREAD_NR=2 MAX_CONN=512" in umem_section
    assert "get:      400" in umem_section and "VmHWM:" in umem_section
    assert "| umem/conn-per-thread/concurrency = 8 | completed | 400 |" in report


def test_the_conformance_kit_passes_with_a_managed_server() -> None:
    umem_source()
    results = check_plugin("umem", managed=True)
    assert not failures(results), "\n".join(r.line() for r in results)
    skipped = {r.name: r.reason for r in results if r.status == "skip"}
    assert set(skipped) == {"ttl", "pubsub", "conditional"}  # umem has no add/cas/incr
    assert "no TTL" in skipped["ttl"]
