"""Familiar load-generator flags (memtier_benchmark, redis-benchmark) as `--set` overrides.

Each flag becomes one or more ``PATH=VALUE`` texts that go through the same parser as
``--set`` (`workbench.spec.load.parse_override`), so a flag can do nothing a profile cannot,
and a list written after a flag (``-c [1,4,16]``) sweeps like it does after ``--set``.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, get_type_hints
from urllib.parse import urlsplit

from workbench.cli.address import (
    option_overrides,
    profile_scheme,
    quoted,
    scheme_named,
    server_overrides,
    server_url,
    system_of_scheme,
    systems,
    target_of,
    with_tls_scheme,
)
from workbench.cli.flag_options import FLAG_PARAMETERS
from workbench.sdk.discovery import load_plugin
from workbench.sdk.errors import SpecError
from workbench.spec.load import read_profile, spec_from_data
from workbench.spec.model import DEFAULT_SYSTEM, Spec
from workbench.spec.profile_files import find_profile
from workbench.spec.steps import load_spec
from workbench.workload.forms import KEY_DEFAULTS

# memtier's --key-pattern letters (R random, S sequential, G gaussian, Z zipf) and the
# workbench's own names; a bare name takes memtier's default parameters (workload/forms.py's).
KEY_NAMES = {"r": "uniform", "random": "uniform", "uniform": "uniform", "s": "sequential",
             "sequential": "sequential", "g": "gaussian", "gaussian": "gaussian", "z": "zipf",
             "zipf": "zipf", "hotcold": "hotcold"}  # fmt: skip
KEY_PATTERNS = {letter: f"{name}({','.join(KEY_DEFAULTS[name])})" if name in KEY_DEFAULTS
                else name for letter, name in KEY_NAMES.items()}  # fmt: skip


@dataclass(frozen=True)
class Flags:
    """The familiar flags given on the command line; None: not given."""

    clients: str | None = None
    workers: str | None = None
    data_size: str | None = None
    requests: str | None = None
    test_time: str | None = None
    ratio: str | None = None
    key_pattern: str | None = None
    key_maximum: str | None = None
    pipeline: int | None = None
    rate: str | None = None
    ttl: str | None = None
    server: str | None = None
    host: str | None = None  # memtier's -s HOST and redis-benchmark's -h HOST: see address.py
    port: int | None = None
    protocol: str | None = None
    repeat: int | None = None
    data_size_range: str | None = None
    data_size_list: str | None = None
    key_minimum: int | None = None
    expiry_range: str | None = None
    print_percentiles: str | None = None
    hide_histogram: bool | None = None
    threads: str | None = None  # memtier's -t: refused with a hint, never run
    tls: bool | None = None
    cert: str | None = None
    key: str | None = None
    cacert: str | None = None
    tls_skip_verify: bool | None = None
    sni: str | None = None
    cluster_mode: bool | None = None


def ratio_override(text: str) -> str:
    """memtier's ``--ratio SET:GET`` as weights of the mix, e.g. 1:10."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*", text)
    if not m or float(m.group(1)) + float(m.group(2)) <= 0:
        raise SpecError(f"expected SET:GET weights such as 1:10; got {text!r}", "--ratio")
    sets, gets = m.group(1), m.group(2)
    return f"workload.mix={{set={sets},get={gets}}}"


def key_pattern(text: str) -> str:
    """A key distribution from memtier's letters (R:R, Z:Z), a bare name or a full form."""
    raw = text.strip()
    # memtier gives one letter for sets and one for gets; the workbench has one distribution.
    m = re.fullmatch(r"([A-Za-z]):([A-Za-z])", raw)
    if m:
        if m.group(1).lower() != m.group(2).lower():
            raise SpecError(
                f"expected the same pattern for sets and gets (e.g. R:R); got {text!r}",
                "--key-pattern",
            )
        raw = m.group(1)
    if raw.lower() in KEY_PATTERNS:
        return KEY_PATTERNS[raw.lower()]
    if "(" in raw:  # zipf(1.2), hotcold(0.9,0.1): checked with the rest of the spec
        return raw
    names = "uniform (R), sequential (S), gaussian (G), zipf (Z), hotcold"
    raise SpecError(
        f"expected one of {names}, or a form such as zipf(1.2); got {text!r}", "--key-pattern"
    )


