"""`depends_on_any` (Slurm's afterany): a task waits for its parents to end, however they end, and is never
failed because of them; the forecasts' replay treats such parents as it treats `depends_on` ones."""

from __future__ import annotations

from scheduler.policy.config import PolicyConfig
from scheduler.policy.engine import decide
from scheduler.policy.forecast import estimate_starts
from tests.policy.builders import make_gpus, make_running, make_task, occupy

CFG = PolicyConfig()


def started(decisions: object) -> list[int]:
    return [s.task_id for s in decisions.starts]  # type: ignore[attr-defined]


def test_a_task_waits_for_its_parent_to_end_and_says_so() -> None:
    child = make_task(2, depends_on_any=(12,))

    d = decide([child], [], make_gpus(), 0.0, CFG)

    assert d.pending_reasons[2] == "waiting for task 12 to end" and not d.starts and not d.fail


def test_a_parent_that_failed_or_was_cancelled_lets_the_task_start_instead_of_failing_it() -> None:
    child = make_task(2, depends_on_any=(12,))

    after_failure = decide([child], [], make_gpus(), 0.0, CFG, failed={12})  # failed holds cancelled too
    after_success = decide([child], [], make_gpus(), 0.0, CFG, succeeded={12})

    assert started(after_failure) == [2] and after_failure.fail == {}
    assert started(after_success) == [2]


def test_every_parent_of_both_lists_must_allow_it() -> None:
    child = make_task(3, depends_on=(10,), depends_on_any=(11, 12))

    waits_any = decide([child], [], make_gpus(), 0.0, CFG, succeeded={10}, failed={11})
    waits_ok = decide([child], [], make_gpus(), 0.0, CFG, failed={11, 12})
    fails = decide([child], [], make_gpus(), 0.0, CFG, failed={10, 11, 12})
    starts = decide([child], [], make_gpus(), 0.0, CFG, succeeded={10, 12}, failed={11})

    assert waits_any.pending_reasons[3] == "waiting for task 12 to end" and not waits_any.fail
    assert waits_ok.pending_reasons[3] == "waiting for task 10 to succeed" and not waits_ok.fail
    assert fails.fail[3] == "task 10, which it depends on, did not succeed"  # depends_on still fails it
    assert started(starts) == [3]


def test_the_forecast_starts_it_when_a_running_parent_is_expected_to_end() -> None:
    running = make_running(9, gpus=(0,), estimated_end_s=3600.0)
    gpus = occupy(make_gpus(per_node=4), running)
    child = make_task(2, depends_on_any=(9,))

    est = estimate_starts([child], [running], gpus, 0.0, CFG)[2]

    assert est.start_s == 3600.0 and est.reason == "waiting for task 9 to end"


def test_the_forecast_starts_it_after_a_parent_the_replay_fails_where_depends_on_never_starts() -> None:
    running = make_running(9, gpus=(0,), estimated_end_s=1800.0)
    gpus = occupy(make_gpus(per_node=4), running)
    parent = make_task(5, depends_on=(9,))  # fails in the replay: 9 was cancelled
    after_any = make_task(6, depends_on_any=(5,), enqueued_at_s=1.0)
    after_ok = make_task(7, depends_on=(5,), enqueued_at_s=2.0)

    est = estimate_starts([parent, after_any, after_ok], [running], gpus, 0.0, CFG, failed={9})

    assert est[6].start_s == 0.0  # 5 fails at once, so 6 may start at once
    assert est[7].start_s == float("inf")
