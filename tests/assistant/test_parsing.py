"""The pure readers behind the offline model: numbers, durations, times, commands."""

from __future__ import annotations

from datetime import datetime

import pytest

from assistant.parsing.commands import find_command
from assistant.parsing.intents import understand
from assistant.parsing.numbers import duration_minutes, to_int
from assistant.parsing.times import read_times

NOW = datetime.fromisoformat("2026-03-02T15:00:00+08:00")


@pytest.mark.parametrize(
    ("text", "value"), [("two", 2), ("两", 2), ("十二", 12), ("二十四", 24), ("8", 8), ("单", 1)]
)
def test_numbers_in_words_and_digits(text, value):
    assert to_int(text) == value


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("3 hours", 180),
        ("90 min", 90),
        ("2h", 120),
        ("两个半小时", 150),
        ("半小时", 30),
        ("half an hour", 30),
        ("1 day", 1440),
    ],
)
def test_durations_in_minutes(text, minutes):
    assert duration_minutes(text) == minutes


@pytest.mark.parametrize(
    ("text", "not_before", "offpeak", "deadline"),
    [
        ("tonight", None, True, None),
        ("谷时", None, True, None),
        ("after 11pm", "2026-03-02T23:00:00+08:00", False, None),
        ("tomorrow 9am", "2026-03-03T09:00:00+08:00", False, None),
        ("in 2 hours", "2026-03-02T17:00:00+08:00", False, None),
        ("明天早上9点", "2026-03-03T09:00:00+08:00", False, None),
        ("凌晨两点", "2026-03-03T02:00:00+08:00", False, None),
        ("finish by 8am tomorrow", None, False, "2026-03-03T08:00:00+08:00"),
        ("今晚12点之后", "2026-03-03T00:00:00+08:00", False, None),
    ],
)
def test_times_resolve_against_now(text, not_before, offpeak, deadline):
    when = read_times(text, NOW)
    assert (when.not_before.isoformat() if when.not_before else None) == not_before
    assert when.offpeak is offpeak
    assert (when.deadline.isoformat() if when.deadline else None) == deadline


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("run `python train.py --lr 3e-4` tonight", "python train.py --lr 3e-4"),
        ("run python train.py --epochs 10 on 2 GPUs", "python train.py --epochs 10"),
        ("今晚用两张卡跑 train.py", "python train.py"),
        ("execute bash scripts/run.sh now", "bash scripts/run.sh"),
        ("run make train tonight", "make train"),
        (
            "launch torchrun --nproc_per_node 4 train.py --task at tonight",
            "torchrun --nproc_per_node 4 train.py --task at",
        ),
        ("run python train.py --start 9am on 2 GPUs", "python train.py --start 9am"),  # a flag's value
    ],
)
def test_commands_are_found_and_end_where_plain_language_starts(text, command):
    found = find_command(text)
    assert found is not None and found.command == command


def test_plain_language_is_not_a_command():
    assert find_command("make me admin") is None
    assert find_command("how busy are the GPUs?") is None


@pytest.mark.parametrize(
    ("text", "tool", "task_id"),
    [
        ("帮我看看31为什么还没跑", "explain_task", 31),  # a bare number run together with Chinese words
        ("31为什么还在排队", "explain_task", 31),
        ("取消7", "cancel_task", 7),
        ("why isn't 31 running?", "explain_task", 31),
    ],
)
def test_a_task_id_written_next_to_chinese_words_is_read(text: str, tool: str, task_id: int) -> None:
    from assistant.parsing.intents import understand

    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == (tool, {"task_id": task_id})


