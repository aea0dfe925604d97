"""When a used-up GPU-hour budget frees again, and that a task held by its budget gets an expected start."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from assistant.reasons_zh import reason_zh
from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.engine import decide
from scheduler.policy.forecast import estimate_starts
from scheduler.policy.rolling import (
    DAY_S,
    RollingUsage,
    UsageSpan,
    budget_frees,
    budget_frees_at_s,
    rolling_gpu_s,
    team_spans,
    under_budget_at_s,
    with_budget_frees,
)
from tests.policy.builders import make_gpus, make_running, make_task, occupy

H = 3600.0
NOW = 10 * DAY_S


def test_the_rolling_usage_counts_only_the_part_of_each_span_inside_the_window() -> None:
    spans = [UsageSpan(2, NOW - DAY_S - H, NOW - DAY_S + H), UsageSpan(1, NOW - H, NOW + H)]

    assert rolling_gpu_s(spans, NOW, DAY_S) == pytest.approx(
        2 * H + 1 * H
    )  # half the first, what ran of the second


@pytest.mark.parametrize(
    ("spans", "budget_h", "frees_in_h"),
    [
        # 4 GPUs for 2 h (8 GPU-h): under 6 once half an hour of it (2 GPU-h) has aged out
        ([UsageSpan(4, NOW - 2 * H, NOW)], 6.0, 24 - 2 + 0.5),
        # 2 GPU-h of a budget of 2: under it as soon as the older hour starts to leave the window
        ([UsageSpan(1, NOW - 10 * H, NOW - 9 * H), UsageSpan(1, NOW - H, NOW)], 2.0, 24 - 10),
        ([UsageSpan(1, NOW - 3 * H, NOW + H)], 3.0, 24 - 3 + 1),  # running 1 h more: it must age out after
    ],
)
def test_a_used_up_budget_frees_when_enough_work_has_aged_out_of_the_window(
    spans: list[UsageSpan], budget_h: float, frees_in_h: float
) -> None:
    at_s = under_budget_at_s(spans, budget_h * H, DAY_S, NOW)

    assert at_s == pytest.approx(NOW + frees_in_h * H, abs=2.0)
    assert rolling_gpu_s(spans, at_s, DAY_S) < budget_h * H <= rolling_gpu_s(spans, at_s - 10, DAY_S)


def test_a_budget_of_zero_never_frees_and_one_not_used_up_is_free_now() -> None:
    spans = [UsageSpan(1, NOW - H, NOW)]

    assert under_budget_at_s(spans, 0.0, DAY_S, NOW) == math.inf
    assert under_budget_at_s(spans, 2 * H, DAY_S, NOW) == NOW


def test_with_both_budgets_used_up_the_team_waits_for_the_later_one() -> None:
    config = PolicyConfig(day_budget_gpu_h={"nlp": 4.0}, week_budget_gpu_h={"nlp": 10.0})
    spans = [
        UsageSpan(4, NOW - 3 * DAY_S, NOW - 3 * DAY_S + 2 * H),
        UsageSpan(4, NOW - H, NOW),
    ]  # 8 + 4 GPU-h

    frees_at = budget_frees_at_s(config.team_budgets("nlp"), spans, NOW)

    # the day (4 GPU-h) frees just after the last hour ages out; the week (12 > 10) only when the first
    # span has aged half out, 4 days on
    assert frees_at == pytest.approx(NOW + 4 * DAY_S + H / 2, abs=2.0)
    assert (
        rolling_gpu_s(spans, frees_at, 7 * DAY_S) < 10 * H and rolling_gpu_s(spans, frees_at, DAY_S) < 4 * H
    )


def test_a_pass_says_when_new_starts_are_allowed_again_and_wakes_then() -> None:
    config = PolicyConfig(day_budget_gpu_h={"nlp": 40.0})
    frees_at = NOW + 5 * H
    usage = {"nlp": TeamUsage("nlp", gpu_s_last_day=40 * H, budget_frees_at_s=frees_at)}

    d = decide([make_task(1, team="nlp")], [], make_gpus(), NOW, config, usage)

    assert d.starts == ()
    assert (
        d.pending_reasons[1] == "day budget of team nlp is used up (40.0/40 GPU-h); new starts again at 05:00"
    )
    assert d.wake_at_s == frees_at


def test_a_task_held_by_its_budget_gets_an_expected_start_when_the_budget_frees() -> None:
    # nlp used 8 GPU-h in the last 2 h (finished) and runs 1 GPU for 1 more hour; its day budget is 8 GPU-h
    config = PolicyConfig(day_budget_gpu_h={"nlp": 8.0})
    finished = [("nlp", 4.0, NOW - 3 * H, NOW - H, "ann")]
    running = make_running(50, team="nlp", gpus=(0,), started_at_s=NOW - H, estimated_end_s=NOW + H)
    gpus = occupy(make_gpus(), running)
    usage = {"nlp": TeamUsage("nlp", gpu_s_last_day=9 * H, gpu_s_last_week=9 * H)}
    waiting = make_task(1, team="nlp", enqueued_at_s=NOW - 60)
    other = make_task(2, team="vision", enqueued_at_s=NOW - 30)

    est = estimate_starts([waiting, other], [running], gpus, NOW, config, usage, finished=finished)
    spans = team_spans({"nlp"}, finished, [running], NOW, config)["nlp"]

    assert est[2].start_s == NOW  # another team is not held
    expected = under_budget_at_s(spans, 8 * H, DAY_S, NOW)
    assert NOW + 20 * H < expected < NOW + 23 * H
    assert est[1].start_s == pytest.approx(expected, abs=2.0)
    assert "new starts again at" in est[1].reason
    # without the past work it cannot tell: no start within the horizon, as before
    assert math.isinf(estimate_starts([waiting], [running], gpus, NOW, config, usage)[1].start_s)


def test_tasks_started_in_a_forecast_count_against_the_budget_again() -> None:
    config = PolicyConfig(day_budget_gpu_h={"nlp": 1.0})
    rolling = RollingUsage(
        {"nlp": TeamUsage("nlp", gpu_s_last_day=1 * H)},
        {"nlp": [UsageSpan(1, NOW - H, NOW)]},
        config,
        NOW,
    )
    frees_at = rolling.at(NOW)["nlp"].budget_frees_at_s
    assert frees_at is not None and frees_at == pytest.approx(NOW + 23 * H, abs=2.0)

    rolling.started("nlp", "ann", 1, frees_at, frees_at + 2 * H)  # the replay starts a 2-hour task then

    assert rolling.at(frees_at + 2 * H)["nlp"].gpu_s_last_day >= 1 * H  # used up again
    assert rolling.at(frees_at + 2 * H)["nlp"].budget_frees_at_s is not None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 8), st.floats(0, 3 * DAY_S), st.floats(60, DAY_S)), min_size=1, max_size=8
    ),
    st.floats(0.1, 60),  # budget, GPU-h
    st.floats(0, 3 * DAY_S),  # when it is asked
)
# A span starting a hair after the window's start: 1e-224 + DAY_S rounds to DAY_S, the moment asked
@example([(1, 0.0, 60.0), (1, 1.4126379108907805e-224, 3543.0)], 1.0, DAY_S)
def test_the_moment_found_is_the_first_under_the_budget(
    raw: list[tuple[int, float, float]], budget_h: float, from_s: float
) -> None:
    spans = [UsageSpan(gpus, start, start + length) for gpus, start, length in raw]
    budget_s = budget_h * H

    at_s = under_budget_at_s(spans, budget_s, DAY_S, from_s)

    assert from_s <= at_s < math.inf
    assert rolling_gpu_s(spans, at_s, DAY_S) < budget_s
    step = (at_s - from_s) / 500
    earlier = [from_s + i * step for i in range(500) if from_s + i * step < at_s - 2.0]
    assert all(rolling_gpu_s(spans, t, DAY_S) >= budget_s - 1e-6 for t in earlier)


def test_when_the_running_work_uses_the_week_budget_up_the_day_budgets_reason_says_so() -> None:
    # the day budget (1 GPU-h) is used up now; two 1-GPU tasks run on, expected 3 h more each: by the time
    # the day budget frees they will have used the week budget (6 GPU-h) up too, which frees days later
    config = PolicyConfig(day_budget_gpu_h={"nlp": 1.0}, week_budget_gpu_h={"nlp": 6.0})
    spans = [UsageSpan(1, NOW - H, NOW + 3 * H), UsageSpan(1, NOW - H, NOW + 3 * H)]

    frees = budget_frees(config.team_budgets("nlp"), spans, NOW)
    assert frees is not None and frees[1] == "week" and frees[0] > NOW + 6 * DAY_S
    usage = with_budget_frees({"nlp": TeamUsage("nlp", gpu_s_last_day=2 * H, gpu_s_last_week=2 * H)},
                              {"nlp": spans}, config, NOW)  # fmt: skip
    d = decide([make_task(1, team="nlp")], [], make_gpus(), NOW, config, usage)

    reason = d.pending_reasons[1]
    assert reason.startswith("day budget of team nlp is used up (2.0/1 GPU-h); new starts again at ")
    assert reason.endswith(
        ", when its week budget frees too: the work running now, by its estimates, uses that up meanwhile"
    )
    assert reason_zh(reason).endswith(
        "起可以再启动新任务（那时周预算才恢复：按预计时长，正在运行的任务会先把它用完）"
    )
