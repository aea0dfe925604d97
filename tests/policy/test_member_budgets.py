"""A person's own GPU-hour budgets: they hold that person's new GPU starts in the team, never a teammate's."""

from __future__ import annotations

import math

import pytest

from scheduler.policy.config import PolicyConfig, TeamUsage
from scheduler.policy.engine import decide
from scheduler.policy.forecast import estimate_starts
from scheduler.policy.quotas import budget_status, member_budget_status
from scheduler.policy.rolling import (
    DAY_S,
    RollingUsage,
    UsageSpan,
    team_spans,
    under_budget_at_s,
    with_budget_frees,
    with_running_to,
)
from scheduler.usage import GpuSpan, team_usage
from tests.policy.builders import make_gpus, make_running, make_task, occupy

H = 3600.0
NOW = 10 * DAY_S


def _lab(**members: tuple[float, float]) -> dict[str, TeamUsage]:
    """Team `lab` whose members used (day, week) GPU-hours."""
    day = {user: d * H for user, (d, _) in members.items()}
    week = {user: w * H for user, (_, w) in members.items()}
    return {
        "lab": TeamUsage(
            "lab",
            gpu_s_last_day=sum(day.values()),
            gpu_s_last_week=sum(week.values()),
            member_gpu_s_last_day=day,
            member_gpu_s_last_week=week,
        )
    }


def test_a_person_past_their_day_budget_waits_while_a_teammate_and_their_cpu_task_start() -> None:
    config = PolicyConfig(default_user_day_budget_gpu_h=10.0)
    usage = _lab(ann=(10.0, 10.0), bob=(2.0, 2.0))
    ann = make_task(1, team="lab", user="ann")
    ann_cpu = make_task(2, team="lab", user="ann", gpus=0)
    bob = make_task(3, team="lab", user="bob")

    d = decide([ann, ann_cpu, bob], [], make_gpus(), NOW, config, usage)

    assert {s.task_id for s in d.starts} == {2, 3}
    assert d.pending_reasons[1] == "day budget of ann in team lab is used up (10.0/10 GPU-h)"


def test_a_named_budget_overrides_the_default_and_the_team_budget_still_applies() -> None:
    config = PolicyConfig(
        user_week_budget_gpu_h={"ann": 50.0},
        default_user_week_budget_gpu_h=20.0,
        day_budget_gpu_h={"lab": 100},
    )
    usage = _lab(ann=(30.0, 30.0), bob=(20.0, 20.0))

    assert member_budget_status("lab", "ann", usage, config).level == "ok"
    bob = member_budget_status("lab", "bob", usage, config)
    assert (bob.level, bob.message) == (
        "exhausted",
        "week budget of bob in team lab is used up (20.0/20 GPU-h)",
    )
    held = decide([make_task(1, team="lab", user="ann")], [], make_gpus(), NOW, config, _lab(ann=(100, 100)))
    assert (
        held.pending_reasons[1] == "day budget of team lab is used up (100.0/100 GPU-h)"
    )  # the team's first


def test_a_person_past_the_warning_share_is_warned_and_not_held() -> None:
    config = PolicyConfig(user_day_budget_gpu_h={"ann": 10.0})
    usage = _lab(ann=(8.5, 8.5))

    status = member_budget_status("lab", "ann", usage, config)

    assert (status.level, status.message) == (
        "warn",
        "ann in team lab has used 85% of their day budget (8.5/10 GPU-h)",
    )
    assert budget_status("lab", usage, config).level == "ok"  # the team has no budget
    assert [
        s.task_id
        for s in decide([make_task(1, team="lab", user="ann")], [], make_gpus(), NOW, config, usage).starts
    ] == [1]


def test_usage_from_sql_spans_counts_each_members_day_and_week_apart() -> None:
    spans = [
        GpuSpan("lab", 2.0, NOW - 2 * H, NOW - H, "ann"),  # 2 GPU-h today
        GpuSpan("lab", 1.0, NOW - 3 * DAY_S, NOW - 3 * DAY_S + 4 * H, "ann"),  # 4 GPU-h this week
        GpuSpan("lab", 4.0, NOW - H, None, "bob"),  # running: 4 GPU-h so far
    ]

    used = team_usage(spans, NOW, 7 * DAY_S)["lab"]

    assert used.member_gpu_s_last_day == pytest.approx({"ann": 2 * H, "bob": 4 * H})
    assert used.member_gpu_s_last_week == pytest.approx({"ann": 6 * H, "bob": 4 * H})
    assert used.gpu_s_last_day == pytest.approx(6 * H) and used.gpu_s_last_week == pytest.approx(10 * H)