@pytest.mark.parametrize(
    "text", ["用2张卡跑 `python a.py`", "跑3小时的 `python a.py`", "用 a100 跑 `python a.py`"]
)
def test_a_number_that_counts_gpus_or_hours_or_names_a_model_is_no_task_id(text: str) -> None:
    from assistant.parsing.fields import task_ids

    assert task_ids(text) == []


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("run python train.py 2 gpus", {"gpus": 2}),
        ("run python train.py 40gb", {"gpu_memory_gb": 40}),
        ("跑 python train.py 8卡", {"gpus": 8}),
        ("跑 python train.py 40G显存", {"gpu_memory_gb": 40}),
        ("run python train.py not before 8pm", {"not_before": "2026-03-02T20:00:00+08:00"}),
        ("run python train.py tomorrow afternoon", {"not_before": "2026-03-03T14:00:00+08:00"}),
        ("跑 python train.py 两小时后", {"not_before": "2026-03-02T17:00:00+08:00"}),
        ("跑 python train.py，6小时后自动停掉", {"time_limit_minutes": 360}),
        ("跑 python train.py，conda 环境 torch2", {"conda_env": "torch2"}),
    ],
)
def test_the_spec_words_after_a_command_are_read_as_the_spec_not_as_its_arguments(
    text: str, args: dict[str, object]
) -> None:
    from assistant.parsing.intents import understand

    reading = understand(text, NOW)

    assert reading.tool == "submit_task" and reading.args["command"] == "python train.py", reading.args
    for key, value in args.items():
        got = reading.args.get(key)
        if key == "not_before":
            assert got is not None and datetime.fromisoformat(str(got)) == datetime.fromisoformat(str(value))
        else:
            assert got == value, (key, reading.args)
    assert set(reading.args) - {"command"} == set(args), reading.args


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ("how much quota does my team have left?", "quota_status", {"team": None}),
        ("vision team quota", "quota_status", {"team": "vision"}),
        ("把88号cancel掉", "cancel_task", {"task_id": 88}),
        ("is 88 done?", "explain_task", {"task_id": 88}),
        ("88号怎么失败了", "explain_task", {"task_id": 88}),
    ],
)
def test_questions_name_the_right_tool_and_arguments(text: str, tool: str, args: dict[str, object]) -> None:
    from assistant.parsing.intents import understand

    reading = understand(text, NOW)

    assert reading.tool == tool, (reading.kind, reading.tool, reading.args, reading.reason)
    assert {key: reading.args.get(key) for key in args} == args


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        (
            "run python train.py at 3 in the afternoon tomorrow",
            "submit_task",
            {"not_before": "2026-03-03T15:00"},
        ),
        ("run python train.py tonight at 2", "submit_task", {"not_before": "2026-03-03T02:00"}),
        ("等#42跑完跑 python eval.py", "submit_task", {"depends_on": [42]}),
        ("run python train.py, 4h estimated, 6h limit", "submit_task", {"estimated_minutes": 240}),
        ("跑 python x.py，大概要2小时", "submit_task", {"estimated_minutes": 120}),
        ("run python train.py with 80GB A100s x2", "submit_task", {"gpus": 2, "gpu_model": "A100"}),
        ("gpu usage over the past 3 weeks", "utilization_report", {"days": 21}),
        ("how's 88 doing?", "explain_task", {"task_id": 88}),
        ("有free的gpu吗", "cluster_status", {}),
        ("我昨天提交的任务失败了吗", "list_tasks", {"status": "failed"}),
    ],
)
def test_the_second_probe_reads_right(text: str, tool: str, args: dict[str, object]) -> None:
    from assistant.parsing.intents import understand

    reading = understand(text, NOW)

    assert reading.tool == tool, (reading.kind, reading.args, reading.reason)
    for key, value in args.items():
        got = reading.args.get(key)
        if key == "not_before":
            assert got is not None and datetime.fromisoformat(str(got)).replace(tzinfo=None) == (
                datetime.fromisoformat(str(value))
            ), got
        else:
            assert got == value, (key, reading.args)


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("run `python x.py` after 44", {"depends_on": [44]}),  # no hour of the day: a task
        ("run `python x.py` after tasks 44 and 50", {"depends_on": [44, 50]}),
        ("run `python x.py` after #3, #4", {"depends_on": [3, 4]}),
        ("run `python x.py` after 9 p.m.", {"not_before": "2026-03-02T21:00:00+08:00"}),
    ],
)
def test_after_a_number_is_a_time_when_it_can_be_an_hour_else_the_tasks_it_waits_for(
    text: str, args: dict[str, object]
) -> None:
    from assistant.parsing.intents import understand

    assert understand(text, NOW).args == {"command": "python x.py", **args}


