"""Changing which tasks a queued task waits for in the chat ("make 12 wait for 13", "12 no longer needs to
wait for 13", "让12号等13号跑完再跑"): a change card, checked before it is shown (a missing or failed parent,
a loop), that changes the task once confirmed; "start 12 after 13" asks whether 13 is a task or an hour."""

from __future__ import annotations

from datetime import datetime

import pytest
from langchain_core.messages import AIMessage

from assistant.parsing.intents import understand
from tests.assistant.conftest import ScriptedChatModel, tool_call, tool_result

NOW = datetime.fromisoformat("2026-03-02T15:00:00+08:00")
LATER = "2030-01-01T09:00:00+00:00"

pytestmark = pytest.mark.usefixtures("four_gpu_node")


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("make 12 wait for 13", {"task_id": 12, "depends_on": [13]}),
        ("make task 12 wait for task 13 to finish", {"task_id": 12, "depends_on": [13]}),
        ("make 12 start after task 13 finishes", {"task_id": 12, "depends_on": [13]}),
        ("let 12 run after 13 is done", {"task_id": 12, "depends_on": [13]}),
        ("make 12 depend on 13 and 14", {"task_id": 12, "depends_on": [13, 14]}),
        ("make 12 wait for tasks 13, 14 and 15", {"task_id": 12, "depends_on": [13, 14, 15]}),
        ("start 12 after 13 whatever happens", {"task_id": 12, "depends_on_any": [13]}),
        ("make 12 also wait for 14", {"task_id": 12, "also_wait_for": [14]}),
        ("make 12 not wait for 13 anymore", {"task_id": 12, "stop_waiting_for": [13]}),
        ("12 no longer needs to wait for 13", {"task_id": 12, "stop_waiting_for": [13]}),
        ("don't make 12 wait for 13", {"task_id": 12, "stop_waiting_for": [13]}),
        ("remove the dependencies of task 12", {"task_id": 12, "clear": ["depends_on", "depends_on_any"]}),
        ("12 shouldn't wait for anything", {"task_id": 12, "clear": ["depends_on", "depends_on_any"]}),
        ("让12号等13号跑完再开始", {"task_id": 12, "depends_on": [13]}),
        ("把12号改成等13号和14号都跑完再跑", {"task_id": 12, "depends_on": [13, 14]}),
        ("12号改成在13号之后跑", {"task_id": 12, "depends_on": [13]}),
        ("12号还要等14号", {"task_id": 12, "also_wait_for": [14]}),
        ("不用让12号等13号了", {"task_id": 12, "stop_waiting_for": [13]}),
        ("取消12号的依赖", {"task_id": 12, "clear": ["depends_on", "depends_on_any"]}),
    ],
)
def test_a_change_of_what_a_task_waits_for_is_read_as_one(text, args):
    reading = understand(text, NOW)

    assert (reading.kind, reading.tool, reading.args) == ("tool", "change_task", args)


@pytest.mark.parametrize(
    ("text", "tool"),
    [
        ("why is 12 waiting for 13", "explain_task"),
        ("is 12 waiting for 13?", "explain_task"),
        ("run `python train.py` after task 13", "submit_task"),
        ("change 12 to start after 13:00", "change_task"),
    ],
)
def test_a_question_about_a_wait_or_a_new_task_after_one_is_no_change_of_waits(text, tool):
    reading = understand(text, NOW)

    assert reading.tool == tool
    assert not {"stop_waiting_for", "also_wait_for"} & reading.args.keys()
    assert tool == "submit_task" or "depends_on" not in reading.args


def test_start_after_13_asks_task_or_hour_and_the_answer_decides(make_assistant):
    assistant = make_assistant()

    asked = assistant.ask("change 12 to start after 13")
    task = make_assistant().ask("change 12 to start after 13")
    as_task = assistant.ask("the task")
    hour = make_assistant()
    hour.ask("change 12 to start after 13")
    as_hour = hour.ask("after 13:00")

    assert asked.tool_calls == [] and asked.reply == task.reply
    assert asked.reply.startswith("Start it after task 13 ends, or after 13:00?")
    assert as_task.tool_calls == [{"name": "change_task", "args": {"task_id": 12, "depends_on": [13]}}]
    assert [call["name"] for call in as_hour.tool_calls] == ["change_task"]
    assert set(as_hour.tool_calls[0]["args"]) == {"task_id", "not_before"}