def tls_overrides(flags: Flags, profile: Mapping[str, Any]) -> list[str]:
    """memtier's --tls, --cert, --key, --cacert, --tls-skip-verify and --sni (redis-benchmark's
    --tls) as the target's TLS options; --tls on a managed server makes it a TLS server, on
    another the system says how its options speak TLS (`Urls.with_tls`)."""
    options = {
        "tls_cert": flags.cert,
        "tls_key": flags.key,
        "tls_ca": flags.cacert,
        "tls_sni": flags.sni,
    }
    out = [f"target.options.{name}={quoted(v)}" for name, v in options.items() if v is not None]
    if flags.tls_skip_verify:
        out.append("target.options.tls_insecure=true")
    if not flags.tls:
        return out
    target = target_of(profile)
    if flags.server is None and target.get("managed"):
        return [*out, "target.server.tls=true"]
    if flags.server is not None:
        system, given = system_of_scheme(urlsplit(flags.server).scheme), {}
    else:
        system = load_plugin(str(target.get("system", DEFAULT_SYSTEM)))
        options = target.get("options", {})
        given = options if isinstance(options, Mapping) else {}
    urls = system.urls if system is not None else None
    if system is None or urls is None or urls.with_tls is None:
        name = system.name if system is not None else "this target"
        raise SpecError(f"expected a target that speaks TLS; {name} declares none", "--tls")
    schemes = {*urls.tls_schemes, *urls.tls_schemes.values()}
    if flags.server is not None and urlsplit(flags.server).scheme.lower() in schemes:
        return out  # the URL's own scheme says TLS (`with_tls_scheme`)
    return out + option_overrides(urls.with_tls(given) or {})


def with_address(flags: Flags, profile: Mapping[str, Any]) -> Flags:
    """The flags with ``-s``/``-h``/``-p``/``-P`` made into one ``-s`` URL."""
    url = server_url(flags.server, flags.host, flags.port, flags.protocol,
                     lambda: profile_scheme(target_of(profile), load_plugin, DEFAULT_SYSTEM),
                     lambda name: scheme_named(name, systems()))  # fmt: skip
    return replace(flags, server=url, host=None, port=None, protocol=None)


def to_overrides(flags: Flags, profile: Mapping[str, Any]) -> list[str]:
    """The `--set` texts the flags stand for, in a fixed order (the server first, so the
    others apply to the system it picks). `--pipeline` is resolved later: it needs the
    system's strategies (see `pipeline_overrides`)."""
    out: list[str] = []
    if flags.server is not None:
        server = flags.server
        if flags.tls:  # memtier/redis-benchmark --tls with -s redis://: rediss://
            server = with_tls_scheme(server)
        out += server_overrides(server, profile)
    out += tls_overrides(flags, profile)
    if flags.cluster_mode:  # memtier --cluster-mode, redis-benchmark --cluster
        target = target_of(profile)
        managed = flags.server is None and target.get("managed")
        out.append("target.server.cluster=true" if managed else "target.options.cluster=true")
    simple = (
        ("load.concurrency", flags.clients),
        ("load.workers", flags.workers),
        ("load.ops", flags.requests),
        ("load.duration", flags.test_time),
        ("load.rate", flags.rate),
        ("workload.keys", flags.key_maximum),
    )
    out += [f"{path}={value}" for path, value in simple if value is not None]
    if flags.data_size is not None:
        out.append(f"workload.value_size={_sweep_or_string(flags.data_size)}")
    if flags.ttl is not None:
        out.append(f"workload.ttl={_sweep_or_string(flags.ttl)}")
    if flags.ratio is not None:
        out.append(ratio_override(flags.ratio))
    if flags.key_pattern is not None:
        out.append(f"workload.key_distribution={quoted(key_pattern(flags.key_pattern))}")
    if flags.repeat is not None:
        out.append(f"load.repeat={flags.repeat}")
    out += _memtier_overrides(flags)
    return out


