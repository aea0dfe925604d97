"""Run-time estimates, start-time forecasts and `explain`."""

from __future__ import annotations

import math

import pytest

from scheduler.policy.config import PolicyConfig
from scheduler.policy.engine import decide
from scheduler.policy.estimate import (
    MIN_RECENT_RUNS,
    RECENT_RUNS,
    DurationEstimate,
    DurationHistory,
    estimate_duration_s,
    family_name,
    with_typical_run,
)
from scheduler.policy.explain import explain
from scheduler.policy.forecast import estimate_starts
from tests.policy.builders import make_gpus, make_running, make_task, occupy

CFG = PolicyConfig(policy="backfill")


def test_estimate_comes_from_the_spec_then_history_then_time_limit_then_default() -> None:
    history = DurationHistory(runs=3)
    task = make_task(estimated_s=None, name="train", time_limit_s=7200.0)
    assert estimate_duration_s(task, history, CFG).source == "time limit"
    for d in (100.0, 300.0, 200.0, 900.0):
        history.add("u", "train", 1, d)
    est = estimate_duration_s(task, history, CFG)
    assert est.seconds == 300.0 and est.source == "median of 3 recent runs"  # the last 3: 300, 200, 900
    assert estimate_duration_s(make_task(estimated_s=50.0), history, CFG).seconds == 50.0
    assert estimate_duration_s(make_task(estimated_s=None, gpus=2), history, CFG).source == "default"


def test_a_sweep_setting_that_never_ran_is_estimated_from_the_other_settings_of_its_family() -> None:
    # Given two settings of one sweep that ran, and a task of another name with parameters
    history = DurationHistory(runs=3)
    history.add("u", "train lr:0.1 bs:32", 1, 100.0)
    history.add("u", "train lr:0.2 bs:32", 1, 300.0)
    history.add("u", "eval split:dev", 1, 5.0)
    # Then a setting of its own uses its own runs, and another one its family's
    assert family_name("train lr:0.1 bs:32") == family_name("train") == "train"
    assert family_name("lr:0.1") == "lr:0.1" and family_name("train lr 0.1") == "train lr 0.1"
    assert history.learned("u", "train lr:0.1 bs:32", 1) == (100.0, 1, None)
    assert history.learned("u", "train lr:0.3 bs:64", 1) == (200.0, 2, "train")
    assert history.learned("u", "train", 1) == (200.0, 2, "train")
    assert history.learned("u", "train lr:0.3", 2) is None  # the size still counts
    assert history.learned("v", "train lr:0.3", 1) is None  # and the user
    # And the estimate says where its run time comes from
    unseen = estimate_duration_s(make_task(estimated_s=None, name="train lr:0.5"), history, CFG)
    by_name = estimate_duration_s(make_task(estimated_s=None, name="train"), history, CFG)
    assert unseen == DurationEstimate(200.0, "median of 2 recent runs of train with other parameters")
    assert by_name.source == "median of 2 recent runs of train sweeps"


def test_the_typical_run_time_is_the_median_of_the_clusters_last_gpu_runs() -> None:
    # Given runs of several users, names and sizes, in the order they ended
    history = DurationHistory(runs=3)
    for i in range(MIN_RECENT_RUNS - 1):
        history.add(f"u{i}", f"job{i}", 1 + i % 2, 1000.0)
    # Then it is unknown before MIN_RECENT_RUNS, and the policy keeps its setting alone
    assert history.typical_s() is None
    assert with_typical_run(CFG, history.typical_s()) is CFG
    assert CFG.oldest_first_delay_s() == CFG.oldest_first_after_s
    # When many short runs end after them, Then only the last RECENT_RUNS count, and CPU-only runs not at all
    for i in range(RECENT_RUNS):
        history.add("v", "quick", 4, 6.0 if i % 2 else 8.0)
        history.add("v", "prep", 0, 0.5)
    assert history.typical_s() == 7.0
    config = with_typical_run(CFG, history.typical_s())
    assert config.typical_run_s == 7.0 and with_typical_run(config, 7.0) is config
    # And the oldest wide task goes first after that many typical runs, when that is sooner than the setting
    assert config.oldest_first_delay_s() == CFG.oldest_first_after_runs * 7.0 < CFG.oldest_first_after_s
    assert with_typical_run(CFG, 3600.0).oldest_first_delay_s() == CFG.oldest_first_after_s


