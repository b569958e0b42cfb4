"""`workbench run` with the flags memtier and redis-benchmark users type, files from the run,
--print-id, --version and completion: real subprocesses against real servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.cli.flags import Flags, load_with_flags
from workbench.results.store import Store
from workbench.sdk.errors import SpecError
from workbench.sdk.servers import ServerProcess
from workbench.spec.native_binary import binary_path

WORKBENCH = [sys.executable, "-m", "workbench.cli.main"]
QUICK = ["--set", "load.warmup=0", "--set", "load.interval=0.25"]


def run(args: list[str], store: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    return subprocess.run(
        [*WORKBENCH, *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite3"


# --- each flag lands in its spec field (through the --set parser) -------------------------


def test_each_flag_sets_its_field() -> None:
    spec = load_with_flags(
        None,
        Flags(
            clients="8",
            workers="2",
            data_size="4KiB",
            requests="5000",
            test_time="1m",
            ratio="1:10",
            key_pattern="Z:Z",
            key_maximum="500",
            rate="2000",
            ttl="30s",
            repeat=3,
        ),
        [],
    )
    assert spec.load.concurrency == 8
    assert spec.load.workers == 2
    assert spec.workload.value_size == "4KiB"
    assert spec.load.ops == 5000
    assert spec.load.duration == 60.0
    assert dict(spec.workload.mix) == {"set": 1, "get": 10}
    assert spec.workload.key_distribution == "zipf(0.99)"
    assert spec.workload.keys == 500
    assert spec.load.rate == 2000
    assert spec.workload.ttl == "30s"
    assert spec.load.repeat == 3


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("uniform", "uniform"),
        ("R:R", "uniform"),
        ("S:S", "sequential"),
        ("gaussian", "gaussian(0.5,0.1667)"),
        ("G:G", "gaussian(0.5,0.1667)"),
        ("hotcold", "hotcold(0.8,0.2)"),
        ("zipf(1.2)", "zipf(1.2)"),
    ],
)
def test_key_patterns_in_memtier_and_workbench_spellings(pattern: str, expected: str) -> None:
    spec = load_with_flags(None, Flags(key_pattern=pattern), [])
    assert spec.workload.key_distribution == expected


def test_a_list_after_a_flag_sweeps_and_set_has_the_last_word() -> None:
    spec = load_with_flags(None, Flags(clients="[1,4]", data_size="[100,1KiB,uniform(8,64)]"), [])
    assert {a.path: a.values for a in spec.sweep} == {
        "load.concurrency": (1, 4),
        "workload.value_size": ("100", "1KiB", "uniform(8,64)"),
    }
    spec = load_with_flags(None, Flags(clients="8"), ["load.concurrency=3"])
    assert spec.load.concurrency == 3


def test_server_url_picks_the_system_from_its_scheme() -> None:
    redis = load_with_flags(None, Flags(server="redis://127.0.0.1:7001/2"), [])
    assert redis.target.system == "redis"
    assert redis.target.options["url"] == "redis://127.0.0.1:7001/2"
    assert redis.target.managed is False
    mc = load_with_flags(None, Flags(server="memcached://127.0.0.1:7002,127.0.0.1:7003"), [])
    assert mc.target.system == "memcached"
    assert mc.target.options["servers"] == ["127.0.0.1:7002", "127.0.0.1:7003"]
    http = load_with_flags(None, Flags(server="http://127.0.0.1:7004/"), [])
    assert http.target.system == "http"
    assert http.target.options["base_url"] == "http://127.0.0.1:7004"


def test_server_of_another_system_drops_the_profiles_target_and_strategy(
    tmp_path: Path,
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        '[target]\nsystem = "http"\nmanaged = true\noptions = { get = "GET /x?k={key}" }\n'
        '[strategy]\nname = "lean"\n'
    )
    spec = load_with_flags(profile, Flags(server="redis://127.0.0.1:7001"), [])
    assert spec.target.system == "redis"
    assert dict(spec.target.options) == {"url": "redis://127.0.0.1:7001"}
    assert spec.target.managed is False
    assert spec.strategy.name == ""  # the system's default
    # the same system keeps the profile's other options
    spec = load_with_flags(profile, Flags(server="http://127.0.0.1:7004"), [])
    assert spec.target.options["get"] == "GET /x?k={key}"
    assert spec.strategy.name == "lean"


def test_pipeline_sets_the_native_engines_depth_by_default() -> None:
    if binary_path() is None:
        pytest.skip("the native engine is not built")
    spec = load_with_flags(None, Flags(server="redis://127.0.0.1:7001", pipeline=32), [])
    assert spec.strategy.name == "native"  # N in flight per connection, as memtier
    assert dict(spec.strategy.options) == {"pipeline": 32}
    spec = load_with_flags(None, Flags(server="memcached://127.0.0.1:7002", pipeline=4), [])
    assert (spec.strategy.name, dict(spec.strategy.options)) == ("native", {"pipeline": 4})


def test_pipeline_picks_the_pipelining_strategy_or_sets_its_depth(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Without the native engine, the system's Python strategy that pipelines.
    monkeypatch.setenv("WORKBENCH_NATIVE", str(tmp_path / "absent"))
    spec = load_with_flags(None, Flags(server="redis://127.0.0.1:7001", pipeline=32), [])
    assert spec.strategy.name == "pipeline"
    assert spec.strategy.options["batch"] == 32
    spec = load_with_flags(
        None, Flags(server="redis://127.0.0.1:7001", pipeline=1), ["strategy.name=async-pool"]
    )
    assert spec.strategy.name == "async-pool"  # no pipelining: every strategy does that


@pytest.mark.parametrize(
    ("flags", "sets", "where", "words"),
    [
        (Flags(pipeline=8), [], "--pipeline", "no embedded strategy pipelines"),
        (
            Flags(server="redis://127.0.0.1:7001", pipeline=8),
            ["strategy.name=async-pool"],
            "--pipeline",
            "pipelines with strategy pipeline",
        ),
        (Flags(server="ftp://127.0.0.1"), [], "--server", "redis://HOST:PORT"),
        (Flags(server="load.duration=1"), [], "--server", "HOST[:PORT]"),  # -s was --set
        (Flags(server="redis://:secret@127.0.0.1:6379"), [], "--server", "never stored"),
        (Flags(ratio="1-10"), [], "--ratio", "SET:GET"),
        (Flags(key_pattern="R:S"), [], "--key-pattern", "same pattern"),
        (Flags(key_pattern="zipfian"), [], "--key-pattern", "uniform (R)"),
        (Flags(test_time="soon"), [], "load.duration", "a duration such as"),
        (Flags(clients="0"), [], "load.concurrency", "at least 1"),
        (Flags(repeat=0), [], "load.repeat", "1 or more"),
        (Flags(threads="4"), [], "-t", "use -w N"),
        (Flags(data_size_range="100"), [], "--data-size-range", "MIN-MAX"),
        (Flags(data_size="100", data_size_range="1-2"), [], "--data-size-range", "one of"),
        (Flags(data_size_list="32"), [], "--data-size-list", "SIZE:WEIGHT"),
        (Flags(key_minimum=5), [], "--key-minimum", "--key-maximum"),
        (Flags(key_minimum=50, key_maximum="10"), [], "--key-minimum", "MIN <= MAX"),
        (Flags(expiry_range="x"), [], "--expiry-range", "MIN-MAX"),
        (Flags(print_percentiles="50,200"), [], "--print-percentiles", "up to 100"),
        (Flags(data_size_range="1-300MiB"), [], "--data-size-range", "256 MiB"),
    ],
)
def test_bad_flags_name_the_flag_or_field(
    flags: Flags, sets: list[str], where: str, words: str
) -> None:
    with pytest.raises(SpecError) as err:
        load_with_flags(None, flags, sets)
    assert where in err.value.where
    assert words in err.value.message


# --- durations and sizes with units --------------------------------------------------------


def test_durations_and_sizes_take_units_in_profiles_and_set(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        '[load]\nduration = "1m"\nwarmup = "500ms"\ninterval = "2s"\n'
        '[workload.pubsub]\nmessage_size = "1KiB"\n'
    )
    spec = load_with_flags(profile, Flags(), [])
    assert (spec.load.duration, spec.load.warmup, spec.load.interval) == (60.0, 0.5, 2.0)
    assert spec.workload.pubsub.message_size == 1024
    spec = load_with_flags(None, Flags(), ["load.duration=60s", "load.warmup=0.25"])
    assert (spec.load.duration, spec.load.warmup) == (60.0, 0.25)
    with pytest.raises(SpecError) as err:
        load_with_flags(profile, Flags(), ["load.interval=2 fortnights"])
    assert err.value.where == f"{profile}: load.interval"


# --- the command as a person runs it -------------------------------------------------------


def test_memtier_command_in_one_line_against_real_redis(
    redis_server: ServerProcess, store: Path
) -> None:
    # memtier's own spelling of the server: -s HOST -p PORT (redis, its default protocol)
    res = run(
        [
            "run", "-s", redis_server.host, "-p", str(redis_server.port), "-c", "4", "-w", "1",
            "--ratio", "1:10", "-d", "100",
            "--key-pattern", "Z:Z", "--key-maximum", "1000", "--test-time", "1s",
            "--pipeline", "4", *QUICK,
        ],
        store,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    stored = Store(store).load("last")
    step = stored.steps[0].spec
    assert step["target"]["system"] == "redis"
    if binary_path() is not None:  # the native engine: 4 in flight on each client's connection
        assert step["strategy"] == {"name": "native", "options": {"pipeline": 4}}
        assert "4 clients = 4 connections x 4 in flight, 1 worker" in res.stdout
        assert stored.name == f"redis {redis_server.host}:{redis_server.port} native c4 p4"
        assert stored.steps[0].stats.ops > 0
    else:
        assert step["strategy"] == {"name": "pipeline", "options": {"batch": 4}}
    assert step["workload"]["mix"] == {"set": 1, "get": 10}
    assert step["load"]["duration"] == 1.0


def test_pipeline_keeps_n_in_flight_on_a_real_redis_server(
    redis_server: ServerProcess, store: Path
) -> None:
    """--pipeline 16 on the native engine: the server sees one connection per client, and
    the run goes faster than with one request in flight (memtier's meaning of --pipeline)."""
    if binary_path() is None:
        pytest.skip("the native engine is not built")
    url = f"redis://{redis_server.host}:{redis_server.port}"
    rates = {}
    for depth in (1, 16):
        res = run(
            ["run", "-q", "-s", url, "-c", "2", "-w", "1", "-n", "40000", "--pipeline",
             str(depth), *QUICK],
            store,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
        stored = Store(store).load("last")
        assert stored.steps[0].spec["strategy"]["options"] == {"pipeline": depth}
        assert stored.steps[0].stats.ops == 40000
        rates[depth] = Store(store).list_runs()[0].ops_per_s
    assert rates[16] > rates[1]


def test_memtier_spellings_of_sizes_keys_and_expiry() -> None:
    spec = load_with_flags(
        None,
        Flags(data_size_range="32-1KiB", key_minimum=1, key_maximum="1000", expiry_range="5-10"),
        [],
    )
    assert spec.workload.value_size == "uniform(32,1KiB)"
    assert spec.workload.keys == 1000  # 1..1000
    assert spec.workload.ttl == "range(5,10)"
    spec = load_with_flags(None, Flags(data_size_list="32:7,1024:3"), [])
    assert spec.workload.value_size == "weighted(32:7,1024:3)"


def test_memtiers_threads_flag_gives_a_hint_and_exits_2(store: Path) -> None:
    res = run(["run", "-c", "50", "-t", "4"], store)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1  # one line
    assert "use -w N" in res.stderr and "-c 200 -w 4" in res.stderr
    assert not store.exists() or not Store(store).list_runs()


def test_run_and_search_take_the_same_familiar_flags() -> None:
    """One definition: every familiar flag is a parameter of both commands."""
    import inspect

    from workbench.cli import run as run_cli
    from workbench.cli import search as search_cli
    from workbench.cli.flag_options import FLAG_PARAMETERS

    names = {name for name, _, _ in FLAG_PARAMETERS}
    for command in (run_cli.run_command, search_cli.command):
        assert names <= set(inspect.signature(command).parameters), command
    assert "threads" in inspect.signature(run_cli.run_command).parameters  # -t: the hint


def test_print_percentiles_lists_those_percentiles(store: Path) -> None:
    res = run(
        ["run", "-q", "-n", "500", "-c", "1", "-w", "1", "--print-percentiles", "50,99.5",
         *QUICK], store,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    listed = res.stdout.split("Response times percentiles:")[1].split("max")[0]
    assert "50% <" in listed and "99.5% <" in listed and "99.9%" not in listed


def test_fail_on_is_stored_and_check_reapplies_it(store: Path) -> None:
    res = run(
        ["run", "-q", "-n", "500", "-c", "1", "-w", "1", *QUICK, "--fail-on", "ops_per_s>1"],
        store,
    )
    assert res.returncode == 0, res.stderr
    stored = Store(store).load("last")
    assert stored.spec["checks"] == {"fail_on": ["ops_per_s>1"]}
    shown = json.loads(run(["runs", "show", "last", "--json"], store).stdout)
    assert shown["runs"][0]["spec"]["checks"] == {"fail_on": ["ops_per_s>1"]}
    again = run(["check", stored.id], store)
    assert again.returncode == 0, again.stderr
    assert "checks: 1 of 1 passed" in again.stdout
    failing = run(["check", stored.id, "--fail-on", "ops_per_s>1e12"], store)
    assert failing.returncode == 3
    assert "checks: 1 of 2 passed" in failing.stdout


def test_requests_flag_runs_the_given_number_of_ops_on_memcached(
    memcached_server: ServerProcess, store: Path
) -> None:
    url = f"memcached://{memcached_server.host}:{memcached_server.port}"
    res = run(["run", "-q", "-s", url, "-c", "2", "-w", "1", "-n", "2000", *QUICK], store)
    assert res.returncode == 0, res.stderr
    row = Store(store).list_runs()[0]
    assert row.system == "memcached"
    stored = Store(store).load(row.id)
    totals = stored.steps[0].stats
    assert totals.ops + totals.error_count == 2000


def test_an_error_in_a_field_names_the_flag_that_set_it() -> None:
    with pytest.raises(SpecError) as err:
        load_with_flags(None, Flags(clients="many"), [])
    assert err.value.where == "load.concurrency (set by -c/--clients)"
    with pytest.raises(SpecError) as err:  # --set gave it: no flag is named
        load_with_flags(None, Flags(), ["load.concurrency=many"])
    assert err.value.where == "--set: load.concurrency"


def test_bad_flag_exits_2_before_running(store: Path) -> None:
    res = run(["run", "--pipeline", "8"], store)
    assert res.returncode == 2
    assert res.stderr.startswith("error: --pipeline:")
    assert not store.exists() or not Store(store).list_runs()


def test_set_short_form_is_now_the_server(store: Path) -> None:
    res = run(["run", "-s", "load.duration=1"], store)
    assert res.returncode == 2
    assert "--server" in res.stderr


def test_files_from_the_run_equal_the_reports_of_the_stored_run(
    store: Path, tmp_path: Path
) -> None:
    json_out, csv_out, hlog_out = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "r.hlog"
    crit = tmp_path / "out" / "crit.md"
    crit.parent.mkdir()  # a run creates no folder (issue 25 item 11)
    res = run(
        [
            "run", "-q", "-n", "3000", "-c", "2", "-w", "1", *QUICK,
            "--json-out", str(json_out), "--csv-out", str(csv_out), "--hlog-out", str(hlog_out),
            "--report", f"criterion:{crit}", "--report", "table",
        ],
        store,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    run_id = json.loads(json_out.read_text())["runs"][0]["id"]
    for fmt, path in (
        ("json", json_out),
        ("csv", csv_out),
        ("hlog", hlog_out),
        ("criterion", crit),
    ):
        again = run(["report", run_id, "--format", fmt], store)
        assert again.returncode == 0, again.stderr
        assert path.read_text() == again.stdout, fmt
    # `--report table` with no file: on stdout, after the run's own summary line
    table = run(["report", run_id, "--format", "table"], store).stdout
    assert res.stdout.endswith(table)
    assert f"run {run_id} completed" in res.stdout.split(table)[0]


def test_print_id_puts_the_run_id_alone_on_stdout(store: Path) -> None:
    res = run(["run", "--print-id", "-n", "500", "-c", "1", "-w", "1", *QUICK], store)
    assert res.returncode == 0, res.stderr
    run_id = res.stdout.strip()
    assert res.stdout == run_id + "\n"
    assert Store(store).resolve(run_id) == run_id
    assert f"run {run_id} completed" in res.stderr
    assert "Response times percentiles:" in res.stderr


def test_runs_list_and_show_as_json(store: Path) -> None:
    empty = run(["runs", "list", "--json"], store)
    assert json.loads(empty.stdout) == []
    assert run(["run", "-q", "-n", "500", "-w", "1", *QUICK, "--name", "j"], store).returncode == 0
    rows = json.loads(run(["runs", "list", "--json"], store).stdout)
    assert [(r["name"], r["status"], r["steps"]) for r in rows] == [("j", "completed", 1)]
    shown = json.loads(run(["runs", "show", "j", "--json"], store).stdout)
    assert shown["runs"][0]["id"] == rows[0]["id"]
    assert shown == json.loads(run(["report", "j", "--format", "json"], store).stdout)


def test_version_and_completion(store: Path) -> None:
    from workbench import __version__

    res = run(["--version"], store)
    assert (res.returncode, res.stdout) == (0, f"workbench {__version__}\n")
    # typer's own completion: the script it prints for bash registers the installed command
    installed = Path(sys.executable).parent / "workbench"
    script = subprocess.run(
        [str(installed), "--show-completion", "bash"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert script.returncode == 0, script.stderr
    assert "complete -o default -F _workbench_completion workbench" in script.stdout
    assert "_WORKBENCH_COMPLETE=complete_bash" in script.stdout
    helptext = run(["--help"], store).stdout
    assert "--install-completion" in helptext
    assert "130 interrupted" in helptext


def test_every_workbench_command_in_docs_cli_md_loads() -> None:
    """The one-line translations in docs/cli.md parse and give a valid spec."""
    import dataclasses
    import shlex

    import typer.main

    from workbench.cli.main import app

    run_cmd = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    doc = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    commands = [ln for ln in doc.splitlines() if ln.startswith("workbench run ")]
    assert len(commands) >= 4
    names = {f.name for f in dataclasses.fields(Flags)}
    for line in commands:
        ctx = run_cmd.make_context("run", shlex.split(line)[2:])
        given = Flags(**{k: v for k, v in ctx.params.items() if k in names})
        spec = load_with_flags(ctx.params["profile"], given, ctx.params["set_"] or [])
        assert spec.target.system in ("redis", "memcached", "http"), line
    for flag in (
        "--clients",
        "--workers",
        "--data-size",
        "--requests",
        "--test-time",
        "--ratio",
        "--key-pattern",
        "--key-maximum",
        "--pipeline",
        "--rate",
        "--ttl",
        "--server",
        "--repeat",
        "--json-out",
        "--csv-out",
        "--hlog-out",
        "--report",
        "--print-id",
    ):
        assert f"`{flag}" in doc or f", `{flag}" in doc, flag  # fmt: skip
