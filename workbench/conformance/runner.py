"""Running the checks: in order, each bounded, a failed connect skipping the live ones."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.conformance.bounded import CheckFailed, Skip, describe
from workbench.conformance.checks.concurrent import (
    check_close,
    check_concurrency,
    check_pubsub,
    check_server_stats,
)
from workbench.conformance.checks.conditional import check_conditional
from workbench.conformance.checks.data import (
    check_connect,
    check_delete,
    check_miss,
    check_round_trip,
    check_ttl,
)
from workbench.conformance.checks.declared import check_declaration, check_options
from workbench.conformance.checks.server_gone import check_server_gone
from workbench.conformance.settings import OP_TIMEOUT, Target, targets
from workbench.sdk.adapter import CacheSystem, ManagedServer
from workbench.sdk.adapter import check_declaration as validate_declaration
from workbench.sdk.discovery import load_plugin
from workbench.sdk.errors import SpecError, TargetError, WorkbenchError

# The checks, in the order they run; `CHECKS` is their names.
RUNNERS: dict[str, Callable[[Target], Awaitable[str]]] = {
    "declaration": check_declaration,
    "options": check_options,
    "connect": check_connect,
    "miss": check_miss,
    "round-trip": check_round_trip,
    "delete": check_delete,
    "ttl": check_ttl,
    "conditional": check_conditional,
    "concurrency": check_concurrency,
    "pubsub": check_pubsub,
    "server-stats": check_server_stats,
    "close": check_close,
    "server-gone": check_server_gone,
}
CHECKS = tuple(RUNNERS)


@dataclass(frozen=True)
class CheckResult:
    """One line of the report."""

    system: str
    strategy: str
    name: str
    status: str  # "pass", "fail" or "skip"
    seconds: float
    reason: str = ""

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def line(self) -> str:
        text = f"{self.status.upper():4}  {self.name:<13} {self.seconds:6.2f}s"
        return f"{text}  {self.reason}" if self.reason else text


# Checks that need no live target; the others are not run when `connect` fails.
OFFLINE = ("declaration", "options", "connect", "server-gone")
CHECK_TIMEOUT = 60.0  # no check may take longer, whatever the adapter does


async def _run_one(name: str, t: Target) -> CheckResult:
    began = time.monotonic()
    status, reason = "pass", ""
    try:
        reason = await asyncio.wait_for(RUNNERS[name](t), CHECK_TIMEOUT)
    except Skip as exc:
        status, reason = "skip", str(exc)
    except CheckFailed as exc:
        status, reason = "fail", str(exc)
    except TimeoutError:
        status, reason = "fail", f"the check did not finish within {CHECK_TIMEOUT:g}s"
    except Exception as exc:
        status, reason = "fail", f"unexpected {describe(exc)}"
    return CheckResult(
        t.system.name, t.strategy.name, name, status, time.monotonic() - began, reason
    )


async def run_target(
    t: Target,
    only: Sequence[str] = (),
    on_result: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Every check (or those in `only`) on one strategy, in order."""
    unknown = [n for n in only if n not in RUNNERS]
    if unknown:
        raise SpecError(f"unknown check {unknown[0]!r}; checks: {', '.join(CHECKS)}", "--only")
    results: list[CheckResult] = []
    connected = True
    for name in CHECKS:
        if only and name not in only:
            continue
        if not connected and name not in OFFLINE:
            r = CheckResult(
                t.system.name, t.strategy.name, name, "skip", 0.0, "not run: connect failed"
            )
        else:
            r = await _run_one(name, t)
            if name == "connect" and r.failed:
                connected = False
        results.append(r)
        if on_result is not None:
            on_result(r)
    return results


async def run_checks(
    system: CacheSystem | str,
    strategy: str | None = None,
    settings: Iterable[str] | Mapping[str, Any] = (),
    managed: bool = False,
    only: Sequence[str] = (),
    on_target: Callable[[Target], None] | None = None,
    on_result: Callable[[CheckResult], None] | None = None,
    op_timeout: float = OP_TIMEOUT,
) -> list[CheckResult]:
    """The kit on one system: every strategy (or the named one), against a live target.

    With `managed`, a server is started through the system's launcher for the checks
    (and stopped after), and `server-gone` starts and stops one of its own.
    Bad settings raise SpecError before anything runs; a broken plugin, PluginError.
    """
    if isinstance(system, str):
        system = load_plugin(system)
    else:
        validate_declaration(system, system.name)
    plan = targets(system, strategy, settings, managed, op_timeout)
    server: ManagedServer | None = None
    results: list[CheckResult] = []
    try:
        selected = [n for n in CHECKS if not only or n in only]
        if managed and any(n not in ("declaration", "options", "server-gone") for n in selected):
            assert system.server is not None
            try:
                server = await asyncio.to_thread(system.server.start, dict(plan[0].server_options))
            except WorkbenchError:
                raise
            except Exception as exc:
                raise TargetError(
                    f"the {system.name} server launcher failed: {describe(exc)}", "--managed"
                ) from exc
            plan = [t.with_server(server.target_options) for t in plan]
        for t in plan:
            if on_target is not None:
                on_target(t)
            results += await run_target(t, only, on_result)
    finally:
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(server.stop)
    return results


def check_plugin(
    system: CacheSystem | str,
    strategy: str | None = None,
    settings: Iterable[str] | Mapping[str, Any] = (),
    managed: bool = False,
    only: Sequence[str] = (),
    on_result: Callable[[CheckResult], None] | None = None,
    op_timeout: float = OP_TIMEOUT,
) -> list[CheckResult]:
    """`run_checks` from synchronous code (a test, a script): runs its own event loop."""
    return asyncio.run(
        run_checks(
            system, strategy, settings, managed, only, on_result=on_result, op_timeout=op_timeout
        )
    )


def failures(results: Iterable[CheckResult]) -> str:
    """The failed checks as text, for an assertion message; empty when all passed."""
    return "\n".join(f"{r.system}/{r.strategy} {r.name}: {r.reason}" for r in results if r.failed)
