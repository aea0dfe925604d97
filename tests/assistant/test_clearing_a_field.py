"""Taking a limit or a time away from a queued task or a sweep ("drop the time limit of task 5", "取消扫参3的
时间限制"): a change card that puts the field back to its default, never a cancel; the tools' `clear`."""

from __future__ import annotations

from datetime import datetime

import pytest
from langchain_core.messages import AIMessage

from assistant.parsing.clears import cleared_fields
from assistant.parsing.intents import follow_up_to_card, understand
from tests.assistant.conftest import ScriptedChatModel, tool_call, tool_result

NOW = datetime.fromisoformat("2026-03-02T15:00:00+08:00")
LATER = "2030-01-01T09:00:00+00:00"


pytestmark = pytest.mark.usefixtures("four_gpu_node")


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ("drop the time limit of task 5", "change_task", {"task_id": 5, "clear": ["time_limit_minutes"]}),
        ("cancel the time limit of task 5", "change_task", {"task_id": 5, "clear": ["time_limit_minutes"]}),
        ("task 5 no time limit", "change_task", {"task_id": 5, "clear": ["time_limit_minutes"]}),
        ("take the time limit off task 5", "change_task", {"task_id": 5, "clear": ["time_limit_minutes"]}),
        (
            "set the time limit of task 5 to none",
            "change_task",
            {"task_id": 5, "clear": ["time_limit_minutes"]},
        ),
        ("remove the deadline of #5", "change_task", {"task_id": 5, "clear": ["deadline"]}),
        ("get rid of the not-before time of job 7", "change_task", {"task_id": 7, "clear": ["not_before"]}),
        ("drop the estimate of task 5", "change_task", {"task_id": 5, "clear": ["estimated_minutes"]}),
        ("task 5 without retries", "change_task", {"task_id": 5, "clear": ["retries"]}),
        (
            "remove task 5's deadline and make it urgent",
            "change_task",
            {"task_id": 5, "clear": ["deadline"], "priority": "urgent"},
        ),
        ("取消5号的时间限制", "change_task", {"task_id": 5, "clear": ["time_limit_minutes"]}),
        ("把5号的截止时间去掉", "change_task", {"task_id": 5, "clear": ["deadline"]}),
        ("5号不要时间限制", "change_task", {"task_id": 5, "clear": ["time_limit_minutes"]}),
        ("5号不限时", "change_task", {"task_id": 5, "clear": ["time_limit_minutes"]}),
        (
            "remove the time limit of sweep 3",
            "change_sweep",
            {"sweep_id": 3, "clear": ["time_limit_minutes"]},
        ),
        ("sweep 3 no time limit", "change_sweep", {"sweep_id": 3, "clear": ["time_limit_minutes"]}),
        ("取消扫参3的时间限制", "change_sweep", {"sweep_id": 3, "clear": ["time_limit_minutes"]}),
        ("扫参3的截止时间不要了", "change_sweep", {"sweep_id": 3, "clear": ["deadline"]}),
        (
            "remove the time limit of sweep 3, 2 at a time",
            "change_sweep",
            {"sweep_id": 3, "clear": ["time_limit_minutes"], "max_running": 2},
        ),
        # what was a cancel stays one, and the sweep's own limit on how many run at once is lifted as before
        ("cancel task 5", "cancel_task", {"task_id": 5}),
        ("取消5号", "cancel_task", {"task_id": 5}),
        ("cancel sweep 3", "cancel_sweep", {"sweep_id": 3}),
        ("remove the limit on sweep 3", "change_sweep", {"sweep_id": 3, "lift_max_running": True}),
        ("取消扫参3的并发限制", "change_sweep", {"sweep_id": 3, "lift_max_running": True}),
        ("why does task 5 have no time limit?", "explain_task", {"task_id": 5}),
    ],
)
def test_taking_a_limit_away_is_a_change_that_clears_it_never_a_cancel(text, tool, args):
    reading = understand(text, NOW)

    assert (reading.kind, reading.tool, reading.args) == ("tool", tool, args)


def test_taking_a_limit_away_without_a_task_number_asks_which_task():
    assert (understand("drop the time limit", NOW).kind, understand("去掉时间限制", NOW).reason) == (
        "question",
        "need_task_id",
    )


def test_the_words_taken_away_are_blanked_for_the_rest_of_the_request():
    cleared = cleared_fields("remove the deadline and the time limit of task 5, then make it urgent")

    assert cleared.fields == ["deadline"]  # "and the time limit": no verb of its own
    assert "deadline" not in cleared.rest and "make it urgent" in cleared.rest
    assert cleared_fields("drop the deadline, no time limit").fields == ["time_limit_minutes", "deadline"]


def test_no_time_limit_right_after_a_card_takes_it_off_the_card():
    edit = follow_up_to_card("actually no time limit", NOW)

    assert edit is not None and (edit.kind, edit.args) == ("edit", {"time_limit_minutes": None})