def _queued(assistant, **spec) -> int:
    task = assistant.client.submit({"command": "python train.py", "gpus": 1, "not_before": LATER, **spec})
    return int(task["id"])


def test_make_it_wait_for_another_is_a_card_that_changes_the_task_once_confirmed(make_assistant, cluster):
    assistant = make_assistant()
    parent, child = _queued(assistant), _queued(assistant)

    turn = assistant.ask(f"make {child} wait for {parent}")

    [card] = turn.cards
    assert card["kind"] == "change" and card["changes"] == {"depends_on": [[], [parent]]}
    assert f"• waits for (to succeed): none → #{parent}" in turn.reply
    assert cluster.tasks.get_any(child).spec.get("depends_on") in (None, [])
    assert assistant.confirm(card["action_id"])["ok"]
    assert cluster.tasks.get_any(child).spec["depends_on"] == [parent]


def test_one_more_parent_is_added_and_one_taken_away_leaves_the_others(make_assistant, cluster):
    assistant = make_assistant()
    first, second = _queued(assistant), _queued(assistant)
    child = _queued(assistant, depends_on=[first])

    more = assistant.ask(f"make {child} also wait for {second}")
    assert more.cards and assistant.confirm(more.cards[0]["action_id"])["ok"]
    fewer = assistant.ask(f"{child} no longer needs to wait for {first}")

    assert more.cards[0]["changes"] == {"depends_on": [[first], [first, second]]}
    assert fewer.cards[0]["changes"] == {"depends_on": [[first, second], [second]]}
    assert assistant.confirm(fewer.cards[0]["action_id"])["ok"]
    assert cluster.tasks.get_any(child).spec["depends_on"] == [second]


def test_taking_away_a_parent_it_does_not_wait_for_says_what_it_waits_for(make_assistant):
    assistant = make_assistant()
    first, other = _queued(assistant), _queued(assistant)
    child = _queued(assistant, depends_on=[first])

    turn = assistant.ask(f"{child} no longer needs to wait for {other}")

    assert turn.cards == []
    assert tool_result(assistant.history, "change_task")["error"] == (
        f"task {child} does not wait for task {other}: it waits for task {first}"
    )


def test_a_loop_or_a_missing_parent_is_refused_before_any_card(make_assistant, cluster):
    assistant = make_assistant()
    first = _queued(assistant)
    second = _queued(assistant, depends_on=[first])

    loop = assistant.ask(f"make {first} wait for {second}")
    loop_error = tool_result(assistant.history, "change_task")["error"]
    missing = assistant.ask(f"make {first} wait for task 99999")
    missing_error = tool_result(assistant.history, "change_task")["error"]
    chinese = assistant.ask(f"让{first}号等{second}号跑完再跑")

    assert loop.cards == [] and missing.cards == [] and chinese.cards == []
    assert loop_error == (
        f"depends_on: task {second} already waits for task {first}; if {first} waited for it too, neither "
        "could ever start"
    )
    assert missing_error == "depends_on names task 99999, which does not exist"
    assert assistant.actions.pending() == []
    assert cluster.tasks.get_any(first).spec.get("depends_on") in (None, [])


def test_a_chinese_request_gets_a_chinese_card(make_assistant, cluster):
    assistant = make_assistant()
    parent, child = _queued(assistant), _queued(assistant)

    turn = assistant.ask(f"让{child}号等{parent}号跑完再开始")

    [card] = turn.cards
    assert turn.reply.startswith(f"修改任务 #{child}") and f"• 等待成功的任务: 无 → #{parent}\n" in turn.reply
    assert assistant.confirm(card["action_id"])["ok"]
    assert cluster.tasks.get_any(child).spec["depends_on"] == [parent]


