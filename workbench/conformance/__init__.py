"""The conformance kit: does a plugin keep the contract of `workbench.sdk.adapter`?

Runs one strategy of one cache system against a live target, the way a worker does
(connect, one client per virtual client, operations, close), and reports one
`CheckResult` per check: pass, fail (with the reason) or skip (with why). Every call into
the adapter is bounded by a timeout, so a hanging adapter fails a check instead of
hanging the kit; blocking strategies are driven from threads, as the engine drives them.

- `settings`: ``--set`` values routed to the system, strategy or managed server → `Target`;
- `bounded`: every call into the adapter, bounded in time (`AdapterCalls`, `OpenConnection`);
- `checks/`: the checks themselves, one module per theme;
- `runner`: the ordered checks (`RUNNERS`), running them, and `check_plugin` for tests.

Used by ``workbench plugins check`` and by the test suites of the built-in plugins and
of scaffolded ones. It imports no UI library.
"""

from workbench.conformance.bounded import CheckFailed, Skip
from workbench.conformance.runner import (
    CHECKS,
    RUNNERS,
    CheckResult,
    check_plugin,
    failures,
    run_checks,
    run_target,
)
from workbench.conformance.settings import OP_TIMEOUT, Target, split_settings, targets

__all__ = [
    "CHECKS",
    "OP_TIMEOUT",
    "RUNNERS",
    "CheckFailed",
    "CheckResult",
    "Skip",
    "Target",
    "check_plugin",
    "failures",
    "run_checks",
    "run_target",
    "split_settings",
    "targets",
]
