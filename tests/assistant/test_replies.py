"""What the assistant says about a tool's answer when it words the reply itself (the offline model)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from assistant.cards import deadline_warnings
from assistant.replies import canned, card_text, energy_words, quota_words, reply_for

NOW = datetime(2026, 12, 1, 13, 0, tzinfo=UTC)


def _estimate(wait_s: float, low: str, high: str, reason: str = "") -> str:
    start = "2026-12-01T23:00:00+00:00"
    return json.dumps(
        {"estimate": {"start": start, "low": low, "high": high, "wait_s": wait_s, "reason": reason}}
    )


def test_times_the_api_gives_in_utc_read_on_the_clusters_clock() -> None:
    shanghai = datetime.fromisoformat("2026-12-01T21:00:00+08:00")  # 13:00 UTC
    content = _estimate(36000, "2026-12-01T22:00:00+00:00", "2026-12-02T01:00:00+00:00")

    # 23:00 UTC is 07:00 the next morning in Shanghai, where the person and the off-peak hours are
    assert reply_for("estimate_wait", content, "en", shanghai).startswith(
        "Estimated start tomorrow 07:00 (range tomorrow 06:00–tomorrow 09:00)"
    )
    assert reply_for("estimate_wait", content, "zh", shanghai).startswith("预计 明天 07:00 开始")


def test_a_night_without_endings_says_so_and_the_evening_before_reads_as_yesterday() -> None:
    quiet = json.dumps(
        {"summary": {"since": "2026-11-30T18:00:00+00:00", "succeeded": [], "failed": [], "cancelled": []}}
    )

    assert reply_for("night_summary", quiet, "en", NOW) == "No task of your team ended since yesterday 18:00."
    assert reply_for("night_summary", quiet, "zh", NOW) == "从 昨天 18:00 到现在，没有任务结束。"


def test_a_wait_for_a_task_not_yet_sent_says_what_size_it_priced() -> None:
    asked = {"gpus": 2, "gpu_memory_gb": 40}
    now_free = json.dumps({"task_id": None, "asked": asked, "estimate": {"start": "2026-12-01T13:00:00+00:00",
                           "wait_s": 0}})  # fmt: skip
    waits = json.loads(_estimate(3600, "2026-12-01T23:00:00+00:00", "2026-12-01T23:00:00+00:00"))

    assert reply_for("estimate_wait", now_free, "en", NOW) == "A 2-GPU task (40 GB each) would start now."
    assert reply_for("estimate_wait", now_free, "zh", NOW) == "2 张卡（每张 40 GB）的任务现在就能开始。"
    waiting = json.dumps({**waits, "task_id": None, "asked": {"gpus": 8, "gpu_memory_gb": None}})
    assert reply_for("estimate_wait", waiting, "en", NOW).startswith(
        "An 8-GPU task: Estimated start today 23:00"
    )


def test_a_wait_reads_as_one_sentence_with_its_range_and_reason() -> None:
    content = _estimate(
        36000, "2026-12-01T22:00:00+00:00", "2026-12-02T01:00:00+00:00", "waiting for off-peak"
    )

    assert reply_for("estimate_wait", content, "en", NOW) == (
        "Estimated start today 23:00 (range today 22:00–tomorrow 01:00), a wait of about 10 h 0 min"
        " — waiting for off-peak."
    )
    assert reply_for("estimate_wait", content, "zh", NOW) == (
        "预计 今天 23:00 开始（范围 今天 22:00–明天 01:00），大约要等 10小时0分钟（waiting for off-peak）。"
    )


def test_a_wait_with_no_range_or_no_wait_says_so_plainly() -> None:
    same = "2026-12-01T23:00:00+00:00"
    assert reply_for("estimate_wait", _estimate(36000, same, same), "en", NOW) == (
        "Estimated start today 23:00, a wait of about 10 h 0 min."
    )
    assert (
        reply_for("estimate_wait", _estimate(0, same, same, "starts now"), "en", NOW) == "It would start now."
    )


def test_why_a_task_waits_reads_as_sentences() -> None:
    content = json.dumps(
        {
            "explain": {
                "task_id": 2,
                "status": "queued",
                "position": 1,
                "reason": "waiting for off-peak at 23:00",
                "estimated_start": "2026-12-01T23:00:00+00:00",
            }
        }
    )

    assert reply_for("explain_task", content, "en", NOW) == (
        "Task #2 is queued, number 1 in the queue: waiting for off-peak at 23:00. Estimated start today 23:00."
    )
    assert reply_for("explain_task", content, "zh", NOW) == (
        "任务 #2 在排队，排第 1 位：等待 23:00 开始的谷时电价窗口。预计 今天 23:00 开始。"
    )


def test_a_task_expected_to_end_after_its_deadline_says_so_in_the_persons_language() -> None:
    late = "expected to end around tomorrow 01:40, after its deadline 23:30"
    queued = {"task_id": 31, "status": "queued", "position": 2, "reason": "all GPUs are busy"}
    waiting = json.dumps({"explain": {**queued, "deadline_warning": late}})
    running = json.dumps(
        {"explain": {"task_id": 31, "status": "running", "reason": "running on n0 since 12:00",
                     "estimated_end": "2026-12-02T01:40:00+00:00", "deadline_warning": late}}
    )  # fmt: skip
    in_time = json.dumps({"explain": {**queued, "deadline_warning": None}})

    assert reply_for("explain_task", waiting, "en", NOW) == (
        "Task #31 is queued, number 2 in the queue: all GPUs are busy. It is expected to end around "
        "tomorrow 01:40, after its deadline 23:30."
    )
    assert reply_for("explain_task", waiting, "zh", NOW).endswith(
        "所有卡都在忙。预计 明天 01:40 左右结束，晚于截止时间 23:30。"
    )
    assert reply_for("explain_task", running, "en", NOW).endswith(
        "(by its estimate or time limit). It is expected to end around tomorrow 01:40, after its deadline 23:30."
    )
    assert "deadline" not in reply_for("explain_task", in_time, "en", NOW)


def test_when_will_a_queued_task_start_says_its_deadline_will_be_missed() -> None:
    late = "expected to end around tomorrow 01:40, after its deadline 23:30"
    estimate = {"start": "2026-12-01T23:00:00+00:00", "low": "2026-12-01T23:00:00+00:00",
                "high": "2026-12-01T23:00:00+00:00", "wait_s": 3600.0, "reason": "all GPUs are busy",
                "status": "queued", "deadline_warning": late}  # fmt: skip
    content = json.dumps({"task_id": 31, "estimate": estimate})

    english = reply_for("estimate_wait", content, "en", NOW)
    chinese = reply_for("estimate_wait", content, "zh", NOW)

    assert english.startswith("#31 Estimated start") and english.endswith(
        "It is expected to end around tomorrow 01:40, after its deadline 23:30."
    )
    assert chinese.endswith("预计 明天 01:40 左右结束，晚于截止时间 23:30。")


def _explained(status: str, reason: str) -> str:
    return json.dumps({"explain": {"task_id": 4, "status": status, "position": None, "reason": reason}})


def test_how_a_task_that_is_not_waiting_is_doing_reads_without_saying_its_status_twice() -> None:
    replies = {
        (status, reason): (reply_for("explain_task", _explained(status, reason), "en", NOW),
                           reply_for("explain_task", _explained(status, reason), "zh", NOW))
        for status, reason in [
            ("failed", "exit code 3"),
            ("succeeded", "finished successfully"),
            ("cancelled", "cancelled (killed by SIGTERM)"),
            ("cancelled", "cancelled by alice"),
            ("running", "running on n0 GPUs 1 since 12:00"),
        ]
    }  # fmt: skip

    assert list(replies.values()) == [
        ("Task #4 failed: exit code 3.", "任务 #4 失败了：退出码 3。"),
        ("Task #4 succeeded.", "任务 #4 已成功完成。"),
        ("Task #4 was cancelled (killed by SIGTERM).", "任务 #4 已取消（被 SIGTERM 终止）。"),
        ("Task #4 was cancelled by alice.", "任务 #4 已取消（操作人 alice）。"),
        (
            "Task #4 is running on n0 GPUs 1 since 12:00.",
            "任务 #4 正在运行（在 n0 的 1 号卡上，自 12:00 起）。",
        ),
    ]


def _quota(budget: float | None, used: float = 0.0, uses: float | None = None, state: str = "ok") -> dict:
    return {"team": "vision", "budget_gpu_h": budget, "used_gpu_h": used, "uses_gpu_h": uses, "state": state}


def test_a_cards_quota_line_reads_in_the_language_of_the_conversation() -> None:
    cases = [
        (_quota(None), "team vision: no daily budget", "团队 vision：没有每日预算"),
        (
            _quota(None, uses=2.0),
            "team vision: no daily budget; uses ~2.0 GPU-h",
            "团队 vision：没有每日预算；约用 2.0 GPU小时",
        ),
        (
            _quota(40, 40, 2.0, "exhausted"),
            "team vision's day budget is used up (40 of 40 GPU-h): it waits until the team's usage falls",
            "团队 vision 日预算已用完（40 / 40 GPU小时）：它会等到团队用量回落",
        ),
        (
            _quota(40, 34, None, "warning"),
            "team vision: 6.0 of 40 GPU-h left in its day budget (warning)",
            "团队 vision：日预算还剩 6.0 / 40 GPU小时（已用过 80%）",
        ),
        (
            _quota(40, 20, 4.0),
            "uses ~4.0 of the 20.0 GPU-h left in the team's day budget; 16.0 GPU-h left after it",
            "约用 4.0 GPU小时，团队日预算还剩 20.0；运行后还剩 16.0 GPU小时",
        ),
        (
            _quota(40, 38, 4.0, "warning"),
            "uses ~4.0 of the 2.0 GPU-h left in the team's day budget; "
            "it would take the team over its day budget: it runs, and later tasks wait",
            "约用 4.0 GPU小时，团队日预算还剩 2.0；会超出每日预算：它照常运行，之后的任务要等",
        ),
    ]

    assert [(quota_words(q, "en"), quota_words(q, "zh")) for q, _, _ in cases] == [
        (en, zh) for _, en, zh in cases
    ]


def test_a_teams_quota_reads_in_chinese_with_chinese_punctuation_and_states() -> None:
    content = json.dumps(
        {
            "quota": {
                "team": "vision",
                "gpus_in_use": 2,
                "gpu_cap": 4,
                "day": {"used_gpu_h": 9.0, "budget_gpu_h": 10, "state": "warning"},
                "week": {"used_gpu_h": 30.0, "budget_gpu_h": None, "state": "ok"},
            }
        }
    )

    assert reply_for("quota_status", content, "zh", NOW) == (
        "团队 vision：正在使用 2 张卡（上限 4）；过去 24 小时：已用 9.0/10 GPU小时，剩余 1.0（已用过 80%）；"
        "过去 7 天：已用 30.0 GPU小时，无预算限制。"
    )
    assert reply_for("quota_status", content, "en", NOW) == (
        "Team vision: 2 GPU(s) in use of a cap of 4; last 24 h: 9.0 of 10 GPU-h used, 1.0 left (warning); "
        "last 7 days: 30.0 GPU-h used, no budget."
    )
    # with the team's fair-share standing, in both languages; none said under a policy without the credit
    fair = {"part_of_use": 0.4, "equal_share": 0.333, "credit_h": 2.61, "max_credit_h": 6.0}
    standing = json.dumps({"quota": {**json.loads(content)["quota"], "fair_share": fair}})
    assert reply_for("quota_status", standing, "zh", NOW).endswith(
        "公平份额：近期用量占 40%（平均份额 33%），排队任务获得 2.61/6 小时的优先级加分。"
    )
    assert reply_for("quota_status", standing, "en", NOW).endswith(
        " Fair share: 40% of recent use against an equal share of 33%, so its waiting tasks get 2.61 of 6 h of "
        "priority credit."
    )
    member = {"part_of_team": 0.75, "members": 3, "credit_h": 1.2}
    within = json.dumps({"quota": {**json.loads(content)["quota"], "fair_share": {**fair, "member": member}}})
    assert reply_for("quota_status", within, "en", NOW).endswith(
        " Within the team you ran 75% of its recent use among 3 people, so your waiting tasks get 1.2 h."
    )
    assert reply_for("quota_status", within, "zh", NOW).endswith(
        "在组内，你的近期用量占 75%（共 3 人），你的排队任务获得 1.2 小时加分。"
    )
    alone = json.dumps(
        {
            "quota": {
                **json.loads(content)["quota"],
                "fair_share": {**fair, "member": {**member, "members": 1}},
            }
        }
    )
    assert "Within the team" not in reply_for("quota_status", alone, "en", NOW)
    fifo = json.dumps({"quota": {**json.loads(standing)["quota"], "fair_share": {**fair, "max_credit_h": 0}}})
    assert "Fair share" not in reply_for("quota_status", fifo, "en", NOW)
    # the person's own cap, where one is set
    own = json.dumps({"quota": {**json.loads(content)["quota"], "user_gpu_cap": 2, "user_gpus_in_use": 1}})
    assert reply_for("quota_status", own, "en", NOW).startswith(
        "Team vision: 2 GPU(s) in use of a cap of 4; you: 1 of your cap of 2; last 24 h"
    )
    assert reply_for("quota_status", own, "zh", NOW).startswith(
        "团队 vision：正在使用 2 张卡（上限 4）；你本人：1 张（上限 2）；"
    )


def test_a_task_list_names_why_a_task_ended_only_where_that_says_more() -> None:
    content = json.dumps(
        {
            "tasks": [
                {"id": 5, "name": "train", "status": "queued", "reason": None},
                {"id": 4, "name": "eval", "status": "succeeded", "reason": "exit"},
                {"id": 2, "name": "prep", "status": "failed", "reason": "nonzero_exit"},
                {
                    "id": 3,
                    "name": "eval2",
                    "status": "failed",
                    "reason": "nonzero_exit",
                    "message": "exit code 3",
                },
                {"id": 1, "name": "sleep", "status": "cancelled", "reason": "cancelled"},
            ]
        }
    )

    assert reply_for("list_tasks", content, "en", NOW) == (
        "5 task(s):\n#5 train — queued\n#4 eval — succeeded\n#2 prep — failed (nonzero_exit)\n"
        "#3 eval2 — failed (exit code 3)\n#1 sleep — cancelled"
    )
    assert reply_for("list_tasks", content, "zh", NOW) == (
        "共 5 个任务：\n#5 train — 排队中\n#4 eval — 已完成\n#2 prep — 失败（nonzero_exit）\n"
        "#3 eval2 — 失败（退出码 3）\n#1 sleep — 已取消"
    )


def test_a_list_of_several_peoples_tasks_says_whose_each_is_and_ones_own_list_does_not() -> None:
    team = [
        {"id": 6, "name": "train", "status": "queued", "user": "bob"},
        {"id": 5, "name": "eval", "status": "running", "user": "alice"},
    ]

    assert reply_for("list_tasks", json.dumps({"tasks": team}), "en", NOW) == (
        "2 task(s):\n#6 train (bob) — queued\n#5 eval (alice) — running"
    )
    assert (
        reply_for("list_tasks", json.dumps({"tasks": team}), "zh", NOW).splitlines()[1]
        == "#6 train（bob） — 排队中"
    )
    own = [{**task, "user": "alice"} for task in team]
    assert (
        reply_for("list_tasks", json.dumps({"tasks": own}), "en", NOW).splitlines()[1] == "#6 train — queued"
    )


def test_a_usage_report_reads_whole_days_and_chinese_rows() -> None:
    content = json.dumps(
        {
            "report": {
                "days": 7.0,
                "total_gpu_hours": 12.5,
                "utilization": 0.25,
                "rows": [{"key": "vision", "gpu_hours": 12.5, "tasks": 3}],
            }
        }
    )

    assert reply_for("utilization_report", content, "en", NOW) == (
        "Last 7 day(s): 12.5 GPU-hours used, utilization 25%.\nvision: 12.5 h, 3 task(s)"
    )
    assert reply_for("utilization_report", content, "zh", NOW) == (
        "过去 7 天共用 12.5 GPU小时，利用率 25%。\nvision：12.5 GPU小时，3 个任务"
    )
    # CPU time where a team's jobs ran in cgroups (and nothing where it is not known)
    with_cpu = json.dumps(
        {
            "report": {
                "days": 1.0,
                "total_gpu_hours": 4.0,
                "utilization": 0.5,
                "rows": [
                    {"key": "vision", "gpu_hours": 3.0, "tasks": 2, "cpu_hours": 1.25},
                    {"key": "nlp", "gpu_hours": 1.0, "tasks": 1, "cpu_hours": None},
                ],
            }
        }
    )
    assert reply_for("utilization_report", with_cpu, "en", NOW).splitlines()[1:] == [
        "vision: 3.0 h, 2 task(s), 1.2 CPU-h",
        "nlp: 1.0 h, 1 task(s)",
    ]
    assert reply_for("utilization_report", with_cpu, "zh", NOW).splitlines()[1] == (
        "vision：3.0 GPU小时，2 个任务，CPU 1.2 小时"
    )


def test_a_cards_energy_line_reads_in_the_language_of_the_conversation() -> None:
    energy = {"kwh": 1.2, "gpus": 2, "power_w": 300.0, "minutes": 120.0}

    assert energy_words(energy, "en") == "~1.2 kWh (2 × 300 W for 120 min)"
    assert energy_words(energy, "zh") == "约 1.2 kWh（2 × 300 W，120 分钟）"
    short = {"kwh": 0.005, "gpus": 1, "power_w": 300.0, "minutes": 1.0}
    assert energy_words(short, "en") == "~0.0050 kWh (1 × 300 W for 60 s)"  # not ~0.0 kWh


def test_a_cards_other_settings_read_as_words() -> None:
    card = {
        "kind": "submit",
        "spec": {
            "command": "python train.py",
            "gpus": 4,
            "priority": "high",
            "time_limit_minutes": 180.0,
            "retries": 1,
            "depends_on": [5],
            "deadline": "2026-12-02T18:00:00+00:00",
        },
        "summary": {},
    }

    assert (
        "• priority high, time limit 180 min, retries 1, after task #5 succeeds, deadline tomorrow 18:00"
        in card_text(card, "en", NOW)
    )
    assert "• 优先级 高，时间限制 180 分钟，失败重试 1 次，等任务 #5 成功后，截止 明天 18:00" in card_text(
        card, "zh", NOW
    )


def test_a_cards_resources_name_the_gpu_model_and_node() -> None:
    card = {
        "kind": "submit",
        "spec": {
            "command": "python t.py",
            "gpus": 2,
            "gpu_model": "A100",
            "gpu_memory_gb": 40,
            "node": "box-1",
        },
        "summary": {},
    }

    assert "• resources: 2 GPUs (A100), ≥40 GB each, on node box-1" in card_text(card, "en", NOW)
    assert "• 资源: 2 张卡（A100），每张 ≥40 GB，在节点 box-1 上" in card_text(card, "zh", NOW)


def test_a_request_for_logs_says_where_to_find_them() -> None:
    assert "`nightshift logs ID`" in canned("help", "logs", "en")
    assert "`nightshift logs 任务编号`" in canned("help", "logs", "zh")
    assert canned("help", "help", "en").startswith("Hi!")


def test_a_request_for_the_logs_of_a_named_task_gets_that_tasks_own_command() -> None:
    from langchain_core.messages import HumanMessage

    from assistant.offline import OfflineChatModel

    model = OfflineChatModel(now=NOW)
    english = model.respond([HumanMessage("show me the logs of task 5")])
    chinese = model.respond([HumanMessage("看一下12号的日志")])

    assert english.tool_calls == [] and "`nightshift logs 5`" in str(english.content)
    assert "open task #5 in the My tasks tab" in str(english.content) and "ID" not in str(english.content)
    assert "`nightshift logs 12`" in str(chinese.content) and "任务编号" not in str(chinese.content)


def test_when_a_running_task_should_finish_reads_from_its_estimate() -> None:
    running = {"task_id": 6, "status": "running", "reason": "running on n0 GPUs 1 since 12:00"}
    ahead = json.dumps({"explain": {**running, "estimated_end": "2026-12-01T14:30:00+00:00"}})
    overrun = json.dumps({"explain": {**running, "estimated_end": "2026-12-01T12:30:00+00:00"}})
    asked = json.dumps(
        {"task_id": 6, "estimate": {**running, "start": None, "end": "2026-12-01T14:30:00+00:00"}}
    )

    assert reply_for("explain_task", ahead, "en", NOW) == (
        "Task #6 is running on n0 GPUs 1 since 12:00. Expected to finish around today 14:30 "
        "(by its estimate or time limit)."
    )
    assert reply_for("explain_task", ahead, "zh", NOW).endswith("按预计或时间限制，大约 今天 14:30 完成。")
    assert reply_for("explain_task", overrun, "en", NOW).endswith("It has run past its estimate.")
    assert reply_for("estimate_wait", asked, "en", NOW) == reply_for("explain_task", ahead, "en", NOW)


def test_a_card_says_what_run_time_it_assumed_when_the_person_gave_none() -> None:
    def card(run: dict[str, object] | None) -> dict[str, object]:
        summary = {
            "estimated_start": "2026-12-01T10:00:00+00:00",
            "estimated_end": "2026-12-01T11:00:00+00:00",
        }
        return {
            "kind": "submit",
            "spec": {"command": "python t.py", "gpus": 1},
            "summary": summary | ({"run_estimate": run} if run else {}),
        }

    guess = card({"minutes": 60.0, "source": "default"})
    learned = card({"minutes": 0.5, "source": "median of 3 recent runs"})
    limit = card({"minutes": 90.0, "source": "time limit"})

    assert "finish ~today 11:00 (a guess of 60 min: say how long it runs for a better estimate)" in card_text(
        guess, "en", NOW
    )
    assert "（按默认 60 分钟估计；告诉我大概要跑多久可以估得更准）" in card_text(guess, "zh", NOW)
    assert "(30 s, the median of your 3 recent runs like it)" in card_text(learned, "en", NOW)
    assert "（30 秒，按你最近 3 次同类运行的中位数）" in card_text(learned, "zh", NOW)
    assert "(90 min, its time limit)" in card_text(limit, "en", NOW)
    assert "finish ~today 11:00\n" in card_text(card(None), "en", NOW)  # the person's own estimate: no note
    assert "• estimate: start today 10:00, finish ~today 11:00" in card_text(card(None), "en", NOW)
    assert "• 预计: 今天 10:00 开始，今天 11:00 完成\n" in card_text(card(None), "zh", NOW)


def test_a_request_to_compare_results_compares_the_sweep_it_names_or_asks_which() -> None:
    from assistant.parsing.intents import understand

    for text in (
        "compare sweep 1",
        "which run of sweep 1 had the best loss?",
        "对比一下扫参1的结果",
        "扫参1哪组最好",
    ):
        reading = understand(text, NOW)
        assert (reading.kind, reading.tool, reading.args.get("sweep_id")) == ("tool", "compare_results", 1), (
            text
        )
    unnamed = understand("compare my results", NOW)
    assert (unnamed.kind, unnamed.reason) == ("help", "results")
    assert '"compare sweep 4 by val_loss"' in canned("help", "results", "en")
    assert "`nightshift compare 扫参编号 --sort 指标`" in canned("help", "results", "zh")
    assert understand("run `python compare.py` on 1 GPU", NOW).tool == "submit_task"


def test_a_cancel_card_in_chinese_names_the_status_in_chinese() -> None:
    card = {"kind": "cancel", "task_id": 3, "task": {"name": "<data>train.py</data>", "status": "queued"}}

    # the status was left in English: "要取消任务 #3 (train.py, queued) 吗？"
    assert card_text(card, "zh", NOW).startswith("要取消任务 #3（train.py，排队中）吗？")
    assert card_text(card, "en", NOW).startswith("Cancel task #3 (train.py, queued)?")


def test_a_card_foresees_the_apis_note_on_a_deadline_it_cannot_meet_and_says_it() -> None:
    # off-peak from 23:00: a task that must be done by 22:00 cannot be, whatever the queue
    spec = {"command": "python train.py", "gpus": 1, "offpeak": True, "deadline": "2026-12-01T22:00:00+00:00"}
    limit = {**spec, "offpeak": False, "not_before": "2026-12-01T21:00:00+00:00", "time_limit_minutes": 120}
    shanghai = datetime.fromisoformat("2026-12-01T21:00:00+08:00")  # a fixed offset: the same hour there

    notes = deadline_warnings(spec, NOW, "23:00-07:00")
    card = {"kind": "submit", "spec": spec, "summary": {}, "warnings": notes}

    assert notes == [
        "it cannot finish by its deadline 22:00: the earliest it may start is 23:00 (off-peak window)"
    ]
    assert deadline_warnings(limit, NOW, "23:00-07:00") == [
        "it cannot finish by its deadline 22:00: the earliest it may start is 21:00 (not before), and its "
        "~2.0 h time limit ends it around 23:00"
    ]
    assert deadline_warnings(limit, shanghai, "23:00-07:00") == [
        "it cannot finish by its deadline tomorrow 06:00: the earliest it may start is tomorrow 05:00 (not "
        "before), and its ~2.0 h time limit ends it around tomorrow 07:00"
    ]
    assert deadline_warnings({**spec, "deadline": "2026-12-02T08:00:00+00:00"}, NOW, "23:00-07:00") == []
    assert deadline_warnings({**spec, "deadline": None}, NOW, "23:00-07:00") == []
    assert "\n• ⚠ It cannot finish by its deadline 22:00: the earliest it may start is 23:00 (off-peak " in (
        card_text(card, "en", NOW)
    )
    assert "\n• ⚠ 它赶不上截止时间 22:00：最早 23:00 才能开始（谷时窗口）。\n确认之前不会提交。" in card_text(
        card, "zh", NOW
    )


def test_a_usage_report_says_its_energy_and_cost_and_a_report_without_capacity_reads_zero() -> None:
    # "how much has my team spent": the report's totals of energy and cost
    content = json.dumps(
        {
            "report": {
                "days": 7.0,
                "total_gpu_hours": 12.5,
                "utilization": None,  # no GPUs reported over the window
                "total_energy_kwh": 3.75,
                "total_cost": 0.84375,
                "currency": "EUR",
                "rows": [],
            }
        }
    )
    assert reply_for("utilization_report", content, "en", NOW) == (
        "Last 7 day(s): 12.5 GPU-hours used, utilization 0%. Energy 3.8 kWh, cost 0.84 EUR."
    )
    assert reply_for("utilization_report", content, "zh", NOW) == (
        "过去 7 天共用 12.5 GPU小时，利用率 0%。耗电 3.8 kWh，费用 0.84 EUR。"
    )


def test_a_queued_tasks_expected_cost_is_said_when_asked_and_its_start_is_known() -> None:
    queued = {"task_id": 4, "status": "queued", "position": 1, "reason": "all GPUs are busy",
              "estimated_run_s": 5400.0, "energy_kwh": 0.84, "currency": "USD"}  # fmt: skip
    priced = json.dumps({"explain": {**queued, "energy_cost": 0.17}})
    unknown = json.dumps({"explain": {**queued, "energy_cost": None}})

    assert reply_for("explain_task", priced, "en", NOW, about_cost=True).endswith(
        "Run as estimated (90 min), it should use ~0.8 kWh and cost ~0.17 USD."
    )
    assert reply_for("explain_task", priced, "zh", NOW, about_cost=True).endswith(
        "预计耗电约 0.8 kWh，费用约 0.17 USD。"
    )
    assert "kWh" not in reply_for("explain_task", unknown, "en", NOW, about_cost=True)
    assert "kWh" not in reply_for("explain_task", priced, "en", NOW)  # "why is 4 waiting?" is not about cost


def test_an_ended_task_says_how_long_it_ran_and_when() -> None:
    data = {
        "explain": {"task_id": 4, "status": "succeeded", "position": None, "reason": "finished successfully"},
        "ran": {"started_at": "2026-11-30T09:00:00+00:00", "finished_at": "2026-11-30T10:05:30+00:00"},
    }

    english = reply_for("explain_task", json.dumps(data), "en", NOW)
    chinese = reply_for("explain_task", json.dumps(data), "zh", NOW)

    assert english == "Task #4 succeeded. It ran 1 h 6 min (yesterday 09:00 to 10:05)."
    assert chinese == "任务 #4 已成功完成。运行了 1小时6分钟（昨天 09:00 至 10:05）。"


def test_a_usage_report_says_each_rows_mean_wait_where_it_has_one() -> None:
    content = json.dumps(
        {
            "report": {
                "days": 1.0,
                "total_gpu_hours": 4.0,
                "utilization": 0.5,
                "rows": [
                    {"key": "vision", "gpu_hours": 3.0, "tasks": 2, "mean_wait_s": 4530.0},
                    {"key": "nlp", "gpu_hours": 1.0, "tasks": 1, "mean_wait_s": None},
                ],
            }
        }
    )

    assert reply_for("utilization_report", content, "en", NOW).splitlines()[1:] == [
        "vision: 3.0 h, 2 task(s), mean wait 1 h 16 min",
        "nlp: 1.0 h, 1 task(s)",
    ]
    assert reply_for("utilization_report", content, "zh", NOW).splitlines()[1] == (
        "vision：3.0 GPU小时，2 个任务，平均等待 1小时16分钟"
    )


def test_an_ended_task_run_once_says_how_long_it_waited_and_a_retried_one_does_not() -> None:
    ran = {"submitted_at": "2026-11-30T08:48:00+00:00", "started_at": "2026-11-30T09:00:00+00:00"}
    ran["finished_at"] = "2026-11-30T10:05:30+00:00"
    explain = {"task_id": 4, "status": "succeeded", "position": None, "reason": "finished successfully"}

    once = reply_for(
        "explain_task", json.dumps({"explain": explain, "ran": {**ran, "attempts": 1}}), "en", NOW
    )
    chinese = reply_for("explain_task", json.dumps({"explain": explain, "ran": ran}), "zh", NOW)
    retried = reply_for(
        "explain_task", json.dumps({"explain": explain, "ran": {**ran, "attempts": 2}}), "en", NOW
    )

    assert once == "Task #4 succeeded. It waited 12 min, then ran 1 h 6 min (yesterday 09:00 to 10:05)."
    assert chinese == "任务 #4 已成功完成。排队 12分钟 后运行了 1小时6分钟（昨天 09:00 至 10:05）。"
    assert retried == "Task #4 succeeded. It ran 1 h 6 min (yesterday 09:00 to 10:05)."


def test_a_queued_task_says_how_long_it_has_waited_and_a_running_one_how_long_it_waited_to_start() -> None:
    queued = {"task_id": 5, "status": "queued", "position": 2, "reason": "behind 1 higher-priority task"}
    queued["submitted_at"] = "2026-12-01T11:35:00+00:00"
    running = {"task_id": 6, "status": "running", "position": None, "reason": "running on n0 GPUs 1"}
    running |= {"submitted_at": "2026-12-01T12:00:00+00:00", "started_at": "2026-12-01T12:40:00+00:00"}

    def said(explain: dict[str, object], lang: str = "en") -> str:
        return reply_for("explain_task", json.dumps({"explain": explain}), lang, NOW)

    assert said(queued) == (
        "Task #5 is queued, number 2 in the queue: behind 1 higher-priority task. It has been queued for 1 h 25 min."
    )
    assert said(queued, "zh").endswith("已排队 1小时25分钟。")
    assert said(running).endswith(" It waited 40 min before it started.")
    assert said(running, "zh").endswith("开始前排队了 40分钟。")
    # a retried task's start is its last attempt's; without the times nothing is said
    assert "waited" not in said({**running, "attempts": 2})
    assert "queued for" not in said({k: v for k, v in queued.items() if k != "submitted_at"})
    assert said({**running, "started_at": "2026-12-01T12:00:40+00:00"}).endswith(
        " It waited 40 s before it started."
    )


def test_an_explain_says_the_tasks_command_only_when_asked_what_it_runs() -> None:
    explain = {
        "task_id": 7,
        "status": "running",
        "reason": "running on n0 GPUs 1",
        "command": "python train.py",
    }
    content = json.dumps({"explain": explain})

    assert reply_for("explain_task", content, "en", NOW, asked=("command",)).endswith(
        " Its command: `python train.py`."
    )
    assert reply_for("explain_task", content, "zh", NOW, asked=("command",)).endswith(
        "它的命令：`python train.py`。"
    )
    assert "python train.py" not in reply_for("explain_task", content, "en", NOW)


def test_an_explain_says_each_setting_asked_for() -> None:
    explain = {"task_id": 7, "status": "queued", "reason": "behind 1 task", "priority": {"class": "high"}}
    explain |= {
        "priority_class": "high",
        "time_limit_minutes": 180.0,
        "deadline": None,
        "tags": ["exp7", "v2"],
    }
    content = json.dumps({"explain": explain})

    said = reply_for("explain_task", content, "en", NOW, asked=("priority_class", "time_limit_minutes"))
    assert said.endswith(" Its priority: high. Its time limit (min): 180.")
    assert reply_for("explain_task", content, "en", NOW, asked=("deadline", "tags")).endswith(
        " Its deadline: none. Its tags: exp7, v2."
    )
    assert reply_for("explain_task", content, "zh", NOW, asked=("priority_class",)).endswith(
        "它的优先级：高。"
    )


def test_a_persons_own_budget_is_read_after_the_teams_with_when_their_new_starts_come_again() -> None:
    team = {"used_gpu_h": 9.0, "budget_gpu_h": None, "state": "ok"}
    own = {
        "day": {"used_gpu_h": 10.0, "budget_gpu_h": 10, "state": "exhausted"},
        "week": {"used_gpu_h": 12.0, "budget_gpu_h": None, "state": "ok"},
        "state": "exhausted",
        "new_starts_at": "2026-12-01T18:00:00+00:00",
    }
    quota = {"team": "vision", "gpus_in_use": 2, "gpu_cap": None, "day": team, "week": team}
    content = json.dumps({"quota": {**quota, "user": "alice", "user_budget": own}})

    en, zh = reply_for("quota_status", content, "en", NOW), reply_for("quota_status", content, "zh", NOW)

    assert en.endswith(
        "last 7 days: 9.0 GPU-h used, no budget. Your own budget: last 24 h: 10.0 of 10 GPU-h used, 0.0 left "
        "(exhausted); your new starts again today 18:00."
    )
    assert zh.endswith(
        "你个人的预算：过去 24 小时：已用 10.0/10 GPU小时，剩余 0.0（已用完，新任务要等）；你的新任务 今天 18:00 起可以再启动。"
    )
    # no own budget: nothing said of one
    assert "own budget" not in reply_for("quota_status", json.dumps({"quota": quota}), "en", NOW)


def test_a_cards_quota_line_adds_the_persons_own_day_budget_after_the_teams() -> None:
    def own(budget: float, used: float, state: str = "ok") -> dict:
        return {"budget_gpu_h": budget, "used_gpu_h": used, "state": state}

    cases = [
        (
            {**_quota(None, uses=2.0), "own": own(10, 4)},
            "team vision: no daily budget; uses ~2.0 GPU-h; 4.0 GPU-h of your own day budget left after it",
            "团队 vision：没有每日预算；约用 2.0 GPU小时；运行后你个人的日预算还剩 4.0 GPU小时",
        ),
        (
            {**_quota(None, uses=2.0), "own": own(10, 10, "exhausted")},
            "team vision: no daily budget; uses ~2.0 GPU-h; your own day budget is used up (10 of 10 GPU-h): "
            "it waits until your usage falls",
            "团队 vision：没有每日预算；约用 2.0 GPU小时；你个人的日预算已用完（10 / 10 GPU小时）：它会等到你的用量回落",
        ),
        (
            {**_quota(None), "own": own(10, 8.5, "warning")},
            "team vision: no daily budget; your own day budget: 1.5 of 10 GPU-h left",
            "团队 vision：没有每日预算；你个人的日预算还剩 1.5 / 10 GPU小时",
        ),
        (
            {**_quota(40, 20, 4.0), "own": own(10, 8)},
            "uses ~4.0 of the 20.0 GPU-h left in the team's day budget; 16.0 GPU-h left after it; "
            "it would take you over your own day budget: it runs, and your later tasks wait",
            "约用 4.0 GPU小时，团队日预算还剩 20.0；运行后还剩 16.0 GPU小时；会超出你个人的日预算：它照常运行，你之后的任务要等",
        ),
    ]

    assert [(quota_words(q, "en"), quota_words(q, "zh")) for q, _, _ in cases] == [
        (en, zh) for _, en, zh in cases
    ]


def test_a_small_budget_reads_with_the_digits_that_show_it() -> None:
    period = {"used_gpu_h": 0.0022, "budget_gpu_h": 0.002, "state": "exhausted"}
    quota = {"team": "lab", "gpus_in_use": 0, "gpu_cap": None, "day": period, "week": period}

    reply = reply_for("quota_status", json.dumps({"quota": quota}), "en", NOW)

    assert "last 24 h: 0.0022 of 0.002 GPU-h used, 0.0 left (exhausted)" in reply


def test_a_small_usage_reads_as_its_amount_not_zero() -> None:
    content = json.dumps(
        {
            "report": {
                "days": 7.0,
                "total_gpu_hours": 0.039,
                "utilization": 0.0001,
                "rows": [{"key": "budg", "gpu_hours": 0.039, "tasks": 4, "cpu_hours": 0.0021}],
            }
        }
    )

    assert reply_for("utilization_report", content, "en", NOW) == (
        "Last 7 day(s): 0.039 GPU-hours used, utilization 0%.\nbudg: 0.039 h, 4 task(s), 0.0021 CPU-h"
    )
