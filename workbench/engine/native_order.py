"""The native engine's step order: one step compiled to numbers, once, in Python.

The native engine (native/) never reads the spec's text forms. What a step means arrives
here already parsed by `workbench.workload.forms` and planned by `engine.client_plans`, as
numbers: distribution kinds with their parameters, sizes in bytes, durations in ns, TTLs in
seconds, each client's mix and schedule (period, offset, arrival process and its seed:
`engine.arrivals`), where keys go over several servers, this
worker's op budgets, the op kinds a report records and the remote decision. A trace replay
(`workload.trace`) names its file and how to replay it; the engine reads the file itself.
The target travels as its plugin read it (`native_target`): the wire protocol the strategy
speaks, the servers' hosts and ports, TLS, login and HTTP templates; the engine is never
told the system and parses no URL. Op kinds travel by name with their codes.

The order carries `ORDER_VERSION`; the binary refuses any other version in one line, and
the spec check asks the binary which version it reads (`native_build.require_binary`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.engine.client_plans import ClientPlan, client_plans, mixes
from workbench.engine.trace_feed import MAX_TRACE_VALUE
from workbench.engine.trace_keys import TraceKeys
from workbench.sdk.adapter import CacheSystem
from workbench.sdk.errors import TargetError
from workbench.sdk.ops import BY_NAME, GETS, KINDS, MIX_CODES, PUBLISH, RECORDED, replay_code
from workbench.sdk.remote import ALLOW_REMOTE
from workbench.spec.model import Spec
from workbench.spec.native_binary import ORDER_VERSION
from workbench.spec.resolve import total_clients
from workbench.workload.forms import (
    Dist,
    max_value_size,
    parse_key_distribution,
    parse_mix,
    parse_ttl,
    parse_value_size,
)
from workbench.workload.generator import ValueBuffer, share
from workbench.workload.keys import (
    SEQUENCE_STRIDE,
    gaussian_keys,
    hot_cold_split,
    hot_end,
    partition,
)
from workbench.workload.traces.formats import format_of

if TYPE_CHECKING:
    from workbench.engine.frames import StepOrder

NS = 1_000_000_000
# A connection attempt waits at least this long, whatever the option says.
MIN_CONNECT_TIMEOUT = 0.1


def compile_order(order: StepOrder) -> dict[str, Any]:
    """The "native" part of a step order: its spec and resolved step (this worker's own)
    compiled to numbers."""
    spec, worker, workers = order.spec, order.worker, order.workers
    own = order.resolved
    system, system_options, strategy_options = own.system, own.system_options, own.strategy_options
    plans = client_plans(spec, worker, workers)
    wl, load = spec.workload, spec.load
    offset, count = (0, wl.keys) if system.shared_state else partition(wl.keys, workers, worker)
    count = max(count, 1)
    value_size = parse_value_size(wl.value_size)
    trace = wl.trace
    keys = _keys(spec, parse_key_distribution(wl.key_distribution), offset, count)
    if trace is not None:
        # A replayed key is the prefix and the trace's id, unpadded (`TraceFeed.key`): the
        # engine formats an id as key index `id` of a zero-length key.
        keys = {**keys, "offset": 0, "count": 1, "length": 0, "hot_end": 0}
    return {
        "version": ORDER_VERSION,
        "target": native_target(system, own.protocol, system_options),
        "allow_remote": own.allow_remote,  # the remote decision, as resolved
        "worker": worker,
        "seed": spec.seed,
        # {name: code}: a mix names operations by code, of those the engine does.
        "operations": {n: c for n, c in MIX_CODES.items() if c < NATIVE_UNTIL},
        # The op kinds a report has histograms for, of those the engine does.
        "record": [name for name in RECORDED if BY_NAME[name].code < NATIVE_UNTIL],
        "keys": keys,
        "value_size": _value_size(value_size),
        "values": {
            "bytes": max(max_value_size(value_size), MAX_TRACE_VALUE if trace else 0)
            + ValueBuffer.SPREAD,
            "spread": ValueBuffer.SPREAD,
        },
        "ttl": _ttl(parse_ttl(wl.ttl)),
        "prefill": _prefill(spec, worker, workers),
        "pubsub": _pubsub(spec, system.shared_state, worker, workers),
        "clients": [_client(p) for p in plans],
        "phases": _phases(spec, len(plans)),
        "open_loop": load.rate is not None or (trace is not None and trace.speed > 0),
        "pipeline": max(1, int(strategy_options.get("pipeline", 1))),
        "timeout_ns": _ns(system_options.get("timeout")),
        "connect_timeout_ns": int(
            max(float(system_options.get("connect_timeout") or 0), MIN_CONNECT_TIMEOUT) * NS
        ),
        "trace_part": order.trace_part or None,  # where this worker writes its trace part
        "trace": _trace(spec, sorted(own.strategy.operations), TraceKeys.of(system.keys)),
    }


# The engine does every kind up to gets: the conditional writes and gets too (native/
# `order/ops.rs`); a kind added to the registry later is not sent to it until it does.
NATIVE_UNTIL = GETS + 1


def _ns(seconds: float | None) -> int | None:
    """Seconds as ns; None or 0 (an option's "none") as None."""
    return int(seconds * NS) if seconds else None


def _keys(spec: Spec, dist: Dist, offset: int, count: int) -> dict[str, Any]:
    wl = spec.workload
    return {
        "offset": offset,
        "count": count,
        "prefix": wl.key_prefix,
        "length": wl.key_length,
        "hot_end": hot_end(dist, count, offset),
        "distribution": _key_distribution(dist, count),
    }


def _key_distribution(dist: Dist, n: int) -> dict[str, Any]:
    if dist.kind == "zipf":
        return {"kind": "zipf", "s": dist.params[0]}
    if dist.kind == "gaussian":
        mean, sd = gaussian_keys(dist, n)
        return {"kind": "gaussian", "mean": mean, "sd": sd}
    if dist.kind == "hotcold":
        hot, cold = hot_cold_split(dist, n)
        return {"kind": "hotcold", "access": dist.params[0], "hot": hot, "cold": cold}
    return {"kind": dist.kind}  # uniform, sequential


def _value_size(dist: Dist) -> dict[str, Any]:
    if dist.kind == "fixed":
        return {"kind": "fixed", "bytes": int(dist.params[0])}
    if dist.kind == "uniform":
        return {"kind": "uniform", "min": int(dist.params[0]), "max": int(dist.params[1])}
    cum, total = [], 0.0
    for weight in dist.params[1::2]:
        total += weight
        cum.append(total)
    return {"kind": "weighted", "sizes": [int(s) for s in dist.params[0::2]], "cum_weights": cum}


def _ttl(dist: Dist) -> dict[str, Any]:
    if dist.kind == "fixed":
        return {"kind": "fixed", "seconds": dist.params[0]}
    if dist.kind == "range":
        return {"kind": "range", "min": dist.params[0], "max": dist.params[1]}
    return {"kind": "none"}


def native_target(
    system: CacheSystem, protocol: str | None, options: Mapping[str, Any]
) -> dict[str, Any]:
    """The order's target (the probe's too): the wire protocol the strategy speaks and
    where the servers are, as the system's plugin reads its options
    (`CacheSystem.endpoints`, its one parser). The engine is never told the system. The
    remote decision travels as the order's own `allow_remote`, which the engine enforces:
    the reading here judges the options' form only, as the spec check's does."""
    if protocol is None or system.endpoints is None:
        raise TargetError(
            f"{system.name} declares no wire protocol or endpoints the native engine can use",
            "strategy.name",
        )
    e = system.endpoints({**options, ALLOW_REMOTE: True})
    tls = None if e.tls is None else dataclasses.asdict(e.tls)
    return {
        "protocol": protocol,
        "servers": [[host, port] for host, port in e.servers],
        "origin": e.origin,
        "tls": tls,
        "login": dataclasses.asdict(e.login),
        "cluster": e.cluster,
        # Rendezvous seeds per server (the system's own rule); None: one server.
        "placement": None if system.placement is None else list(system.placement(options)),
        "http1": None if e.http1 is None else dict(e.http1),
        "tls_advice": e.tls_advice,
    }


def _prefill(spec: Spec, worker: int, workers: int) -> dict[str, int] | None:
    if not spec.workload.prefill:
        return None
    offset, count = partition(spec.workload.keys, workers, worker)
    return {"offset": offset, "count": count, "client": -1}


def _pubsub(spec: Spec, shared: bool, worker: int, workers: int) -> dict[str, Any] | None:
    """Channels, subscribers and message size when the step publishes, with the channel of
    each subscriber this worker holds: on a shared server one set of subscribers in all,
    dealt among the workers (as `driver._start_subscribers` deals them)."""
    if not any(PUBLISH in parse_mix(m) for m in mixes(spec)):
        return None
    ps = spec.workload.pubsub
    slots = [c for c in range(ps.channels) for _ in range(ps.subscribers_per_channel)]
    if shared:
        slots = slots[worker::workers]
    return {
        "channels": ps.channels,
        "subscribers_per_channel": ps.subscribers_per_channel,
        "message_size": ps.message_size,
        "slots": slots,
    }


def _client(plan: ClientPlan) -> dict[str, Any]:
    return {
        "id": plan.client_id,
        "mix": [[code, weight] for code, weight in plan.mix.items()],
        "period_ns": plan.period_ns,
        "offset_ns": plan.offset_ns,
        "arrivals": plan.arrivals,
        "arrival_seed": plan.seed,
        "sequence_start": plan.client_id * SEQUENCE_STRIDE,
    }


def _trace(spec: Spec, supported: list[str], keys: TraceKeys) -> dict[str, Any] | None:
    """The trace to replay: its file, format, speed, ops, limit and trace-time warm-up, the
    run's client count (a key's client is crc32(key) modulo it), what the strategy does,
    the largest value sent and which keys are sent."""
    tr = spec.workload.trace
    if tr is None:
        return None
    runs = {name for name in supported if BY_NAME[name].code < NATIVE_UNTIL}
    return {
        "path": str(Path(tr.path).resolve()),
        "format": format_of(tr.path, tr.format or None),
        "speed": float(tr.speed),
        "ops": tr.ops,
        "limit": tr.limit,
        "warmup_s": float(tr.warmup),
        "all_clients": spec.load.concurrency,  # workload.groups are refused with a trace
        "supported": supported,
        "max_value": MAX_TRACE_VALUE,
        # Each op name a trace may hold, with its kind's code (the op registry's).
        # A name the engine cannot send keeps its own kind's code, which the order's table
        # leaves without an action: the replay skips it by name.
        "op_codes": {name: _sent_as(name, runs, k.code) for k in KINDS for name in k.trace_names},
        "keys": keys.order(),
    }


def _sent_as(trace_name: str, runs: set[str], own: int) -> int:
    """The code a trace op is sent as (`ops.replay_code`); one the engine cannot send keeps
    its own kind's code, which the order's table leaves without an action: it is skipped."""
    code = replay_code(trace_name, runs)
    return own if code is None else code


# A warm-up that the replay ends (at a trace time), not a count: the engine's op-count
# warm-up path runs with a budget it never spends.
UNSPENT = 1 << 62


def _phases(spec: Spec, mine: int) -> dict[str, Any]:
    load = spec.load
    everyone = total_clients(spec)
    trace = spec.workload.trace
    by_trace_time = trace is not None and trace.warmup > 0
    return {
        "warmup_ns": int(load.warmup * NS),
        "warmup_ops": UNSPENT if by_trace_time else share(load.warmup_ops, mine, everyone) or None,
        "duration_ns": None if load.duration is None else int(load.duration * NS),
        "ops": share(load.ops, mine, everyone) or None,
        "interval_ns": int(load.interval * NS),
    }
