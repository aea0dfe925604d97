"""Retries that know why: lost workers are free, real failures count and back off, some never retry."""

from __future__ import annotations

from scheduler.policy.retry import backoff_s, decide_retry


def test_a_lost_worker_is_retried_at_once_without_using_up_retries():
    decision = decide_retry([], "lost_worker", retries=0)
    assert decision.retry and decision.delay_s == 0


def test_a_task_that_loses_its_worker_three_times_in_a_row_is_given_up_with_a_clear_reason():
    decision = decide_retry(["lost_worker", "worker_stopped"], "lost_worker", retries=5)
    assert not decision.retry
    assert decision.reason == "lost_worker_repeatedly"
    assert "3 times in a row" in decision.message


def test_lost_workers_separated_by_a_real_failure_do_not_count_as_in_a_row():
    assert decide_retry(["lost_worker", "nonzero_exit", "lost_worker"], "lost_worker", retries=5).retry


def test_counted_failures_retry_while_retries_allow_with_growing_backoff():
    first = decide_retry([], "nonzero_exit", retries=2)
    second = decide_retry(["nonzero_exit"], "timeout", retries=2)
    third = decide_retry(["nonzero_exit", "timeout"], "oom", retries=2)
    assert (first.retry, second.retry, third.retry) == (True, True, False)
    assert first.delay_s < second.delay_s
    assert third.reason == "oom"


def test_lost_worker_attempts_do_not_count_against_retries():
    assert decide_retry(["lost_worker", "lost_worker"], "nonzero_exit", retries=1).retry


def test_cancelled_and_unstartable_tasks_are_never_retried():
    assert not decide_retry([], "cancelled", retries=5).retry
    assert not decide_retry([], "executor", retries=5).retry


def test_backoff_doubles_and_is_capped_at_ten_minutes():
    assert [backoff_s(n) for n in (1, 2, 3)] == [30.0, 60.0, 120.0]
    assert backoff_s(50) == 600.0


def test_worker_shutdowns_are_retried_and_never_add_up_to_a_lost_worker_failure():
    """Three restarts of nightshift while a task runs must not fail it as 'lost 3 times in a row'."""
    assert decide_retry(["worker_shutdown", "worker_shutdown"], "worker_shutdown", retries=0).retry
    assert decide_retry(["lost_worker", "worker_shutdown", "lost_worker"], "worker_shutdown", retries=0).retry
    assert decide_retry(["worker_shutdown"] * 5, "nonzero_exit", retries=1).retry


def test_a_shutdown_between_lost_workers_does_not_reset_their_count():
    decision = decide_retry(["lost_worker", "worker_shutdown", "lost_worker"], "lost_worker", retries=5)
    assert not decision.retry and decision.reason == "lost_worker_repeatedly"


def test_a_requeue_asked_by_a_person_is_retried_at_once_and_never_counted():
    assert decide_retry([], "requeued", retries=0) == decide_retry([], "worker_shutdown", retries=0)
    assert decide_retry(["requeued"] * 5, "requeued", retries=0).retry
    assert not decide_retry(["requeued", "nonzero_exit"], "nonzero_exit", retries=1).retry  # two real ones
    assert decide_retry(["requeued"] * 3, "nonzero_exit", retries=1).retry
    # requeues between lost workers do not break their run, nor add to it
    assert not decide_retry(["lost_worker", "requeued", "lost_worker"], "lost_worker", retries=5).retry