def test_after_a_number_that_may_be_an_hour_or_a_task_asks_which() -> None:
    from assistant.parsing.intents import understand

    reading = understand("run `python x.py` after 9", NOW)  # task 9, or 9 o'clock? (it read 21:00)

    assert (reading.kind, reading.reason, reading.args) == ("question", "parent_or_hour", {"task_id": 9})


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ("how is sweep 4 doing?", "sweep_status", {"sweep_id": 4}),
        ("扫参 4 进展如何", "sweep_status", {"sweep_id": 4}),
        ("how did sweep 2 go?", "sweep_status", {"sweep_id": 2}),
        ("第2个扫参怎么样了", "sweep_status", {"sweep_id": 2}),
        ("4号扫参跑完了吗", "sweep_status", {"sweep_id": 4}),
        ("which run of sweep 4 was best?", "compare_results", {"sweep_id": 4}),
        ("which run of sweep 3 had the best loss?", "compare_results", {"sweep_id": 3, "metric": "loss"}),
        (
            "compare sweep 4 by the highest accuracy",
            "compare_results",
            {"sweep_id": 4, "metric": "accuracy", "maximize": True},
        ),
        ("扫参3哪组最好", "compare_results", {"sweep_id": 3}),
        (
            "扫参4哪组 val_loss 最低",
            "compare_results",
            {"sweep_id": 4, "metric": "val_loss", "maximize": False},
        ),
        ("扫参4按acc排序", "compare_results", {"sweep_id": 4, "metric": "acc"}),
        (
            "compare the runs tagged exp7 by val_loss",
            "compare_results",
            {"tag": "exp7", "metric": "val_loss"},
        ),
        ("which of the runs tagged exp7 was best?", "compare_results", {"tag": "exp7"}),
        ("cancel sweep 5", "cancel_sweep", {"sweep_id": 5}),
        ("取消扫参3", "cancel_sweep", {"sweep_id": 3}),
        ("cancel all tasks of sweep 4", "cancel_sweep", {"sweep_id": 4}),
        ("取消扫参4的所有任务", "cancel_sweep", {"sweep_id": 4}),
        ("make sweep 5 low priority", "change_sweep", {"sweep_id": 5, "priority": "low"}),
        ("make sweep 4 high priority", "change_sweep", {"sweep_id": 4, "priority": "high"}),
        ("把扫参 4 的优先级改成高", "change_sweep", {"sweep_id": 4, "priority": "high"}),
        ("run sweep 3 tonight", "change_sweep", {"sweep_id": 3, "offpeak": True}),
        ("start sweep 2 now", "change_sweep", {"sweep_id": 2, "start_now": True}),
        ("hold sweep 5", "hold_sweep", {"sweep_id": 5}),
        ("暂停扫参 3", "hold_sweep", {"sweep_id": 3}),
        ("release sweep 5", "release_sweep", {"sweep_id": 5}),
        ("取消暂停扫参3", "release_sweep", {"sweep_id": 3}),
        ("放行扫参3", "release_sweep", {"sweep_id": 3}),
    ],
)
def test_a_sweep_named_by_its_id_is_no_task_of_that_id(text: str, tool: str, args: dict[str, object]) -> None:
    from assistant.parsing.intents import understand

    reading = understand(text, NOW)

    assert (reading.kind, reading.tool, reading.args) == ("tool", tool, args)


