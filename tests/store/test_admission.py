"""The queued-cap estimate: SQL is skipped only while a team is far below its cap, and a forget is final."""

from __future__ import annotations

from scheduler.admission import QueuedEstimate


def _estimate() -> tuple[QueuedEstimate, list[float]]:
    now = [0.0]
    return QueuedEstimate(ttl_s=1.0, clock=lambda: now[0]), now


def test_a_team_never_counted_goes_to_sql():
    estimate, _ = _estimate()
    assert not estimate.admit(team_id=1, cap=100)


def test_a_fresh_count_far_below_the_cap_admits_and_counts_each_submission():
    estimate, _ = _estimate()
    estimate.record(1, 40, estimate.ticket(1))

    admitted = [estimate.admit(1, cap=100) for _ in range(15)]

    assert admitted == [True] * 10 + [False] * 5  # 41..50 are within half of 100; then SQL again
    assert not estimate.admit(2, cap=100)  # another team has no estimate


def test_a_count_older_than_its_ttl_goes_to_sql():
    estimate, now = _estimate()
    estimate.record(1, 0, estimate.ticket(1))
    now[0] = 1.0
    assert not estimate.admit(1, cap=100)


def test_a_small_cap_is_always_counted_in_sql():
    estimate, _ = _estimate()
    estimate.record(1, 0, estimate.ticket(1))
    assert not estimate.admit(1, cap=1)


def test_forget_drops_the_estimate_and_a_count_taken_before_it():
    estimate, _ = _estimate()
    estimate.record(1, 0, estimate.ticket(1))
    in_flight = estimate.ticket(1)

    estimate.forget(1)
    estimate.record(1, 0, in_flight)  # counted before the forget: not kept

    assert not estimate.admit(1, cap=100)
    estimate.record(1, 0, estimate.ticket(1))
    assert estimate.admit(1, cap=100)
