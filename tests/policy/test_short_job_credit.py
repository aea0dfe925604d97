"""The short-job credit: how much a task's run time and width move it forward, and the width exponent."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from scheduler.policy.aging import credit_size, priority_parts, short_job_credit_s, static_score
from scheduler.policy.config import PolicyConfig
from scheduler.policy.engine import decide
from scheduler.policy.priority import queue_score
from scheduler.service import policy_config_of
from scheduler.settings import Settings
from tests.policy.builders import make_gpus, make_task


def _credit(config: PolicyConfig, **task: object) -> float:
    return priority_parts(make_task(1, **task), 0.0, config, 0.0).short_job_s


def test_shorter_runs_get_more_credit_up_to_the_cap() -> None:
    cfg = PolicyConfig()
    minute, hour, month = (_credit(cfg, estimated_s=s) for s in (60.0, 3600.0, 30 * 86400.0))
    assert minute == cfg.short_job_max_credit_s  # at or under the full-credit size
    assert minute > hour > month == 0.0  # at or over the no-credit size


@pytest.mark.parametrize(
    ("exponent", "wide_vs_narrow"),
    [(-0.5, "more"), (0.0, "same"), (1.0, "less")],
)
def test_the_width_exponent_decides_whether_a_wide_task_gets_more_credit_than_a_narrow_one(
    exponent: float, wide_vs_narrow: str
) -> None:
    # Given an 8-GPU and a 1-GPU task with the same 1-h estimate
    cfg = PolicyConfig(short_job_width_exponent=exponent)
    wide, narrow = _credit(cfg, gpus=8), _credit(cfg, gpus=1)
    # Then: below 0 the wide one is favoured (Slurm's job-size factor), at 0 run time alone counts, at 1
    # GPU-seconds do (the wide one counts as 8 h of work)
    assert {"more": wide > narrow, "same": wide == pytest.approx(narrow), "less": wide < narrow}[
        wide_vs_narrow
    ]
    assert credit_size(make_task(1, gpus=8), cfg) == pytest.approx(3600.0 * 8**exponent)


def test_a_negative_exponent_starts_a_wide_task_before_a_narrow_one_submitted_a_minute_earlier() -> None:
    # Given 4 free GPUs, a 1-GPU task submitted a minute before a 4-GPU one, both estimated 1 h
    narrow = make_task(1, gpus=1, enqueued_at_s=0.0)
    wide = make_task(2, gpus=4, enqueued_at_s=60.0)
    gpus = make_gpus(per_node=4)
    # Then by GPU-seconds (the default) the narrow one ranks first and the wide one waits for the whole node;
    # with the exponent below 0 the wide one ranks first and takes the node
    assert [s.task_id for s in decide([narrow, wide], [], gpus, 100.0, PolicyConfig()).starts] == [1]
    favour_wide = PolicyConfig(short_job_width_exponent=-0.5)
    assert [s.task_id for s in decide([narrow, wide], [], gpus, 100.0, favour_wide).starts] == [2]


def test_gpu_seconds_put_a_later_narrow_task_first_and_run_time_alone_does_not() -> None:
    # Given 4 free GPUs, a 4-GPU task submitted a minute before a 1-GPU one, both estimated 1 h
    wide = make_task(1, gpus=4, enqueued_at_s=0.0)
    narrow = make_task(2, gpus=1, enqueued_at_s=60.0)
    gpus = make_gpus(per_node=4)
    # Then by GPU-seconds (the default) the narrow one counts as a quarter of the work, ranks first and
    # takes a GPU, so the wide one waits for the whole node
    assert [s.task_id for s in decide([wide, narrow], [], gpus, 100.0, PolicyConfig()).starts] == [2]
    # And by run time alone the older wide one takes the node
    by_run_time = PolicyConfig(short_job_width_exponent=0.0)
    assert [s.task_id for s in decide([wide, narrow], [], gpus, 100.0, by_run_time).starts] == [1]


def test_the_credit_stays_within_its_bound_whatever_the_exponent() -> None:
    for exponent in (-2.0, -0.5, 0.0, 1.0, 2.0):
        cfg = PolicyConfig(short_job_width_exponent=exponent)
        for gpus in (1, 2, 8, 64):
            task = make_task(1, gpus=gpus, estimated_s=1.0)
            assert 0.0 <= short_job_credit_s(credit_size(task, cfg), cfg) <= cfg.short_job_max_credit_s
            class_and_age = queue_score(task.priority, task.enqueued_at_s, cfg.class_step_s)
            assert class_and_age - cfg.short_job_max_credit_s <= static_score(task, cfg) <= class_and_age


@pytest.mark.parametrize("bad", [-3.0, 2.5])
def test_an_exponent_out_of_range_is_refused_with_the_range(bad: float) -> None:
    with pytest.raises(ValueError, match=r"short_job_width_exponent must be in \[-2, 2\]"):
        PolicyConfig(short_job_width_exponent=bad)


def test_the_setting_reaches_the_policy_and_a_bad_one_names_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NIGHTSHIFT_SHORT_JOB_WIDTH_EXPONENT", "-0.5")
    assert policy_config_of(Settings()).short_job_width_exponent == -0.5
    monkeypatch.setenv("NIGHTSHIFT_SHORT_JOB_WIDTH_EXPONENT", "5")
    with pytest.raises(ValidationError, match="short_job_width_exponent"):
        Settings()