@pytest.mark.parametrize(
    ("text", "kind", "reason"),
    [
        ("cancel my sweep", "question", "need_sweep_id"),
        ("取消扫参", "question", "need_sweep_id"),
        ("move sweep 4 to 4 GPUs", "help", "change_fixed"),
        ("cancel all of team nlp's sweep 3", "refusal", "cross_team"),
        ("取消nlp组的扫参3", "refusal", "cross_team"),
        ("kill everyone's sweep 3", "refusal", "cross_team"),
    ],
)
def test_a_sweep_without_its_number_is_asked_for_and_another_teams_is_refused(
    text: str, kind: str, reason: str
) -> None:
    from assistant.parsing.intents import understand

    reading = understand(text, NOW)

    assert (reading.kind, reading.tool, reading.reason) == (kind, None, reason)


@pytest.mark.parametrize(
    "text", ["how is my sweep doing?", "status of my sweep", "我的扫参怎么样了", "扫参进展如何"]
)
def test_how_a_sweep_is_doing_without_its_number_asks_about_the_latest(text: str) -> None:
    from assistant.parsing.intents import understand

    reading = understand(text, NOW)

    assert (reading.kind, reading.tool, reading.args) == ("tool", "sweep_status", {})


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ("run `python x.py` on node vm", "submit_task", {"command": "python x.py", "node": "vm"}),
        (
            "在 gpu-box-2 节点上跑 `python x.py`",
            "submit_task",
            {"command": "python x.py", "node": "gpu-box-2"},
        ),
        ("show task 30", "explain_task", {"task_id": 30}),
        ("看一下任务30", "explain_task", {"task_id": 30}),
        ("who is using the GPUs?", "cluster_status", {}),
        ("what's in the queue?", "queue_position", {}),
        ("gpu usage today", "utilization_report", {"days": 1}),  # a span of time: a report
        ("cancle job 17", "cancel_task", {"task_id": 17}),
        ("88号不用跑了", "cancel_task", {"task_id": 88}),
        ("who's been hogging the GPUs this week?", "utilization_report", {"days": 7, "by": "user"}),
        ("top users this month", "utilization_report", {"days": 30, "by": "user"}),
        ("how many gpus does my team have", "quota_status", {}),
        ("how much memory is free on box-1", "cluster_status", {}),
        ("哪台机器显存最多", "cluster_status", {}),
        ("what's my gpu limit", "quota_status", {}),
        ("how much did team nlp use last week", "utilization_report", {"days": 7, "by": "team"}),
        ("how much has the nlp team spent", "utilization_report", {"days": 7, "by": "team"}),
        ("how much did my team use this week", "utilization_report", {"days": 7}),  # one's own: no split
        ("any gpus free today?", "cluster_status", {}),  # the GPUs now
    ],
)
def test_a_pinned_node_a_task_to_show_and_questions_about_the_queue(
    text: str, tool: str, args: dict[str, object]
) -> None:
    from assistant.parsing.intents import understand

    reading = understand(text, NOW)

    assert (reading.tool, {k: v for k, v in reading.args.items() if v is not None}) == (tool, args)


def test_a_request_with_several_commands_asks_for_them_one_at_a_time_instead_of_dropping_some() -> None:
    from assistant.parsing.intents import understand
    from assistant.replies import canned

    several = understand("run `python a.py` and `python b.py` on 1 GPU each", NOW)
    one = understand("run `python a.py` on 1 GPU", NOW)

    assert (several.kind, several.reason) == ("question", "one_command")
    assert one.tool == "submit_task" and one.args["command"] == "python a.py"
    assert "send the commands one at a time" in canned("question", "one_command", "en")