def _queued(assistant, **spec) -> int:
    """A queued task of the person's (it may start only in 2030: it stays queued)."""
    task = assistant.client.submit({"command": "python train.py", "gpus": 1, "not_before": LATER, **spec})
    return int(task["id"])


def test_dropping_a_tasks_time_limit_is_a_card_that_resets_it_once_confirmed(make_assistant, cluster):
    assistant = make_assistant()
    tid = _queued(assistant, time_limit_minutes=120)

    turn = assistant.ask(f"drop the time limit of task {tid}")

    assert turn.tool_calls == [
        {"name": "change_task", "args": {"task_id": tid, "clear": ["time_limit_minutes"]}}
    ]
    [card] = turn.cards
    assert card["kind"] == "change" and card["changes"] == {"time_limit_minutes": [120, None]}
    assert "• time limit (min): 120 → none" in turn.reply and "please confirm" in turn.reply
    assert cluster.tasks.get_any(tid).spec["time_limit_minutes"] == 120  # nothing happened yet

    result = assistant.confirm(card["action_id"])

    assert result["ok"] and result["message"] == f"Changed task #{tid} (time_limit_minutes): queued."
    task = cluster.tasks.get_any(tid)
    assert (task.status, task.spec.get("time_limit_minutes")) == ("queued", None)


def test_a_chinese_request_to_remove_a_deadline_gets_a_chinese_change_card(make_assistant, cluster):
    assistant = make_assistant()
    tid = _queued(assistant, deadline="2030-01-02T09:00:00+00:00")

    turn = assistant.ask(f"取消{tid}号的截止时间")

    [card] = turn.cards
    assert card["kind"] == "change" and card["changes"] == {"deadline": ["2030-01-02T09:00:00+00:00", None]}
    assert turn.reply.startswith(f"修改任务 #{tid}") and "• 截止时间: 01-02 09:00 → 无\n" in turn.reply
    assert assistant.confirm(card["action_id"])["ok"]
    task = cluster.tasks.get_any(tid)
    assert (task.status, task.spec.get("deadline")) == ("queued", None)


def test_a_field_already_at_its_default_gets_no_card(make_assistant):
    assistant = make_assistant()
    tid = _queued(assistant)

    english = assistant.ask(f"remove the time limit of task {tid}")
    chinese = assistant.ask(f"去掉{tid}号的时间限制")

    assert english.cards == [] and chinese.cards == []
    assert english.reply.endswith(f"task {tid} already has time_limit_minutes at its default (none)")
    assert chinese.reply == f"抱歉，没能完成：任务 {tid} 的时间限制（分钟）本来就是默认值（无）"


def _scripted(make_assistant, tool: str, args: dict):
    """An assistant whose model asks for one tool call, then says a word."""
    return make_assistant(model=ScriptedChatModel(messages=iter([tool_call(tool, args), AIMessage("-")])))


def test_clear_names_the_fields_it_takes_when_given_one_it_cannot_put_back(make_assistant):
    tid = _queued(make_assistant(), time_limit_minutes=60)
    assistant = _scripted(make_assistant, "change_task", {"task_id": tid, "clear": ["gpus", "deadline"]})

    turn = assistant.ask(f"task {tid} on its default GPUs")

    assert turn.cards == [] and assistant.actions.pending() == []
    message = (
        "cannot clear gpus: clear takes priority, not_before, offpeak, deadline, time_limit_minutes, "
        "estimated_minutes, retries, depends_on, depends_on_any"
    )
    assert tool_result(assistant.history, "change_task") == {
        "ok": False,
        "error": message,
        "errors": [{"field": "gpus", "message": message}],
    }


def test_a_field_both_cleared_and_given_a_value_gets_no_card(make_assistant, cluster):
    tid = _queued(make_assistant(), time_limit_minutes=60)
    args = {"task_id": tid, "time_limit_minutes": 90, "clear": ["time_limit_minutes"]}
    assistant = _scripted(make_assistant, "change_task", args)

    turn = assistant.ask(f"task {tid}: 90 minutes, no time limit")

    assert turn.cards == []
    assert tool_result(assistant.history, "change_task")["error"] == (
        "time_limit_minutes: 90.0, or back to its default: not both"
    )
    assert cluster.tasks.get_any(tid).spec["time_limit_minutes"] == 60


