"""The core spec's fields as data: path, label, help and the section they belong to.

Every face that shows the spec field by field reads this list (the TUI's Setup form is
generated from it, as plugin options are from their `Option`s). Defaults are not
written here: `default` reads them from the model (`workbench.spec.model.Spec()`), so a
changed default shows everywhere at once.

Target system and strategy name are not here: they are chosen from the installed
plugins, not typed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from workbench.spec.load import SWEEPABLE
from workbench.spec.model import Spec

# How a field is entered: a value as after ``--set path=``, free text, a yes/no, a weight
# per operation, or a distribution's form and parameters.
Entry = Literal["value", "text", "bool", "mix", "distribution"]
Section = Literal["experiment", "target", "load", "workload", "pubsub"]

SECTION_TITLES: dict[Section, str] = {
    "experiment": "Experiment",
    "target": "Target",
    "load": "Load",
    "workload": "Workload",
    "pubsub": "publish / subscribe",
}


@dataclass(frozen=True)
class SpecField:
    path: str
    label: str
    help: str
    section: Section
    entry: Entry = "value"
    # Appended to the default in an empty field's hint (", or 1, 4, 16 to sweep"); when
    # the default is None, says what an empty field means ("none: closed loop"). For a
    # yes/no field, the text beside the box.
    note: str = ""

    @property
    def default(self) -> Any:
        return default_at(self.path)

    @property
    def sweepable(self) -> bool:
        return self.path in SWEEPABLE


def default_at(path: str) -> Any:
    """The model's default at a dotted spec path (``load.concurrency`` → 16)."""
    node: Any = Spec()
    for part in path.split("."):
        node = getattr(node, part)
    return node


FIELDS: tuple[SpecField, ...] = (
    SpecField("name", "name", "the stored run's name", "experiment", "text"),
    SpecField("description", "description", "one line for the report", "experiment", "text"),
    SpecField("seed", "seed", "same seed and spec: the same operations", "experiment"),
    SpecField(
        "target.managed",
        "managed server",
        "start the system's own server on a free loopback port for the run",
        "target",
        "bool",
        note="start and stop a server of its own",
    ),
    SpecField(
        "load.concurrency",
        "concurrency",
        "virtual clients; a list such as 1, 4, 16 sweeps",
        "load",
        note=", or 1, 4, 16 to sweep",
    ),
    SpecField(
        "load.workers",
        "workers",
        "worker processes; 0 is one per core (never more than clients)",
        "load",
        note=" (one per core)",
    ),
    SpecField("load.duration", "duration (s)", "seconds measured", "load"),
    SpecField(
        "load.ops",
        "ops",
        "an op count instead of a duration (wins when given)",
        "load",
        note="none: run for the duration",
    ),
    SpecField("load.warmup", "warm-up (s)", "seconds of load before measuring", "load"),
    SpecField(
        "load.warmup_ops",
        "warm-up ops",
        "an op count of warm-up instead of seconds",
        "load",
        note="none: warm up for the seconds above",
    ),
    SpecField(
        "load.rate",
        "rate (ops/s)",
        "total ops/s, open loop (latency counted from the intended start); a list sweeps",
        "load",
        note="none: closed loop, as fast as it goes",
    ),
    SpecField(
        "load.arrivals",
        "arrivals",
        "open loop: uniform (each client every period, as wrk2) or poisson (exponential "
        "gaps of the same mean: many independent users)",
        "load",
        "text",
    ),
    SpecField("load.interval", "interval (s)", "seconds between live figures", "load"),
    SpecField(
        "load.repeat",
        "repeat",
        "run every step this many times, interleaved (A B A B); reports give the median "
        "and the range",
        "load",
    ),
    SpecField(
        "load.launcher",
        "launcher",
        "where workers run: local (processes here) or ray (actors on a Ray cluster)",
        "load",
        "text",
    ),
    SpecField(
        "load.ray_address",
        "Ray address",
        "with the ray launcher: auto (the cluster ray start joined), local (a private one), "
        "or host:port",
        "load",
        "text",
    ),
    SpecField(
        "load.ray_placement",
        "Ray placement",
        "with the ray launcher: spread workers across nodes, or pack them",
        "load",
        "text",
    ),
    SpecField(
        "workload.mix",
        "op mix",
        "weights per operation; aside = cache-aside (get, then set on a miss)",
        "workload",
        "mix",
    ),
    SpecField("workload.keys", "keys", "size of the key space", "workload"),
    SpecField(
        "workload.key_distribution",
        "key distribution",
        "uniform, zipf(s), gaussian(mean, stddev), sequential, or hotcold(hot access share, "
        "hot key share) e.g. 80% of accesses on 20% of the keys",
        "workload",
        "distribution",
    ),
    SpecField(
        "workload.value_size",
        "value size",
        "fixed(N), uniform(MIN,MAX) or weighted(SIZE:WEIGHT, ...); units 4KiB, 1MB",
        "workload",
        "distribution",
    ),
    SpecField(
        "workload.ttl",
        "TTL",
        "none, fixed(2s) or range(1,5) seconds",
        "workload",
        "distribution",
    ),
    SpecField(
        "workload.prefill",
        "prefill",
        "set every key once before measuring",
        "workload",
        "bool",
        note="set every key once first",
    ),
    SpecField("workload.key_prefix", "key prefix", "prepended to every key", "workload", "text"),
    SpecField("workload.key_length", "key length", "characters per key", "workload"),
    SpecField(
        "workload.pubsub.channels",
        "channels",
        "channels published to (publish in the op mix)",
        "pubsub",
    ),
    SpecField(
        "workload.pubsub.subscribers_per_channel",
        "subscribers",
        "subscribers per channel; every delivery's latency is measured",
        "pubsub",
    ),
    SpecField(
        "workload.pubsub.message_size",
        "message size",
        "bytes per message (at least 16: a timestamp and a sequence number)",
        "pubsub",
    ),
)


def fields_in(section: Section) -> tuple[SpecField, ...]:
    return tuple(f for f in FIELDS if f.section == section)