def test_start_estimates_replay_the_queue_forward_with_a_range() -> None:
    # Given one GPU busy for 1 h, and two 1-h tasks queued
    running = [make_running(9, gpus=(0,), estimated_end_s=3600.0)]
    gpus = occupy(make_gpus(per_node=1), running[0])
    queued = [make_task(1), make_task(2, enqueued_at_s=1.0)]
    est = estimate_starts(queued, running, gpus, 0.0, CFG)
    assert (est[1].start_s, est[1].position) == (3600.0, 1)
    assert (est[2].start_s, est[2].position) == (7200.0, 2)
    assert est[2].low_s == 3600.0 and est[2].high_s == 10800.0  # 0.5x and 1.5x run times
    # the GPU that frees first is promised to task 1, ahead of it: the reason says so
    assert est[2].reason == (
        "all GPUs are busy; the next frees in ~60 min; task 1, ahead of it, has 1 GPU reserved on n0"
    )


def test_a_task_that_never_fits_has_no_start_estimate() -> None:
    est = estimate_starts([make_task(1, gpus=8)], [], make_gpus(per_node=2, nodes=1)[:1], 0.0, CFG)
    assert math.isinf(est[1].start_s)


def test_explain_gives_position_estimate_reason_and_priority_parts() -> None:
    running = [make_running(9, gpus=(0,), estimated_end_s=1500.0)]
    gpus = occupy(make_gpus(per_node=1), running[0])
    queued = [make_task(1), make_task(2, enqueued_at_s=100.0)]
    ex = explain(2, queued, running, gpus, 600.0, PolicyConfig())
    assert ex.position == 2 and ex.queued_total == 2
    assert ex.estimate.start_s == 1500.0 + 3600.0
    assert ex.priority.class_s == 7200.0 and ex.priority.age_s == 500.0
    assert ex.priority.short_job_s > 0 and ex.priority.fair_share_s > 0
    assert ex.reason.startswith("all GPUs are busy")


def test_a_forecast_expects_a_task_past_its_estimate_to_run_on_but_decide_keeps_its_quarter() -> None:
    # Given the only GPU held by a task started 8 h ago with a 1-h estimate: it overran by 7 h
    running = [make_running(9, gpus=(0,), started_at_s=0.0, estimated_end_s=3600.0)]
    gpus = occupy(make_gpus(per_node=1), running[0])
    now_s = 8 * 3600.0
    queued = [make_task(1, enqueued_at_s=now_s)]
    cfg = PolicyConfig(policy="backfill", forecast_overrun_factor=3.0)
    # the forecast assumes it needs 3x its 8 h more, and its reason says so; the reservation `decide` plans
    # backfill around keeps a quarter (2 h)
    est = estimate_starts(queued, running, gpus, now_s, cfg)[1]
    assert est.start_s == now_s + 24 * 3600.0
    assert est.reason == "next in line: 1 GPU reserved on n0, expected free in ~24 h"
    assert decide(queued, running, gpus, now_s, cfg).pending_reasons[1] == (
        "next in line: 1 GPU reserved on n0, expected free in ~2.0 h"
    )
    # And a task behind it, told that no GPU is free, is told when the next frees as the forecast sees it
    behind = make_task(2, enqueued_at_s=now_s + 1.0)
    est = estimate_starts([*queued, behind], running, gpus, now_s, cfg)
    assert est[2].reason == (
        "all GPUs are busy; the next frees in ~24 h; task 1, ahead of it, has 1 GPU reserved on n0"
    )


def test_a_negative_wide_task_delay_is_refused_with_the_setting_named() -> None:
    with pytest.raises(ValueError, match="oldest_first_after_runs must be >= 0"):
        PolicyConfig(oldest_first_after_runs=-1.0)
    with pytest.raises(ValueError, match="oldest_first_after_s"):
        PolicyConfig(oldest_first_after_s=-60.0)