def test_a_model_may_clear_several_fields_and_set_others_in_one_card(make_assistant, cluster):
    tid = _queued(make_assistant(), time_limit_minutes=60, retries=2, estimated_minutes=30)
    args = {"task_id": tid, "clear": ["retries", "estimated_minutes"], "priority": "high"}
    assistant = _scripted(make_assistant, "change_task", args)

    [card] = assistant.ask(f"no retries and no estimate for {tid}, high priority").cards

    assert card["changes"] == {
        "priority": ["normal", "high"],
        "retries": [2, 0],
        "estimated_minutes": [30, None],
    }
    assert assistant.confirm(card["action_id"])["ok"]
    spec = cluster.tasks.get_any(tid).spec
    assert (spec["priority"], spec.get("retries", 0), spec.get("estimated_minutes")) == ("high", 0, None)
    assert spec["time_limit_minutes"] == 60  # what was not named stays


def _sweep(assistant, **spec) -> tuple[int, list[int]]:
    """A 3-task sweep of the person's, each with `spec`: its id and its task ids."""
    body = {
        "command": "python train.py --lr {lr}",
        "gpus": 1,
        "not_before": LATER,
        "sweep": {"lr": [0.1, 0.2, 0.3]},
    }
    sweep = assistant.client.submit_sweep({**body, **spec})
    return sweep["id"], [task["id"] for task in sweep["tasks"]]


@pytest.mark.parametrize("ask", ["remove the time limit of sweep {}", "取消扫参{}的时间限制"])
def test_removing_a_sweeps_time_limit_is_a_change_card_for_its_queued_tasks_not_a_cancel(
    make_assistant, cluster, ask
):
    assistant = make_assistant()
    sweep_id, ids = _sweep(assistant, time_limit_minutes=45)

    turn = assistant.ask(ask.format(sweep_id))

    assert turn.tool_calls == [
        {"name": "change_sweep", "args": {"sweep_id": sweep_id, "clear": ["time_limit_minutes"]}}
    ]
    [card] = turn.cards
    assert card["kind"] == "change_sweep" and card["changes"] == {"time_limit_minutes": [45, None]}
    assert "45 → none" in turn.reply or "45 → 无" in turn.reply
    assert all(cluster.tasks.get_any(tid).spec["time_limit_minutes"] == 45 for tid in ids)

    assert assistant.confirm(card["action_id"])["ok"]

    tasks = [cluster.tasks.get_any(tid) for tid in ids]
    assert [(task.status, task.spec.get("time_limit_minutes")) for task in tasks] == [("queued", None)] * 3


def test_a_sweep_may_clear_its_limit_on_how_many_run_at_once_but_not_its_tasks_names(make_assistant, cluster):
    sweep_id, _ = _sweep(make_assistant(), max_running=2)
    lifted = _scripted(make_assistant, "change_sweep", {"sweep_id": sweep_id, "clear": ["max_running"]})
    named = _scripted(make_assistant, "change_sweep", {"sweep_id": sweep_id, "clear": ["name"]})

    [card] = lifted.ask(f"no limit on sweep {sweep_id}").cards
    refused = named.ask(f"sweep {sweep_id} without names")

    assert card["changes"] == {"max_running": [2, None]}
    assert refused.cards == [] and tool_result(named.history, "change_sweep")["error"].startswith(
        "cannot clear name: clear takes priority, not_before, offpeak, deadline, time_limit_minutes, "
        "estimated_minutes, retries, depends_on, depends_on_any, max_running"
    )


def test_no_time_limit_after_a_submit_card_makes_a_card_without_one(make_assistant, cluster):
    assistant = make_assistant()

    first = assistant.ask("run `python train.py` with a 2 hour time limit")
    second = assistant.ask("actually, no time limit")

    assert first.cards[0]["spec"]["time_limit_minutes"] == 120
    [card] = second.cards
    assert card["kind"] == "submit" and card["spec"].get("time_limit_minutes") is None
    assert [action.action_id for action in assistant.actions.pending()] == [card["action_id"]]
    assert cluster.tasks.count_by_status() == {}


def test_a_rerun_may_clear_a_field_of_the_earlier_task_but_a_new_task_has_nothing_to_clear(make_assistant):
    tid = _queued(make_assistant(), time_limit_minutes=60)
    new_task = _scripted(make_assistant, "submit_task", {"command": "true", "clear": ["time_limit_minutes"]})
    both = _scripted(
        make_assistant,
        "submit_task",
        {"like_task": tid, "clear": ["time_limit_minutes"], "time_limit_minutes": 30},
    )
    fixed = _scripted(make_assistant, "submit_task", {"like_task": tid, "clear": ["gpus"]})

    new_task.ask("run true")
    both.ask(f"rerun {tid}")
    fixed.ask(f"rerun {tid}")

    assert tool_result(new_task.history, "submit_task")["error"].startswith(
        "clear leaves fields of an earlier task out when it runs again (with like_task)"
    )
    assert tool_result(both.history, "submit_task")["error"] == (
        "time_limit_minutes: 30.0, or back to its default: not both"
    )
    assert tool_result(fixed.history, "submit_task")["error"].startswith("cannot clear gpus")
    for assistant in (new_task, both, fixed):
        assert assistant.actions.pending() == []