def _memtier_overrides(flags: Flags) -> list[str]:
    """memtier's spellings of value sizes, key range and expiry, as spec values."""
    for group in (("data_size", "data_size_range", "data_size_list"), ("ttl", "expiry_range")):
        given = [n for n in group if getattr(flags, n) is not None]
        if len(given) > 1:
            names = " and ".join("--" + n.replace("_", "-") for n in given)
            raise SpecError(f"expected one of them; got {names}", "--" + given[1].replace("_", "-"))
    out: list[str] = []
    if flags.data_size_range is not None:
        low, high = _range(flags.data_size_range, "--data-size-range")
        out.append(f"workload.value_size={quoted(f'uniform({low},{high})')}")
    if flags.data_size_list is not None:
        pairs = [p.strip() for p in flags.data_size_list.split(",") if p.strip()]
        if not pairs or not all(re.fullmatch(r"[^:]+:\d+(\.\d+)?", p) for p in pairs):
            raise SpecError(
                f"expected SIZE:WEIGHT,... such as 32:7,1024:3; got {flags.data_size_list!r}",
                "--data-size-list",
            )
        out.append(f"workload.value_size={quoted('weighted(' + ','.join(pairs) + ')')}")
    if flags.key_minimum is not None:
        out.append(f"workload.keys={_key_count(flags)}")
    if flags.expiry_range is not None:
        low, high = _range(flags.expiry_range, "--expiry-range")
        out.append(f"workload.ttl={quoted(f'range({low},{high})')}")
    return out


def _range(text: str, flag: str) -> tuple[str, str]:
    """memtier's MIN-MAX (e.g. 32-1024, 1KiB-4KiB)."""
    m = re.fullmatch(r"\s*([0-9][^-\s]*)\s*-\s*([0-9][^-\s]*)\s*", text)
    if not m:
        raise SpecError(f"expected MIN-MAX such as 32-1024; got {text!r}", flag)
    return m.group(1), m.group(2)


def _key_count(flags: Flags) -> int:
    """memtier's key range MIN..MAX as a number of keys (the workbench's keys count from 0:
    the range's size is what a run's hit rate and spread depend on)."""
    if flags.key_maximum is None:
        raise SpecError(
            "expected --key-maximum with --key-minimum (the range's top)", "--key-minimum"
        )
    try:
        top = int(flags.key_maximum)
    except ValueError:
        raise SpecError(
            f"expected a number of keys with --key-minimum; got {flags.key_maximum!r}",
            "--key-maximum",
        ) from None
    assert flags.key_minimum is not None
    if flags.key_minimum < 0 or top < flags.key_minimum:
        raise SpecError(
            f"expected 0 <= MIN <= MAX; got {flags.key_minimum}..{top}", "--key-minimum"
        )
    return top - flags.key_minimum + 1


def percentiles(text: str | None) -> tuple[float, ...]:
    """memtier's ``--print-percentiles 50,99,99.9``: the percentiles a summary lists."""
    if text is None:
        return ()
    try:
        values = tuple(float(p) for p in text.split(",") if p.strip())
    except ValueError:
        values = ()
    if not values or not all(0 < v <= 100 for v in values):
        raise SpecError(
            f"expected percentiles above 0 and up to 100 such as 50,99,99.9; got {text!r}",
            "--print-percentiles",
        )
    return values


# memtier counts clients per thread; `-t` there is workers here.
THREADS_HINT = (
    "that is memtier's --threads: use -w N (worker processes); -c counts clients in all, "
    "so memtier's -c 50 -t 4 is -c 200 -w 4"
)


def refuse_threads(flags: Flags) -> None:
    if flags.threads is not None:
        raise SpecError(THREADS_HINT, "-t")