def test_running_work_since_the_reading_counts_against_its_owners_budget() -> None:
    usage = _lab(ann=(9.0, 9.0))
    running = make_running(5, team="lab", user="ann", gpus=(0, 1), started_at_s=NOW - H)

    now = with_running_to(usage, [running], usage_at_s=NOW - 0.5 * H, now_s=NOW)["lab"]

    assert now.member_gpu_s_last_day["ann"] == pytest.approx(10 * H)  # 9 + 2 GPUs x 0.5 h
    assert now.gpu_s_last_day == pytest.approx(10 * H)
    config = PolicyConfig(user_day_budget_gpu_h={"ann": 10.0})
    assert member_budget_status("lab", "ann", {"lab": now}, config).level == "exhausted"


def test_a_persons_budget_frees_as_their_own_work_ages_out_not_their_teammates() -> None:
    config = PolicyConfig(default_user_day_budget_gpu_h=4.0)
    spans = [
        UsageSpan(4, NOW - 20 * H, NOW - 19 * H, "ann"),  # ann: 4 GPU-h, out of the day at NOW + 4 h
        UsageSpan(8, NOW - 2 * H, NOW, "bob"),  # bob used more and later: not ann's
    ]
    usage = _lab(ann=(4.0, 4.0), bob=(16.0, 16.0))

    out = with_budget_frees(usage, {"lab": spans}, config, NOW)["lab"]

    assert out.budget_frees_at_s is None  # the team has no budget
    assert out.member_budget_frees_at_s["ann"] == pytest.approx(
        under_budget_at_s(spans[:1], 4 * H, DAY_S, NOW), abs=1e-6
    )
    assert NOW + 4 * H - 3600 < out.member_budget_frees_at_s["ann"] <= NOW + 4 * H + 1
    assert out.member_budget_frees_at_s["bob"] > NOW + 21 * H
    d = decide([make_task(1, team="lab", user="ann")], [], make_gpus(), NOW, config, {"lab": out})
    assert d.pending_reasons[1].endswith("; new starts again at 04:00")
    assert d.wake_at_s == out.member_budget_frees_at_s["ann"]


def test_a_task_held_by_its_owners_budget_gets_an_expected_start_when_it_frees() -> None:
    config = PolicyConfig(user_day_budget_gpu_h={"ann": 8.0})
    finished = [("lab", 4.0, NOW - 3 * H, NOW - H, "ann"), ("lab", 8.0, NOW - 2 * H, NOW - H, "bob")]
    running = make_running(
        50, team="lab", user="ann", gpus=(0,), started_at_s=NOW - H, estimated_end_s=NOW + H
    )
    gpus = occupy(make_gpus(), running)
    usage = _lab(ann=(9.0, 9.0), bob=(8.0, 8.0))
    ann = make_task(1, team="lab", user="ann", enqueued_at_s=NOW - 60)
    bob = make_task(2, team="lab", user="bob", enqueued_at_s=NOW - 30)

    est = estimate_starts([ann, bob], [running], gpus, NOW, config, usage, finished=finished)

    ann_spans = [s for s in team_spans({"lab"}, finished, [running], NOW, config)["lab"] if s.user == "ann"]
    expected = under_budget_at_s(ann_spans, 8 * H, DAY_S, NOW)
    assert NOW + 20 * H < expected < NOW + 23 * H
    assert est[1].start_s == pytest.approx(expected, abs=2.0)
    assert "new starts again at" in est[1].reason
    assert est[2].start_s == NOW  # bob has no budget of his own


def test_a_forecasts_own_starts_use_a_persons_budget_up_again() -> None:
    config = PolicyConfig(user_day_budget_gpu_h={"ann": 1.0})
    rolling = RollingUsage(_lab(ann=(1.0, 1.0)), {"lab": [UsageSpan(1, NOW - H, NOW, "ann")]}, config, NOW)
    frees_at = rolling.at(NOW)["lab"].member_budget_frees_at_s["ann"]
    assert frees_at == pytest.approx(NOW + 23 * H, abs=2.0)

    rolling.started("lab", "bob", 4, frees_at, frees_at + 2 * H)  # a teammate's start is not hers
    assert "ann" not in rolling.at(frees_at + 1)["lab"].member_budget_frees_at_s
    rolling.started("lab", "ann", 1, frees_at, frees_at + 2 * H)

    later = rolling.at(frees_at + 2 * H)["lab"]
    assert later.member_gpu_s_last_day["ann"] >= 1 * H
    assert math.isfinite(later.member_budget_frees_at_s["ann"])