def test_a_model_giving_the_list_and_tasks_to_add_gets_an_error_not_a_card(make_assistant):
    tid = _queued(make_assistant())
    args = {"task_id": tid, "depends_on": [1], "also_wait_for": [2]}
    assistant = make_assistant(
        model=ScriptedChatModel(messages=iter([tool_call("change_task", args), AIMessage("-")]))
    )

    turn = assistant.ask(f"make {tid} wait for 1 and 2")

    assert turn.cards == []
    assert tool_result(assistant.history, "change_task")["error"].startswith(
        "depends_on lists every task it waits for: give it, or tasks to add or take away, not both"
    )


def test_a_refused_wait_change_in_chinese_says_why_in_chinese(make_assistant):
    assistant = make_assistant()
    first, other = _queued(assistant), _queued(assistant)
    child = _queued(assistant, depends_on=[first])

    not_waiting = assistant.ask(f"不用让{child}号等{other}号了")
    already = assistant.ask(f"让{child}号等{first}号跑完再跑")
    loop = assistant.ask(f"让{first}号等{child}号跑完再跑")

    assert not_waiting.reply == f"抱歉，没能完成：任务 {child} 并没有在等任务 {other}：它在等任务 {first}"
    assert already.reply == f"抱歉，没能完成：任务 {child} 的依赖的任务本来就是 {first}"
    assert loop.reply == (
        f"抱歉，没能完成：依赖的任务：任务 {child} 已经在等任务 {first}；如果 {first} 也等它，两个都永远不会开始"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("run `python a.py` after 12", ("question", {})),
        ("12之后跑 `python a.py`", ("question", {})),
        ("run `python a.py` after 12 even if it fails", ("tool", {"depends_on_any": [12]})),
        ("run `python a.py` after 12 succeeds", ("tool", {"depends_on": [12]})),
        ("run `python a.py` after 9 p.m.", ("tool", {"not_before": "2026-03-02T21:00:00+08:00"})),
        ("run `python a.py` tonight after 11", ("tool", {"not_before": "2026-03-02T23:00:00+08:00"})),
        ("run `python a.py` after 12 tomorrow", ("tool", {"not_before": "2026-03-03T12:00:00+08:00"})),
    ],
)
def test_a_new_task_after_a_bare_number_asks_task_or_hour_unless_the_words_say(text, expected):
    reading = understand(text, NOW)

    kind, args = expected
    assert reading.kind == kind
    if kind == "question":
        assert reading.reason == "parent_or_hour"
    else:
        assert reading.args == {"command": "python a.py", **args}


def test_the_answer_to_task_or_hour_makes_the_new_tasks_card(make_assistant):
    assistant = make_assistant()
    parent = _queued(assistant)

    asked = assistant.ask(f"run `python a.py` after {parent}")
    as_task = assistant.ask("the task")
    hour = make_assistant()
    hour.ask("run `python a.py` after 9")
    as_hour = hour.ask("after 9:00")

    assert asked.tool_calls == [] and asked.reply.startswith(
        f"Start it after task {parent} ends, or after {parent}:00?"
    )
    assert as_task.tool_calls == [
        {"name": "submit_task", "args": {"command": "python a.py", "depends_on": [parent]}}
    ]
    assert [call["name"] for call in as_hour.tool_calls] == ["submit_task"]
    assert set(as_hour.tool_calls[0]["args"]) == {"command", "not_before"}


@pytest.mark.parametrize(
    ("text", "not_before"),
    [
        ("change 12 to start tonight after 11", "2026-03-02T23:00:00+08:00"),
        ("make 12 start after 9 p.m.", "2026-03-02T21:00:00+08:00"),
    ],
)
def test_a_change_after_an_hour_its_words_say_reads_the_hour_as_a_new_task_does(text, not_before):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args) == ("change_task", {"task_id": 12, "not_before": not_before})