def _sweep_or_string(text: str) -> str:
    """A list stays a list (a sweep) of strings, so that ``[100,1KiB,uniform(8,64)]`` needs no
    quotes; anything else is one string (100, 4KiB, uniform(8,64))."""
    stripped = text.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        return quoted(stripped)
    items, depth, current = [], 0, ""
    for ch in stripped[1:-1]:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    return "[" + ",".join(quoted(i.strip().strip("\"'")) for i in items if i.strip()) + "]"


# Strategy option names that set how many commands go out per round trip.
PIPELINE_OPTIONS = ("batch", "pipeline", "depth")


def pipeline_overrides(depth: int, system: Any, strategy_name: str, default_name: str) -> list[str]:
    """``--pipeline N`` on a strategy that pipelines. Without a named strategy: the default
    (`default_name`, the native engine where it can run: N in flight per connection, as
    memtier) when it pipelines, else the system's first Python strategy that does. N = 1 (no
    pipelining) suits every strategy."""
    if depth < 1:
        raise SpecError(f"expected 1 or more commands per round trip; got {depth}", "--pipeline")
    piped = {
        s.name: opt
        for s in system.strategies
        for opt in PIPELINE_OPTIONS
        if s.options.get(opt) is not None
    }
    if strategy_name and strategy_name in piped:
        return [f"strategy.options.{piped[strategy_name]}={depth}"]
    if not strategy_name:
        if default_name in piped:
            opt = piped[default_name]
            return [f"strategy.name={quoted(default_name)}", f"strategy.options.{opt}={depth}"]
        python = [n for n in piped if system.strategy(n).engine != "native"]
        if python:
            name, opt = python[0], piped[python[0]]
            return [f"strategy.name={quoted(name)}", f"strategy.options.{opt}={depth}"]
    if depth == 1:
        return []
    having = (
        f"; {system.name} pipelines with strategy {', '.join(piped)}"
        if piped
        else f"; no {system.name} strategy pipelines"
    )
    chosen = strategy_name or default_name
    raise SpecError(
        f"strategy {chosen!r} of {system.name} has no pipeline depth{having}", "--pipeline"
    )


def familiar_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """Give a typer command every familiar flag; it receives them as one ``flags: Flags``.

    The command's own ``flags`` parameter is replaced by the flags' parameters in its
    signature (which typer reads), and the wrapper gathers them back into a `Flags`.
    memtier's ``-t``/``--threads`` is a hidden option answered with a hint, unless the
    command has a ``threads`` parameter or uses ``-t`` itself (search's --target).
    """
    import typer
    from typer.models import ParameterInfo

    hints = get_type_hints(command, include_extras=True)
    own = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in inspect.signature(command).parameters.values()
        if p.name != "flags"
    ]
    names = [name for name, _, _ in FLAG_PARAMETERS]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None,
                          annotation=Annotated[kind, option])
        for name, kind, option in FLAG_PARAMETERS
    ]  # fmt: skip
    taken = {
        decl
        for p in own
        for meta in getattr(p.annotation, "__metadata__", ())
        if isinstance(meta, ParameterInfo)
        for decl in (getattr(meta, "param_decls", None) or ())
    }
    if "threads" not in {p.name for p in own} and "-t" not in taken:
        threads = typer.Option("--threads", "-t", hidden=True)
        added.append(
            inspect.Parameter("threads", inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation=Annotated[str | None, threads])
        )  # fmt: skip
        names.append("threads")

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = Flags(**{n: kwargs.pop(n, None) for n in names})
        return command(*args, flags=given, **kwargs)

    params = [p for p in own if p.kind != inspect.Parameter.VAR_KEYWORD]
    positional = [p for p in params if p.kind != inspect.Parameter.KEYWORD_ONLY]
    keyword = [p for p in params if p.kind == inspect.Parameter.KEYWORD_ONLY]
    wrapper.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # typer reads it
        [*positional, *keyword, *added]
    )
    wrapper.__annotations__ = {p.name: p.annotation for p in [*positional, *keyword, *added]}
    return wrapper