@pytest.mark.parametrize(
    "text",
    [
        "run python train.py tomorrow at 3pm and cancel task 2",
        "run `python eval.py` and kill 3",
        "cancel task 2 and run python x.py",
        "run `python a.py` then release #7",
        "rerun 12 and cancel 13",
        "明天下午3点跑 train.py，然后取消任务2",
        "跑 train.py，再把2号暂停",
    ],
)
def test_a_task_to_run_and_another_to_cancel_hold_or_release_asks_for_one_at_a_time(text: str) -> None:
    from assistant.replies import canned

    reading = understand(text, NOW)

    assert (reading.kind, reading.reason) == ("question", "one_request")
    assert "one at a time" in canned("question", "one_request", "en")
    assert "一条一条" in canned("question", "one_request", "zh")


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("run python train.py and kill it after 4 hours", {"time_limit_minutes": 240}),
        (
            "run python train.py after task 2 and stop it after 3 hours",
            {"depends_on": [2], "time_limit_minutes": 180},
        ),
        ("run python clean.py to remove 3 files", {}),
    ],
)
def test_a_stop_word_about_the_new_task_itself_is_no_second_request(
    text: str, args: dict[str, object]
) -> None:
    reading = understand(text, NOW)

    assert reading.tool == "submit_task"
    assert {k: v for k, v in reading.args.items() if k != "command"} == args


@pytest.mark.parametrize(
    ("text", "gpus"),
    [
        ("用 H100 跑，两张", 2),
        ("四块。", 4),
        ("两张卡", 2),
        ("画两张图片", None),  # a count of something else
        ("第2张", None),
        ("第二张。", None),
        ("1.5张", None),
    ],
)
def test_a_bare_count_of_cards_ending_a_clause_is_the_gpu_count(text: str, gpus: int | None) -> None:
    from assistant.parsing.fields import read_fields

    assert read_fields(text)[0].values.get("gpus") == gpus


# --- explicit dates, and what the offline model used to drop silently --------------------------------

DEC_2 = datetime.fromisoformat("2026-12-02T15:00:00+08:00")


@pytest.mark.parametrize(
    ("text", "not_before"),
    [
        ("run python a.py after 2026-12-05T09:00", "2026-12-05T09:00:00+08:00"),
        ("run python a.py after 2026-12-05T09:00+00:00", "2026-12-05T17:00:00+08:00"),
        ("run python a.py on December 5 at 9am", "2026-12-05T09:00:00+08:00"),
        ("run python a.py at 9am on Dec 5", "2026-12-05T09:00:00+08:00"),
        ("run python a.py on Dec 5", "2026-12-05T08:00:00+08:00"),  # a day alone: 08:00, as "tomorrow"
        ("run python a.py on 5 January", "2027-01-05T08:00:00+08:00"),  # passed this year: next year's
        ("2026-12-05 09:00 之后跑 python a.py", "2026-12-05T09:00:00+08:00"),
        ("12月5日早上9点跑 python a.py", "2026-12-05T09:00:00+08:00"),
        ("5号下午3点跑 python a.py", "2026-12-05T15:00:00+08:00"),
    ],
)
def test_an_explicit_date_is_honoured_and_no_number_of_it_is_a_task(text, not_before):
    reading = understand(text, DEC_2)

    assert reading.tool == "submit_task" and reading.args["not_before"] == not_before
    assert "depends_on" not in reading.args


def test_a_task_numbered_like_a_day_still_is_a_parent():
    assert understand("42号跑完之后跑 python eval.py", DEC_2).args == {
        "command": "python eval.py",
        "depends_on": [42],
    }


@pytest.mark.parametrize(
    ("text", "deadline"),
    [
        ("run python a.py by yesterday", "2026-12-01T23:59:00+08:00"),
        ("昨天之前跑完 python a.py", "2026-12-01T23:59:00+08:00"),
        ("run python a.py by December 5", "2026-12-05T23:59:00+08:00"),
    ],
)
def test_a_deadline_day_is_kept_even_when_it_has_passed(text, deadline):
    assert understand(text, DEC_2).args.get("deadline") == deadline


@pytest.mark.parametrize(
    ("text", "field", "value"),
    [
        ("用 -1 张卡跑 python a.py", "gpus", -1),  # kept, so the spec's check says why not
        ("run python a.py on -2 GPUs", "gpus", -2),
        ("在 gpu-box-9 上跑 python a.py", "node", "gpu-box-9"),
        ("优先级最高，跑 python a.py", "priority", "urgent"),
        ("run python a.py with highest priority", "priority", "urgent"),
        ("跑 python a.py 时间限制 0 分钟", "time_limit_minutes", 0),
    ],
)
def test_what_a_request_asks_for_is_not_dropped(text, field, value):
    assert understand(text, DEC_2).args.get(field) == value


