"""A task named as one's latest ("cancel my last job", "rerun my last cancelled run", "我最后一个任务为什么失败
了"): the chat first lists the person's own tasks (newest first, of the status said), then asks about the
newest of them, as it would about "task 12"; a teammate's newer task is never taken for it."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from assistant.agent import Assistant
from assistant.offline import OfflineChatModel
from assistant.parsing.intents import understand
from tests.assistant.conftest import NOW

LATER = "2030-01-01T09:00:00+00:00"

pytestmark = pytest.mark.usefixtures("four_gpu_node")


@pytest.mark.parametrize(
    ("text", "first", "then"),
    [
        ("cancel my last job", {"mine": True}, ("cancel_task", {"task_id": 0})),
        ("cancel the job I just submitted", {"mine": True}, ("cancel_task", {"task_id": 0})),
        ("rerun the last failed job", {"mine": True, "status": "failed"}, ("submit_task", {"like_task": 0})),
        ("why did my last job fail", {"mine": True}, ("explain_task", {"task_id": 0})),
        (
            "change my last job to high priority",
            {"mine": True},
            ("change_task", {"task_id": 0, "priority": "high"}),
        ),
        ("帮我取消最后一个任务", {"mine": True}, ("cancel_task", {"task_id": 0})),
        ("重跑我最近失败的任务", {"mine": True, "status": "failed"}, ("submit_task", {"like_task": 0})),
        ("刚提交的任务排第几", {"mine": True}, ("queue_position", {"task_id": 0})),
    ],
)
def test_the_latest_task_is_found_by_a_list_of_ones_own_then_asked_about(text, first, then):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == ("list_tasks", first)
    assert reading.then is not None and (reading.then.tool, reading.then.args) == then


@pytest.mark.parametrize("text", ["what did I run last week", "my last three jobs", "show my tasks"])
def test_a_list_of_tasks_is_no_request_about_the_latest_one(text):
    assert understand(text, NOW).then is None


def _queued(assistant, name: str) -> int:
    spec = {"command": f"python {name}.py", "gpus": 1, "not_before": LATER}
    return int(assistant.client.submit(spec)["id"])


def test_cancel_my_last_job_makes_a_card_for_ones_own_newest_task_not_a_teammates(make_assistant):
    alice = make_assistant("alice", "vision")
    _queued(alice, "older")
    newest = _queued(alice, "newest")
    _queued(make_assistant("bob", "vision"), "bobs")  # newer, of the same team

    turn = alice.ask("cancel my last job")

    assert [call["name"] for call in turn.tool_calls] == ["list_tasks", "cancel_task"]
    assert turn.tool_calls[1]["args"] == {"task_id": newest}
    [card] = turn.cards
    assert card["kind"] == "cancel" and card["task_id"] == newest
    assert f"#{newest}" in turn.reply and "bobs" not in turn.reply


def test_the_answer_about_the_latest_task_is_about_it_alone(make_assistant):
    assistant = make_assistant()
    newest = [_queued(assistant, name) for name in ("a", "b")][-1]

    english = assistant.ask("what's the status of my last job")
    chinese = assistant.ask("我刚才提交的作业在跑吗")
    logs = assistant.ask("show me the log of my last job")

    assert english.reply.startswith(f"Task #{newest} is queued") and "#1 " not in english.reply
    assert chinese.reply.startswith(f"任务 #{newest} 在排队")
    assert f"nightshift logs {newest}" in logs.reply


def test_rerun_my_last_cancelled_job_runs_that_one_again(make_assistant):
    assistant = make_assistant()
    cancelled = _queued(assistant, "cancelled")
    assistant.client.cancel(cancelled)
    _queued(assistant, "still_queued")

    turn = assistant.ask("rerun my last cancelled job")

    assert turn.tool_calls[0] == {"name": "list_tasks", "args": {"mine": True, "status": "cancelled"}}
    assert turn.tool_calls[1] == {"name": "submit_task", "args": {"like_task": cancelled}}
    assert turn.cards[0]["spec"]["command"] == "python cancelled.py"


def test_no_such_task_yet_is_said_without_a_second_call(make_assistant):
    assistant = make_assistant()
    _queued(assistant, "queued")

    english = assistant.ask("why did my last failed job fail")
    chinese = assistant.ask("重跑我最近失败的任务")

    assert [call["name"] for call in english.tool_calls] == ["list_tasks"]
    assert english.reply == "You have no such task yet: `nightshift ls` lists your team's tasks."
    assert chinese.reply.startswith("你还没有这样的任务")


def test_a_list_that_failed_is_said_as_its_error_not_as_no_such_task():
    model = OfflineChatModel(now=NOW)
    asked = model.respond([HumanMessage("cancel my last job")])
    failed = ToolMessage(
        json.dumps({"ok": False, "error": "the API is not answering"}),
        tool_call_id=asked.tool_calls[0]["id"],
        name="list_tasks",
    )

    reply = model.respond([HumanMessage("cancel my last job"), asked, failed])

    assert asked.tool_calls[0]["name"] == "list_tasks" and reply.tool_calls == []
    assert "the API is not answering" in str(reply.content) and "no such task" not in str(reply.content)
    assert asked.response_metadata["nightshift"]["then"]["tool"] == "cancel_task"  # left as it was


@pytest.mark.parametrize(
    ("text", "then"),
    [
        ("cancel my last sweep", ("cancel_sweep", {"sweep_id": 0})),
        ("hold my latest sweep", ("hold_sweep", {"sweep_id": 0})),
        ("make my last sweep urgent", ("change_sweep", {"sweep_id": 0, "priority": "urgent"})),
        ("取消我最近的扫参", ("cancel_sweep", {"sweep_id": 0})),
    ],
)
def test_an_act_on_the_latest_sweep_finds_it_first(text, then):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == ("sweep_status", {})
    assert reading.then is not None and (reading.then.tool, reading.then.args) == then


@pytest.mark.parametrize("text", ["how is my last sweep doing", "show me the results of my last sweep"])
def test_a_question_about_the_latest_sweep_is_one_call(text):
    reading = understand(text, NOW)

    assert reading.then is None and reading.tool in ("sweep_status", "compare_results")


def test_cancel_my_last_sweep_makes_a_card_for_my_own_latest_sweep(make_assistant):
    mine = make_assistant()
    spec = {"command": "python train.py --lr {lr}", "gpus": 1, "not_before": LATER, "sweep": {"lr": [1, 2]}}
    mine.client.submit_sweep({**spec, "name": "older"})
    latest = mine.client.submit_sweep({**spec, "name": "latest"})["id"]
    make_assistant("bob", "vision").client.submit_sweep({**spec, "name": "bobs"})

    turn = mine.ask("cancel my last sweep")

    assert [call["name"] for call in turn.tool_calls] == ["sweep_status", "cancel_sweep"]
    assert turn.tool_calls[1]["args"] == {"sweep_id": latest}
    assert turn.cards and turn.cards[0]["sweep_id"] == latest


def test_my_last_job_is_the_tokens_own_whatever_name_the_chat_was_given(
    cluster, make_client, make_identity, make_assistant
):
    bobs = _queued(make_assistant("bob", "vision"), "bobs")
    _, token = make_identity("alice", "vision")
    client = make_client(token)
    alices = int(client.submit({"command": "python a.py", "gpus": 1, "not_before": LATER})["id"])
    # `nightshift ask --user bob` only gives the reply a name: the token says whose tasks are "mine"
    assistant = Assistant(cluster.settings, client, now=lambda: NOW, user="bob", team="vision")

    turn = assistant.ask("cancel my last job")

    assert turn.tool_calls[1] == {"name": "cancel_task", "args": {"task_id": alices}} and alices != bobs