def load_with_flags(profile: Path | None, flags: Flags, sets: list[str]) -> Spec:
    """The profile (or the defaults) with the flags, then the `--set` overrides, applied and
    checked, as `load_spec` does for `--set` alone."""
    from workbench.sdk.discovery import load_plugin
    from workbench.spec.resolve import resolve_strategy

    profile = find_profile(profile) if profile else None
    base = read_profile(profile) if profile else {}
    try:
        refuse_threads(flags)
        percentiles(flags.print_percentiles)
        flags = with_address(flags, base)
        overrides = [*to_overrides(flags, base), *sets]
        if flags.pipeline is not None:
            source = str(profile) if profile else "--set"
            draft = spec_from_data(base, overrides, source)
            system = load_plugin(draft.target.system)
            default = resolve_strategy(system, draft).name
            overrides += pipeline_overrides(flags.pipeline, system, draft.strategy.name, default)
        return load_spec(profile, overrides)
    except SpecError as exc:
        raise _naming_the_flag(exc, flags) from None


# the field each flag sets -> the flag, to name it in an error about that field
FIELD_FLAGS = {
    "load.concurrency": (("clients", "-c/--clients"),),
    "load.workers": (("workers", "-w/--workers"),),
    "workload.value_size": (
        ("data_size", "-d/--data-size"),
        ("data_size_range", "--data-size-range"),
        ("data_size_list", "--data-size-list"),
    ),
    "load.ops": (("requests", "-n/--requests"),),
    "load.duration": (("test_time", "--test-time"),),
    "workload.mix": (("ratio", "--ratio"),),
    "workload.keys": (("key_minimum", "--key-minimum"), ("key_maximum", "--key-maximum")),
    "load.rate": (("rate", "--rate"),),
    "workload.ttl": (("ttl", "--ttl"), ("expiry_range", "--expiry-range")),
    "load.repeat": (("repeat", "--repeat"),),
    "workload.key_distribution": (("key_pattern", "--key-pattern"),),
}


def _naming_the_flag(exc: SpecError, flags: Flags) -> SpecError:
    """An error about a field a flag set says which flag it was."""
    for field_path, candidates in FIELD_FLAGS.items():
        if not re.search(rf"(^|: ){re.escape(field_path)}($|[ .\[])", exc.where):
            continue
        for attr, flag in candidates:
            if getattr(flags, attr) is not None:
                where = exc.where.removeprefix("--set: ")  # the flag, not --set, gave it
                return SpecError(exc.message, f"{where} (set by {flag})")
    return exc


def run_name(spec: Spec) -> str:
    """A run started from flags, named after its target and shape: e.g.
    ``redis 127.0.0.1:6379 native c16`` (a swept axis shows its values)."""
    from workbench.sdk.discovery import load_plugin
    from workbench.spec.resolve import resolve_strategy

    swept = {axis.path: axis for axis in spec.sweep}
    parts = [spec.target.system]
    options = spec.target.options
    if isinstance(options.get("url"), str):
        parts.append(urlsplit(options["url"]).netloc)
    elif isinstance(options.get("servers"), list | tuple):
        parts.append(",".join(map(str, options["servers"])))
    elif isinstance(options.get("base_url"), str):
        parts.append(urlsplit(options["base_url"]).netloc)
    if "strategy.name" in swept:
        parts.append("/".join(map(str, swept["strategy.name"].values)))
    else:
        try:
            parts.append(resolve_strategy(load_plugin(spec.target.system), spec).name)
        except Exception:  # an unknown system is reported by the run itself
            parts.append(spec.strategy.name or "default")
    if "load.concurrency" in swept:
        parts.append("c" + ",".join(map(str, swept["load.concurrency"].values)))
    else:
        parts.append(f"c{spec.load.concurrency}")
    depth = spec.strategy.options.get("pipeline") or spec.strategy.options.get("batch")
    if isinstance(depth, int) and depth > 1:
        parts.append(f"p{depth}")
    return " ".join(parts)