def test_a_gpu_model_is_no_node():
    args = understand("在 A100 上跑 python a.py", DEC_2).args
    assert "node" not in args and args.get("gpu_model") == "A100"


# --- days of the week, and two dates in one request (each used to be dropped or misread) -------------

THU_DEC_3 = datetime.fromisoformat("2026-12-03T07:40:00+08:00")  # a Thursday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("run python a.py on friday", {"not_before": "2026-12-04T08:00:00+08:00"}),
        ("run python a.py saturday at 10pm", {"not_before": "2026-12-05T22:00:00+08:00"}),
        ("run python a.py thursday 3pm", {"not_before": "2026-12-03T15:00:00+08:00"}),  # today's own
        ("run python a.py next thursday 3pm", {"not_before": "2026-12-10T15:00:00+08:00"}),
        ("run python a.py next monday", {"not_before": "2026-12-07T08:00:00+08:00"}),
        ("finish python a.py by friday", {"deadline": "2026-12-04T23:59:00+08:00"}),
        ("周六晚上跑 python a.py", {"not_before": "2026-12-05T18:00:00+08:00", "offpeak": True}),
        ("下周一早上9点跑 python a.py", {"not_before": "2026-12-07T09:00:00+08:00"}),
        ("这周日跑 python a.py", {"not_before": "2026-12-06T08:00:00+08:00"}),
        ("星期五下午3点跑 python a.py", {"not_before": "2026-12-04T15:00:00+08:00"}),
        (
            "run python a.py on friday after 9am, finish by saturday 8am",
            {"not_before": "2026-12-04T09:00:00+08:00", "deadline": "2026-12-05T08:00:00+08:00"},
        ),
        (
            "run python a.py after 2026-12-05 09:00, deadline 2026-12-06 08:00",
            {"not_before": "2026-12-05T09:00:00+08:00", "deadline": "2026-12-06T08:00:00+08:00"},
        ),
        (
            "run python a.py starting Dec 5, must be done by Dec 7",
            {"not_before": "2026-12-05T08:00:00+08:00", "deadline": "2026-12-07T23:59:00+08:00"},
        ),
        (
            "12月5日以后跑 python a.py，12月6日之前跑完",
            {"not_before": "2026-12-05T08:00:00+08:00", "deadline": "2026-12-06T23:59:00+08:00"},
        ),
    ],
)
def test_a_day_of_the_week_and_a_second_date_are_read_not_dropped(text, expected):
    args = understand(text, THU_DEC_3).args

    assert args.get("command") == "python a.py"  # no weekday glued to the command
    assert {key: args.get(key) for key in expected} == expected
    assert not ({"not_before", "deadline", "offpeak"} & args.keys()) - expected.keys()  # nor a wrong one


@pytest.mark.parametrize(
    ("text", "node"),
    [
        ("run python a.py on gpu-box-9", "gpu-box-9"),  # was dropped: no word "node"
        ("run python a.py on dgx-01 with 2 GPUs tonight", "dgx-01"),
        ("run python a.py on node3", "node3"),
        ("run python a.py on a100-node-2", "a100-node-2"),
        ("run python a.py on cifar-10", None),  # a data set, a model, a GPU index: no node
        ("run python a.py on resnet-50", None),
        ("run python a.py on gpu0", None),
        ("run python a.py on A100", None),
    ],
)
def test_a_host_name_after_on_pins_the_node_without_the_word_node(text, node):
    assert understand(text, THU_DEC_3).args.get("node") == node


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        # was task 9; the node is where it would run
        ("how long would 2 GPUs wait on gpu-box-9?", "estimate_wait", {"gpus": 2, "node": "gpu-box-9"}),
        ("why is job-12 stuck?", "explain_task", {"task_id": 12}),
    ],
)
def test_the_number_of_a_host_name_is_no_task_id(text, tool, args):
    reading = understand(text, THU_DEC_3)

    assert (reading.tool, reading.args) == (tool, args)


