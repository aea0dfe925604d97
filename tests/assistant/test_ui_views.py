"""What the UI shows, from API-shaped data: the confirm card, the tables and the admin charts' data."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from assistant.ui import views
from scheduler.reports import AttemptSpan, waits_over_time

ZONE = UTC


def submit_card(**spec: Any) -> dict[str, Any]:
    base = {
        "command": "python train.py",
        "name": "train.py",
        "workdir": "/w",
        "gpus": 2,
        "priority": "normal",
    }
    return {
        "kind": "submit",
        "action_id": "act_1",
        "spec": {**base, **spec},
        "summary": {
            "start_label": "tonight 23:00, off-peak",
            "estimated_start": "2026-03-02T23:00:00+00:00",
            "estimated_end": "2026-03-03T01:00:00+00:00",
            "quota": {"team": "vision", "budget_gpu_h": 40.0, "used_gpu_h": 20.0, "uses_gpu_h": 4.0},
            "energy": {"kwh": 1.2, "gpus": 2, "power_w": 300.0, "minutes": 120.0},
        },
    }


def test_the_submit_card_shows_command_resources_start_finish_and_quota() -> None:
    html = views.card_html(submit_card(gpu_memory_gb=40), ZONE)
    for expected in (
        "Submit this task?",
        "python train.py",
        "2 GPUs, ≥40 GB free each",
        "tonight 23:00, off-peak",
        "2026-03-02 23:00",
        "2026-03-03 01:00",
        "16.0 GPU-h left after it",
        "~1.2 kWh (2 × 300 W for 120 min)",
        "Nothing is submitted until you confirm.",
    ):
        assert expected in html


def test_the_submit_card_shows_each_environment_variable_escaped_on_its_own_line() -> None:
    card = submit_card(env={"WANDB_MODE": "offline", "NOTE": "<b>x</b>"})

    english, chinese = views.card_html(card, ZONE), views.card_html(card, ZONE, "zh")

    assert "<tr><th>env</th><td>WANDB_MODE=offline<br>NOTE=&lt;b&gt;x&lt;/b&gt;</td></tr>" in english
    assert "<th>环境变量</th>" in chinese
    assert "<th>env</th>" not in views.card_html(submit_card(env={}), ZONE)


def test_a_cpu_only_card_says_so_instead_of_zero_gpus() -> None:
    card = submit_card()
    card["spec"]["gpus"] = 0
    card["summary"]["start_label"] = "right away (CPU only)"

    english, chinese = views.card_html(card, ZONE), views.card_html(card, ZONE, "zh")

    assert "<th>resources</th><td>CPU only (no GPU)</td>" in english and "0 GPUs" not in english
    assert "<th>may start</th><td>right away (CPU only)</td>" in english
    assert (
        "<th>资源</th><td>只用 CPU（不占 GPU）</td>" in chinese and "<td>立即开始（只用 CPU）</td>" in chinese
    )


def test_a_chinese_card_names_the_weekday_and_the_priority_in_chinese() -> None:
    card = submit_card()
    card["spec"]["priority"] = "high"
    card["summary"]["start_label"] = "Sat 12-05 09:00"

    chinese = views.card_html(card, ZONE, "zh")

    assert "<th>最早开始</th><td>周六 12-05 09:00</td>" in chinese
    assert "<th>优先级</th><td>高</td>" in chinese
    assert "<td>high</td>" in views.card_html(card, ZONE)


def test_a_card_that_runs_a_task_again_names_it_and_what_was_left_out() -> None:
    card = submit_card()
    card["summary"]["like_task"] = {"task_id": 12, "passed": {"not_before": "2026-03-01T09:00:00+00:00"}}

    english, chinese = views.card_html(card, ZONE), views.card_html(card, ZONE, "zh")

    assert "<th>based on</th><td>task #12 (its not_before, 03-01 09:00, has passed: left out)</td>" in english
    assert "<th>基于</th><td>任务 #12（原来的最早开始（03-01 09:00）已过，不再沿用）</td>" in chinese


def test_a_card_that_runs_a_task_again_without_a_field_says_what_it_had() -> None:
    card = submit_card()
    card["summary"]["like_task"] = {"task_id": 12, "passed": {}, "cleared": {"time_limit_minutes": 120}}

    english, chinese = views.card_html(card, ZONE), views.card_html(card, ZONE, "zh")

    assert "<th>based on</th><td>task #12 (without its time limit (min), 120)</td>" in english
    assert "<th>基于</th><td>任务 #12（去掉原来的时间限制（分钟）（120））</td>" in chinese


def test_the_card_speaks_the_language_of_the_conversation() -> None:
    html = views.card_html(submit_card(gpu_memory_gb=40), ZONE, "zh")
    for expected in (
        "提交这个任务？",
        "<th>命令</th><td>python train.py</td>",
        "2 张卡，每张 ≥40 GB 空闲",
        "<th>最早开始</th><td>今晚 23:00（谷时电价）</td>",
        "<th>预计开始</th><td>2026-03-02 23:00</td>",
        "约用 4.0 GPU小时，团队日预算还剩 20.0；运行后还剩 16.0 GPU小时",
        "约 1.2 kWh（2 × 300 W，120 分钟）",
        "确认之前不会提交。",
    ):
        assert expected in html, expected
    cancel = views.card_html(
        {"kind": "cancel", "task_id": 31, "task": {"name": "sweep-7", "status": "running"}}, ZONE, "zh"
    )
    assert (
        "取消这个任务？" in cancel
        and "<th>任务</th><td>#31</td>" in cancel
        and "确认之前不会取消。" in cancel
        and "<th>状态</th><td>运行中</td>" in cancel  # its status in Chinese too, not "running"
    )


def test_a_change_card_shows_each_field_before_and_after_in_english_and_chinese() -> None:
    card = {
        "kind": "change",
        "task_id": 12,
        "changes": {
            "priority": ["normal", "<b>urgent</b>"],
            "offpeak": [False, True],
            "not_before": ["x", None],
        },
    }

    english, chinese = views.card_html(card, ZONE), views.card_html(card, ZONE, "zh")

    assert "Change this task?" in english and "<th>task</th><td>#12</td>" in english
    assert "<th>priority</th><td>normal → &lt;b&gt;urgent&lt;/b&gt;</td>" in english  # escaped
    assert "<th>off-peak only</th><td>no → yes</td>" in english
    assert "<th>not before</th><td>x → as soon as GPUs are free</td>" in english
    assert "Nothing is changed until you confirm." in english
    assert "修改这个任务？" in chinese and "<th>只在谷时运行</th><td>否 → 是</td>" in chinese
    assert "<th>最早开始</th><td>x → 有空闲 GPU 即开始</td>" in chinese and "确认之前不会修改。" in chinese


def test_a_change_of_what_a_task_waits_for_shows_the_tasks_before_and_after() -> None:
    card = {
        "kind": "change",
        "task_id": 12,
        "changes": {"depends_on": [[], [10, 11]], "depends_on_any": [[9], []]},
    }

    english, chinese = views.card_html(card, ZONE), views.card_html(card, ZONE, "zh")

    assert "<th>waits for (to succeed)</th><td>none → #10, #11</td>" in english
    assert "<th>waits for (to end)</th><td>#9 → none</td>" in english
    assert "<th>等待成功的任务</th><td>无 → #10, #11</td>" in chinese


def test_the_cards_finish_says_what_run_time_was_assumed_when_the_person_gave_none() -> None:
    card = submit_card()
    card["summary"]["run_estimate"] = {"minutes": 120.0, "source": "median of 4 recent runs"}

    assert "2026-03-03 01:00 (120 min, the median of your 4 recent runs like it)" in views.card_html(
        card, ZONE
    )
    assert "（120 分钟，按你最近 4 次同类运行的中位数）" in views.card_html(card, ZONE, "zh")
    assert "recent runs" not in views.card_html(submit_card(), ZONE)


def test_the_card_escapes_what_the_person_or_the_model_wrote() -> None:
    html = views.card_html(submit_card(command="echo <script>alert(1)</script>"), ZONE)
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_cancel_card_names_the_task_and_says_nothing_happens_yet() -> None:
    card = {"kind": "cancel", "task_id": 31, "task": {"name": "<data>sweep-7</data>", "status": "running"}}
    html = views.card_html(card, ZONE)
    assert "Cancel this task?" in html and "#31" in html and "sweep-7" in html and "running" in html
    assert "&lt;data&gt;" not in html  # the model's data markers are not shown to people
    assert "Nothing is cancelled until you confirm." in html


def test_a_card_cancelling_several_tasks_has_a_row_each_and_names_those_left_out() -> None:
    card = {
        "kind": "cancel_tasks",
        "task_ids": [31, 32],
        "tasks": [
            {"id": 31, "name": "<data><b>sweep-7</b></data>", "status": "running"},
            {"id": 32, "name": "<data>eval</data>", "status": "queued"},
        ],
        "left_out": [{"id": 40, "status": "succeeded"}],
    }
    english, chinese = views.card_html(card, ZONE), views.card_html(card, ZONE, "zh")

    assert "Cancel these 2 tasks?" in english
    assert "<tr><th>#31</th><td>&lt;b&gt;sweep-7&lt;/b&gt;, running</td></tr>" in english
    assert "<tr><th>#32</th><td>eval, queued</td></tr>" in english
    assert "<tr><th>left out, already ended</th><td>#40 (succeeded)</td></tr>" in english
    assert "Nothing is cancelled until you confirm." in english
    assert "取消这 2 个任务？" in chinese and "<td>eval，排队中</td>" in chinese
    assert "#40（已完成）" in chinese and "&lt;data&gt;" not in english + chinese


def test_a_requeue_card_names_the_task_its_node_and_what_happens() -> None:
    card = {
        "kind": "requeue",
        "task_id": 31,
        "task": {"name": "<data>train</data>", "status": "running", "node": "box-2"},
    }
    english, chinese = views.card_html(card, ZONE), views.card_html(card, ZONE, "zh")

    assert "Put this task back in the queue?" in english and "<tr><th>node</th><td>box-2</td></tr>" in english
    assert "waits again with its age" in english and "Nothing is stopped until you confirm." in english
    assert "把这个任务放回队列？" in chinese and "确认之前不会停止。" in chinese


def test_a_card_says_how_many_cards_wait_behind_it() -> None:
    card = {"kind": "cancel", "task_id": 31, "task": {"name": "a", "status": "queued"}}

    assert "ns-card-queue" not in views.card_html(card, ZONE)
    assert "1 more card after this one." in views.card_html(card, ZONE, waiting_after=1)
    assert "2 more cards after this one." in views.card_html(card, ZONE, waiting_after=2)
    assert "之后还有 2 张卡片。" in views.card_html(card, ZONE, "zh", waiting_after=2)


def test_the_task_table_has_one_row_per_task_with_times_in_the_cluster_zone() -> None:
    task = {
        "id": 7,
        "name": "train",
        "status": "failed",
        "user": "alice",
        "gpus": 2,
        "submitted_at": "2026-03-02T15:00:00+00:00",
        "started_at": "2026-03-02T15:01:00+00:00",
        "finished_at": None,
        "reason": "nonzero_exit",
    }
    frame = views.tasks_frame([task], ZONE)
    assert list(frame.columns) == views.TASK_COLUMNS
    assert frame.iloc[0].tolist() == [
        7, "train", "failed", "alice", "2", "2026-03-02 15:00", "2026-03-02 15:01", "", "nonzero_exit"
    ]  # fmt: skip
    again = views.tasks_frame([{**task, "status": "queued", "reason": "lost_worker"}], ZONE)
    assert again.iloc[0]["started"] == ""  # queued again: its last attempt's start is not this one's
    # a task sharing one GPU shows its part of it
    shared = views.tasks_frame([{**task, "gpus": 1, "spec": {"gpu_fraction": 0.25}}], ZONE)
    assert shared.iloc[0]["gpus"] == "0.25"
    # a sweep's failed task run again in its place (`nightshift rerun`) names the task that took it
    rerun = views.tasks_frame([{**task, "replaced_by": 12}], ZONE)
    assert rerun.iloc[0]["reason"] == "nonzero_exit; run again as 12"


def test_the_queue_table_shows_positions_and_expected_starts() -> None:
    queue = {
        "length": 3,
        "entries": [
            {
                "position": 2,
                "task": {"id": 9, "name": "ft", "user": "bob", "team": "nlp", "gpus": 1},
                "reason": "waiting for the off-peak window",
                "estimated_start": "2026-03-02T23:00:00+00:00",
            },
            {"position": 3, "task": {"id": 10, "name": "x", "gpus": 4}, "estimated_start": None},
        ],
    }
    frame = views.queue_frame(queue, ZONE)
    assert frame["position"].tolist() == [2, 3]
    assert frame["gpus"].tolist() == ["1", "4"]
    assert frame["estimated start"].tolist() == ["2026-03-02 23:00", "unknown"]


def gpus_view() -> dict[str, Any]:
    def gpu(index: int, free_mib: int, util: float | None, tasks: list[int]) -> dict[str, Any]:
        return {
            "node": "node-a",
            "index": index,
            "name": "Simulated GPU 24GB",
            "memory_total_mib": 24576,
            "memory_free_mib": free_mib,
            "utilization_pct": util,
            "temperature_c": None,
            "power_w": None,
            "tasks": tasks,
        }

    return {
        "nodes": [{"name": "node-a", "alive": True}],
        "gpus": [gpu(0, 12288, 93.0, [4]), gpu(1, 24576, None, [])],
    }


def test_the_gpu_table_and_chart_show_memory_and_utilization_per_gpu() -> None:
    frame = views.gpus_frame(gpus_view())
    assert frame.iloc[0].tolist() == ["node-a:0", "Simulated GPU 24GB", 12.0, 24.0, 12.0, 93, "", "#4", ""]
    assert frame.iloc[1]["util %"] == "" and frame.iloc[1]["tasks"] == ""
    shared = gpus_view()
    shared["gpus"][1] = {**shared["gpus"][1], "tasks": [5, 6], "shares": {"5": 0.5, "6": 0.25}}
    assert views.gpus_frame(shared).iloc[1]["tasks"] == "#5 (0.5), #6 (0.25)"
    usage = views.gpu_usage_frame(gpus_view())
    assert usage.values.tolist() == [
        ["node-a:0", "memory used %", 50.0],
        ["node-a:0", "utilization %", 93.0],
        ["node-a:1", "memory used %", 0.0],
        ["node-a:1", "utilization %", 0.0],
    ]


def test_a_gpu_out_of_service_shows_why_and_an_unreadable_one_no_memory_used() -> None:
    view = gpus_view()
    lost = "unreadable: NVML could not read the handle of GPU 1: GPU is lost; back in service once ..."
    view["gpus"][1] = {**view["gpus"][1], "memory_total_mib": 0, "memory_free_mib": 0, "out_of_service": lost}

    assert views.gpus_frame(view).iloc[1]["out of service"] == lost
    assert views.gpu_usage_frame(view).values.tolist()[2] == ["node-a:1", "memory used %", 0.0]


def test_gpu_share_counts_gpus_that_never_ran_anything_as_idle() -> None:
    report = {"days": 1, "rows": [{"key": "node-a:0", "gpu_hours": 6.0}]}
    share = views.gpu_share_frame(report, gpus_view())
    assert share.values.tolist() == [
        ["node-a:0", "busy", 25.0],
        ["node-a:0", "idle", 75.0],
        ["node-a:1", "busy", 0.0],
        ["node-a:1", "idle", 100.0],
    ]


def test_gpu_hours_by_team_come_from_the_report_rows() -> None:
    report = {"rows": [{"key": "vision", "gpu_hours": 30.5}, {"key": "nlp", "gpu_hours": 2.0}]}
    assert views.gpu_hours_frame(report).values.tolist() == [["vision", 30.5], ["nlp", 2.0]]


def span(task_id: int, start: str, wait_s: float | None) -> AttemptSpan:
    start_s = datetime.fromisoformat(start).timestamp()
    return AttemptSpan(task_id, "vision", "alice", (0,), "node-a", start_s, start_s + 60, "succeeded", wait_s)


def test_waits_over_time_gives_p50_and_p90_of_first_attempts_per_hour() -> None:
    since_s = datetime.fromisoformat("2026-03-02T00:00:00+00:00").timestamp()
    spans = [span(i, "2026-03-02T10:05:00+00:00", wait) for i, wait in enumerate([60, 120, 180, 240, 3000])]
    spans += [span(9, "2026-03-02T12:30:00+00:00", 30), span(10, "2026-03-02T12:40:00+00:00", None)]
    waits = waits_over_time(spans, since_s, days=1)
    assert waits == {
        "bucket_s": 3600.0,
        "points": [
            {"start": "2026-03-02T10:00:00+00:00", "tasks": 5, "p50_wait_s": 180.0, "p90_wait_s": 3000.0},
            {"start": "2026-03-02T12:00:00+00:00", "tasks": 1, "p50_wait_s": 30.0, "p90_wait_s": 30.0},
        ],
    }
    frame = views.waits_frame({"waits_over_time": waits}, ZONE)
    assert frame.values.tolist() == [
        ["2026-03-02 10:00", "p50", 3.0],
        ["2026-03-02 10:00", "p90", 50.0],
        ["2026-03-02 12:00", "p50", 0.5],
        ["2026-03-02 12:00", "p90", 0.5],
    ]


def test_waits_over_a_week_are_counted_per_day() -> None:
    since_s = datetime.fromisoformat("2026-03-01T00:00:00+00:00").timestamp()
    waits = waits_over_time([span(1, "2026-03-02T10:05:00+00:00", 90)], since_s, days=7)
    assert waits["bucket_s"] == 86400.0
    assert waits["points"][0]["start"] == "2026-03-02T00:00:00+00:00"


def test_a_what_if_estimate_reads_as_one_line() -> None:
    estimate = {
        "start": "2026-03-02T23:00:00+00:00",
        "low": "2026-03-02T22:30:00+00:00",
        "high": "2026-03-03T00:00:00+00:00",
        "wait": "8 h",
        "reason": "waits for the off-peak window",
    }
    text = views.estimate_text(estimate, ZONE)
    assert text == (
        "Expected start **2026-03-02 23:00** (range 2026-03-02 22:30 – 2026-03-03 00:00), "
        "a wait of about 8 h — waits for the off-peak window"
    )
    assert views.estimate_text({"start": None, "reason": "no node has 8 GPUs"}).endswith("no node has 8 GPUs")
    at_once = {"start": "2026-03-02T23:00:00+00:00", "wait": "none", "reason": "starts now"}
    guessed = {**at_once, "estimated_run_s": 3600.0, "estimate_source": "spec estimate"}
    assert views.estimate_text(at_once, ZONE) == "Expected start **2026-03-02 23:00** — starts now"
    assert views.estimate_text(guessed, ZONE).endswith("starts now; run time 60 min, your estimate")
    priced = {**guessed, "energy_kwh": 1.8, "energy_cost": 0.27, "currency": "EUR"}
    assert views.estimate_text(priced, ZONE).endswith("your estimate; energy ~1.8 kWh, ~0.27 EUR")
    unpriced = {**priced, "energy_cost": None}  # its start unknown: no cost yet
    assert views.estimate_text(unpriced, ZONE).endswith("your estimate; energy ~1.8 kWh")


# --- admin: energy, cost, off-peak share, quota use (report shaped as GET /reports/utilization) -------


def report() -> dict[str, Any]:
    return {
        "days": 7,
        "rows": [
            {"key": "vision", "gpu_hours": 9.0, "energy_kwh": 1.6, "cost": 0.4, "offpeak_share": 0.6667},
            {"key": "nlp", "gpu_hours": 3.0, "energy_kwh": 1.2, "cost": 0.3, "offpeak_share": 0.0},
            {"key": "idle", "gpu_hours": 0.0, "energy_kwh": 0.0, "cost": 0.0, "offpeak_share": None},
        ],
        "total_gpu_hours": 12.0,
        "capacity_gpu_hours": 672.0,
        "utilization": 0.0179,
        "currency": "EUR",
        "total_energy_kwh": 2.8,
        "total_cost": 0.7,
        "offpeak_share": 0.5,
        "by_day": [
            {"day": "2026-03-04", "team": "vision", "gpu_hours": 4.0, "energy_kwh": 0.6, "cost": 0.15},
            {"day": "2026-03-05", "team": "nlp", "gpu_hours": 3.0, "energy_kwh": 1.2, "cost": 0.3},
            {"day": "2026-03-05", "team": "vision", "gpu_hours": 5.0, "energy_kwh": 1.0, "cost": 0.25},
        ],
        "quota": [
            {
                "team": "<b>ops</b>",
                "day_used_gpu_h": 1.0,
                "day_budget_gpu_h": None,
                "day_share": None,
                "week_used_gpu_h": 1.0,
                "week_budget_gpu_h": None,
                "week_share": None,
            },
            {
                "team": "nlp",
                "day_used_gpu_h": 3.0,
                "day_budget_gpu_h": 4.0,
                "day_share": 0.75,
                "week_used_gpu_h": 3.0,
                "week_budget_gpu_h": 3.5,
                "week_share": 0.8571,
            },
            {
                "team": "vision",
                "day_used_gpu_h": 5.0,
                "day_budget_gpu_h": None,
                "day_share": None,
                "week_used_gpu_h": 12.5,
                "week_budget_gpu_h": 10.0,
                "week_share": 1.25,
            },
        ],
        "quota_warn_fraction": 0.8,
    }


def test_energy_and_cost_per_day_and_team_come_from_by_day() -> None:
    assert views.energy_cost_frame(report()).values.tolist() == [
        ["2026-03-04", "vision", 0.6, 0.15],
        ["2026-03-05", "nlp", 1.2, 0.3],
        ["2026-03-05", "vision", 1.0, 0.25],
    ]
    assert views.energy_cost_frame({}).empty


def test_offpeak_share_is_shown_for_all_teams_then_each_team_that_ran() -> None:
    assert views.offpeak_frame(report()).values.tolist() == [
        ["(all teams)", "off-peak", 50.0],
        ["(all teams)", "peak", 50.0],
        ["vision", "off-peak", 66.67],
        ["vision", "peak", 33.33],
        ["nlp", "off-peak", 0.0],
        ["nlp", "peak", 100.0],
    ]


def test_quota_bars_cover_each_team_and_budget_with_warning_and_over_budget_levels() -> None:
    bars = views.quota_bars(report())
    assert [(b["team"], b["window"], b["used"], b["budget"]) for b in bars] == [
        ("nlp", "day", 3.0, 4.0),
        ("nlp", "week", 3.0, 3.5),
        ("vision", "week", 12.5, 10.0),
    ]
    page = views.quota_html(report())
    assert page.count('class="ns-quota-bar"') == 3
    levels = [part.split('"')[0] for part in page.split('data-level="')[1:]]
    assert levels == ["ok", "warn", "over"]  # 75 %, 86 %, 125 %
    assert "warning at 80 %" in page and "3.00 / 3.5 GPU-h (86 %)" in page
    assert page.count('class="ns-quota-warn"') == 1 and page.count('class="ns-quota-budget"') == 1


def test_the_quota_lines_sit_at_80_and_100_percent_of_the_axis() -> None:
    def x_of(page: str, name: str) -> float:
        return float(page.split(f'class="{name}" x1="')[1].split('"')[0])

    page = views.quota_html(report())  # the axis reaches 125 % × 1.05 of the budget
    start, width = 190, 380
    assert x_of(page, "ns-quota-warn") == pytest.approx(start + width * 0.8 / 1.3125, abs=0.1)
    assert x_of(page, "ns-quota-budget") == pytest.approx(start + width / 1.3125, abs=0.1)


def test_the_quota_chart_escapes_team_names_and_says_when_there_is_no_budget() -> None:
    page = views.quota_html(report())
    assert "<b>ops</b>" not in page and "no budget: &lt;b&gt;ops&lt;/b&gt;" in page
    empty = views.quota_html(
        {"quota": [{"team": "nlp", "day_budget_gpu_h": None, "week_budget_gpu_h": None}]}
    )
    assert "No team has a GPU-hour budget" in empty and "<svg" not in empty and "no budget: nlp" in empty


def test_the_admin_summary_adds_energy_cost_and_offpeak_share() -> None:
    line = views.report_summary(report())
    assert line.startswith("**12.0 GPU-h** used of 672 over the last 7 days (utilization 1.8 %)")
    assert "2.80 kWh, cost 0.70 EUR" in line and "50 % off-peak" in line
    assert "0.00042 kWh" in views.report_summary({"total_energy_kwh": 0.00042, "total_cost": 0})


# --- results: a sweep's parameters vs metrics (shaped as GET /sweeps/{id}/results) ---------------------


def results(**changes: Any) -> dict[str, Any]:
    def row(task_id: int, lr: float, loss: float | None, best: bool = False, **more: Any) -> dict[str, Any]:
        metrics = {} if loss is None else {"loss": loss, "acc": round(1 - lr, 2), "opt": "adam"}
        return {"task_id": task_id, "name": f"grid lr:{lr}", "status": "succeeded", "params": {"lr": lr},
                "metrics": metrics, "note": None, "best": best, **more}  # fmt: skip

    table = {
        "sweep_id": 4,
        "tag": None,
        "params": ["lr"],
        "metrics": ["loss", "acc", "opt"],
        "sort": "loss",
        "goal": "min",
        "best_task_id": 12,
        "rows": [
            row(12, 0.1, 1.0, best=True),
            row(13, 0.3, 3.0),
            row(11, 0.5, None, status="failed", note="metrics.json is not valid JSON"),
        ],
    }
    return {**table, **changes}


def test_the_results_table_marks_the_best_row_and_keeps_the_apis_order() -> None:
    frame = views.results_frame(results())
    assert list(frame.columns) == ["best", "task", "lr", "loss", "acc", "opt", "status", "note"]
    assert frame.values.tolist() == [
        ["★ best", "#12", 0.1, 1.0, 0.9, "adam", "succeeded", ""],
        ["", "#13", 0.3, 3.0, 0.7, "adam", "succeeded", ""],
        ["", "#11", 0.5, "", "", "", "failed", "metrics.json is not valid JSON"],
    ]
    assert list(views.results_frame({}).columns) == ["best", "task", "status", "note"]


def test_the_results_table_rounds_float_noise_as_the_cli_does() -> None:
    table = results()
    table["rows"][0]["metrics"]["loss"] = 0.9359999999999999
    table["rows"][0]["params"]["lr"] = 0.07300000000000001

    row = views.results_frame(table).values.tolist()[0]

    assert row[2:4] == [0.073, 0.936]


def test_a_metric_named_like_a_parameter_gets_its_own_column() -> None:
    table = results(params=["lr"], metrics=["lr", "status"])
    table["rows"] = [
        {"task_id": 1, "params": {"lr": 0.1}, "metrics": {"lr": 0.05, "status": True}, "best": True}
    ]
    frame = views.results_frame(table)
    assert list(frame.columns) == ["best", "task", "lr", "lr (metric)", "status (metric)", "status", "note"]
    assert frame.iloc[0].tolist() == ["★ best", "#1", 0.1, 0.05, "true", "", ""]


def test_only_numeric_metrics_can_be_charted_and_the_chart_has_one_bar_per_run_with_a_number() -> None:
    assert views.numeric_metrics(results()) == ["loss", "acc"]
    chart = views.results_chart_frame(results(), "acc")
    assert chart.values.tolist() == [["lr=0.1", 0.9, "best"], ["lr=0.3", 0.7, "other"]]
    assert views.results_chart_frame(results(), None).empty


def test_runs_with_the_same_parameters_get_their_task_id_on_the_axis() -> None:
    table = results()
    table["rows"][1]["params"] = {"lr": 0.1}
    labels = views.results_chart_frame(table, "loss")["run"].tolist()
    assert labels == ["lr=0.1 (#12)", "lr=0.1 (#13)"]
    table["rows"][0]["params"] = {}
    assert views.run_label(table["rows"][0]) == "#12 grid lr:0.1"


def test_the_results_note_names_the_sort_the_goal_the_best_task_and_the_chart() -> None:
    note = views.results_note(results(), "acc")
    assert "sweep #4: 3 tasks, sorted by loss (smaller is better)." in note
    assert "best: task #12 (lr=0.1) with loss = 1.0" in note and "The chart shows acc per run." in note
    by_tag = views.results_note(results(sweep_id=None, tag="<img src=x>", goal="max", rows=[]))
    assert by_tag == "<p>tag &lt;img src=x&gt;: 0 tasks.</p>"
    assert "no task reported a number" in views.results_note(results(sort=None, goal=None))


def test_a_sweep_with_failed_runs_says_how_to_run_them_again() -> None:
    note = views.results_note(results())
    assert note.endswith(
        "<br>1 run failed: say &quot;rerun the failed runs of sweep 4&quot; in the chat, or run "
        "`nightshift rerun --sweep 4`, to run them again in their place.</p>"
    )
    ok = results(rows=[row for row in results()["rows"] if row["status"] != "failed"])
    assert "failed" not in views.results_note(ok)
    assert "rerun" not in views.results_note(results(sweep_id=None, tag="exp7"))  # a tag: no sweep to rerun


def test_user_text_in_the_results_note_is_escaped() -> None:
    table = results(sort="<i>loss</i>")
    table["rows"][0]["params"] = {"opt": "<script>x</script>"}
    table["rows"][0]["metrics"] = {"<i>loss</i>": 1.0}
    note = views.results_note(table, "<i>loss</i>")
    assert "<script>" not in note and "<i>" not in note and "&lt;script&gt;x&lt;/script&gt;" in note


def test_recent_sweeps_are_the_sweep_ids_of_the_tasks_newest_first() -> None:
    tasks = [
        {"id": 9, "sweep_id": 4},
        {"id": 8, "sweep_id": None},
        {"id": 7, "sweep_id": 4},
        {"id": 5, "sweep_id": 2},
    ]
    assert views.recent_sweeps(tasks) == [4, 2]


def test_the_submit_card_shows_the_deadline_in_the_clusters_time_as_the_estimates() -> None:
    html = views.card_html(submit_card(deadline="2026-03-03T08:00:00+00:00"), ZONE)

    assert "<th>deadline</th><td>2026-03-03 08:00</td>" in html  # was the raw "2026-03-03T08:00:00+00:00"


def test_a_card_whose_deadline_cannot_be_met_says_so_in_the_language_of_the_conversation() -> None:
    late = "it cannot finish by its deadline 22:00: the earliest it may start is 23:00 (off-peak window)"
    card = {**submit_card(deadline="2026-03-02T22:00:00+00:00"), "warnings": [late]}
    change = {
        "kind": "change",
        "action_id": "act_2",
        "task_id": 7,
        "changes": {"priority": ["normal", "high"]},
    }

    english, chinese = views.card_html(card, ZONE), views.card_html(card, ZONE, "zh")
    changed = views.card_html({**change, "warnings": [late]}, ZONE)

    warning = (
        "⚠ It cannot finish by its deadline 22:00: the earliest it may start is 23:00 (off-peak window)."
    )
    assert f'<p class="ns-card-warning">{warning}</p>' in english
    assert (
        '<p class="ns-card-warning">⚠ 它赶不上截止时间 22:00：最早 23:00 才能开始（谷时窗口）。</p>'
        in chinese
    )
    assert warning in changed and "ns-card-warning" not in views.card_html(change, ZONE)


def test_quota_bars_add_one_per_person_with_a_budget_of_their_own_after_the_teams() -> None:
    people = [
        {"team": "vision", "user": "alice", "day_used_gpu_h": 9.0, "day_budget_gpu_h": 10.0, "day_share": 0.9,
         "week_used_gpu_h": 9.0, "week_budget_gpu_h": None, "week_share": None},
        {"team": "vision", "user": "bob", "day_used_gpu_h": 1.0, "day_budget_gpu_h": None, "day_share": None,
         "week_used_gpu_h": 1.0, "week_budget_gpu_h": None, "week_share": None},
    ]  # fmt: skip

    bars = views.quota_bars({**report(), "member_quota": people})

    assert [(b["team"], b["window"]) for b in bars][-2:] == [("vision", "week"), ("vision / alice", "day")]
    page = views.quota_html({**report(), "member_quota": people})
    assert page.count('class="ns-quota-bar"') == 4 and "vision / alice · day" in page
    assert "bob" not in page  # no budget of his own: no bar, and not among the teams without one
