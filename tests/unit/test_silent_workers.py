"""Which remote workers count as lost to silence (`step_tally.lost_to_silence`).

A host that stops sending intervals while the others go on is lost after its allowance;
when every worker falls silent at once (Ray holds back all frames while a node joins), the
hold-up is on the way to the coordinator, and each gets `SILENT_ALL_AT_LEAST` s."""

from workbench.engine.step_tally import SILENT_ALL_AT_LEAST, lost_to_silence


def test_a_worker_silent_while_the_others_report_is_lost_after_its_allowance() -> None:
    heard = {0: 100.0, 1: 96.5}  # worker 0 reported 0.5 s ago, worker 1 4 s ago
    assert lost_to_silence(heard, {0: 2.0, 1: 2.0}, now=100.5) == [1]
    assert lost_to_silence(heard, {1: 5.0}, now=100.5) == []  # within its own allowance


def test_when_every_worker_is_silent_each_gets_the_longer_wait() -> None:
    heard = {0: 100.0, 1: 99.5}
    allowed = {0: 2.0, 1: 2.0}
    assert lost_to_silence(heard, allowed, now=103.0) == []  # 3 s of silence from everyone
    later = 99.5 + SILENT_ALL_AT_LEAST
    assert lost_to_silence(heard, allowed, now=later) == [1]
    assert lost_to_silence(heard, allowed, now=100.0 + SILENT_ALL_AT_LEAST) == [0, 1]


def test_a_worker_heard_recently_outside_the_candidates_keeps_the_short_rule() -> None:
    # Worker 0 is local (or already done): it is not judged, but its recent interval shows
    # frames are reaching the coordinator, so the silent remote worker 1 is lost.
    assert lost_to_silence({0: 100.0, 1: 97.0}, {1: 2.0}, now=100.2) == [1]


def test_no_candidates_no_losses() -> None:
    assert lost_to_silence({0: 1.0}, {}, now=1000.0) == []