@pytest.mark.parametrize(
    ("text", "not_before", "deadline"),
    [
        # was: start today 09:00, the end dropped ("between 9am" even glued to the command)
        (
            "run python a.py between 9am and 5pm tomorrow",
            "2026-12-04T09:00:00+08:00",
            "2026-12-04T17:00:00+08:00",
        ),
        (
            "run python a.py tomorrow between 9am and 5pm",
            "2026-12-04T09:00:00+08:00",
            "2026-12-04T17:00:00+08:00",
        ),
        ("run python a.py from 10pm to 6am", "2026-12-03T22:00:00+08:00", "2026-12-04T06:00:00+08:00"),
        ("明天9点到17点之间跑 python a.py", "2026-12-04T09:00:00+08:00", "2026-12-04T17:00:00+08:00"),
        # was: "9am-5pm" (and "9am - 5pm" right after the command) taken into the command
        ("run python a.py 9am-5pm tomorrow", "2026-12-04T09:00:00+08:00", "2026-12-04T17:00:00+08:00"),
        ("run python a.py 9am - 5pm tomorrow", "2026-12-04T09:00:00+08:00", "2026-12-04T17:00:00+08:00"),
        ("run python a.py 10pm-6am", "2026-12-03T22:00:00+08:00", "2026-12-04T06:00:00+08:00"),
        ("run python a.py 9:00-17:00 tomorrow", "2026-12-04T09:00:00+08:00", "2026-12-04T17:00:00+08:00"),
        # was: no deadline, and a start at 09:00 only by luck ("5pm跑": Chinese right after am/pm)
        ("明天9am-5pm跑 python a.py", "2026-12-04T09:00:00+08:00", "2026-12-04T17:00:00+08:00"),
        ("明天9am到5pm跑 python a.py", "2026-12-04T09:00:00+08:00", "2026-12-04T17:00:00+08:00"),
        ("今晚10pm-6am跑 python a.py", "2026-12-03T22:00:00+08:00", "2026-12-04T06:00:00+08:00"),
    ],
)
def test_a_span_of_time_is_a_start_and_a_deadline_on_one_day(text, not_before, deadline):
    args = understand(text, THU_DEC_3).args

    assert (args.get("command"), args.get("not_before"), args.get("deadline")) == (
        "python a.py",
        not_before,
        deadline,
    )


@pytest.mark.parametrize(
    "text",
    [
        # was: queue_position (the "where is" of a place in the queue)
        "where is the output of #12?",
        "where are the logs of task 12?",
        "where is 12's output?",
        # was: the logs pointer without the task (a number ending the sentence was read as a decimal)
        "Show me the output of 12.",
        "show me the output of 12",
    ],
)
def test_where_a_tasks_output_is_is_the_logs_answer_for_that_task(text):
    reading = understand(text, NOW)

    assert (reading.kind, reading.reason, reading.args) == ("help", "logs", {"task_id": 12})


def test_where_a_task_is_in_the_queue_is_still_its_position():
    assert understand("where is task 12?", NOW).tool == "queue_position"
    assert understand("where is my job in the queue?", NOW).args == {}


@pytest.mark.parametrize(
    ("text", "field", "moment"),
    [
        # was: tomorrow 08:00 (the morning's default: "9am跑" was no clock)
        ("明天9am跑 python a.py", "not_before", "2026-12-04T09:00:00+08:00"),
        ("明天9:30pm跑 python a.py", "not_before", "2026-12-04T21:30:00+08:00"),
        # was: no deadline
        ("明天8am前跑完 python a.py", "deadline", "2026-12-04T08:00:00+08:00"),
    ],
)
def test_am_and_pm_are_read_with_chinese_right_after_them(text, field, moment):
    assert understand(text, THU_DEC_3).args.get(field) == moment
