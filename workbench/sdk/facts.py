"""What a cache system declares about itself, so that the core asks and never matches its
name: how a URL names it, where its cache's size is set, how many cores its server may
use, which of its server's figures mean what, the refusals its server gives and what to
change for each, and the Python libraries whose versions a run records.

Each is a field of `CacheSystem` (`workbench.sdk.adapter`); all are optional, and a system
that declares none still runs: it just gets no `-s URL`, no simulated hit rate or `mrc`,
no CPU verdict for its server and no refusal advice. What a reader of a stored run needs
(cores, cache size, figure names, refusals) is stored with each step as plain data
(`system_facts`), so reading a run never imports the plugin that ran it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Urls:
    """How ``workbench run -s URL`` names this system.

    `schemes` are the URL schemes that mean it (``redis``, ``rediss``); `options` turns a
    URL into the system's target options (``{"url": url}``, ``{"servers": [...]}``);
    `forms` show the accepted shapes in an error (``redis://HOST:PORT[/DB]``). For TLS
    (``--tls``), `tls_schemes` maps a plain scheme to its TLS one (``redis`` to
    ``rediss``), and `with_tls` turns the system's given options into the same target
    over TLS (``None`` when nothing in them can say so). `tool_protocols` are the names
    memtier_benchmark's ``-P``/``--protocol`` gives the protocol when it means this system
    (``redis``, ``resp2``, ``resp3``; ``memcache_text``): ``-s HOST -P NAME`` takes this
    system's first scheme.
    """

    schemes: tuple[str, ...]
    options: Callable[[str], dict[str, Any]]
    forms: tuple[str, ...] = ()
    tls_schemes: Mapping[str, str] = field(default_factory=dict, hash=False)
    with_tls: Callable[[Mapping[str, Any]], dict[str, Any] | None] | None = None
    tool_protocols: tuple[str, ...] = ()


@dataclass(frozen=True)
class CacheSize:
    """The option that sets the cache's size: `--simulate` reads it (the limit the
    simulated policies get) and `mrc` sets it (one run per size).

    `unit` is bytes per unit of the option (memcached's ``memory_mb``: 1 MiB). `server`:
    the option is the managed server's (``target.server``), else the system's own
    (``target.options``). `entries`: an option that caps the number of objects as well
    (the embedded cache's ``max_entries``); the limit is whichever binds first.
    """

    option: str
    unit: int = 1
    server: bool = True
    entries: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "option": self.option,
            "unit": self.unit,
            "server": self.server,
            "entries": self.entries,
        }


@dataclass(frozen=True)
class ServerCores:
    """The cores a server may use, for the verdict (a server at 1.0 of 1 core is the
    limit); `single_threaded` says why there is one (Redis's event loop)."""

    cores: float
    single_threaded: bool = False


# Given the resolved managed-server options ({} for a server the workbench did not start)
# and whether the workbench started it: the cores, or None when nothing says.
CoresRule = Callable[[Mapping[str, Any], bool], ServerCores | None]


@dataclass(frozen=True)
class ServerFigures:
    """Which of the server's figures (`Connection.server_stats`) mean what; each the
    figure's name, or "" when the server has none. `cpu` is the pair of cumulative user
    and system CPU seconds (Redis INFO's ``used_cpu_user``, ``used_cpu_sys``), read when
    the server is not a process the workbench started. Sizes are in bytes."""

    cpu: tuple[str, str] | None = None
    used_bytes: str = ""
    limit_bytes: str = ""
    items: str = ""
    version: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "cpu": list(self.cpu) if self.cpu else None,
            "used_bytes": self.used_bytes,
            "limit_bytes": self.limit_bytes,
            "items": self.items,
            "version": self.version,
        }


@dataclass(frozen=True)
class Refusal:
    """A refusal the server gives when its configuration, not the load, is the limit:
    words of its error message (matched in lower case) and what to change."""

    words: str
    advice: str
