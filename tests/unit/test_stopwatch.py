"""Where an open-loop op's latency starts (docs/frames.md, "Latency"), case by case."""

from __future__ import annotations

from workbench.engine.clients import stopwatch_start

MS = 1_000_000


def test_an_idle_client_is_timed_from_its_send_which_begins_a_run() -> None:
    # Previous op ended at 5 ms; this one was due at 10 ms and sent (late) at 12 ms.
    assert stopwatch_start(10 * MS, 12 * MS, 5 * MS, 0) == (12 * MS, 12 * MS)


def test_a_busy_client_is_timed_from_the_intended_start() -> None:
    # The run began on time at 1 ms; the previous reply came at 30 ms, this op was due at
    # 10 ms: the 20 ms it waited are the server's (coordinated omission corrected).
    assert stopwatch_start(10 * MS, 30 * MS, 30 * MS, 1 * MS) == (10 * MS, 1 * MS)


def test_ops_queued_behind_a_late_send_are_timed_from_that_send() -> None:
    # The timer woke 50 ms late: the run began at 60 ms, though this op was due at 20 ms.
    # It waited for the run's earlier ops (server time), not for the late timer.
    assert stopwatch_start(20 * MS, 61 * MS, 61 * MS, 60 * MS) == (60 * MS, 60 * MS)


def test_a_reply_exactly_at_the_intended_start_leaves_the_client_idle() -> None:
    assert stopwatch_start(10 * MS, 10 * MS + 7, 10 * MS, 1 * MS) == (10 * MS + 7, 10 * MS + 7)
