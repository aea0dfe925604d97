"""Asking about several tasks at once ("why are 12-15 waiting", "are 12 and 13 done", "为什么12到15号还在排队"):
one explain_task call for each, in the order named, and one answer that covers each of them."""

from __future__ import annotations

import pytest

LATER = "2030-01-01T09:00:00+00:00"

pytestmark = pytest.mark.usefixtures("four_gpu_node")


def _queued(assistant, count: int) -> list[int]:
    spec = {"command": "python train.py", "gpus": 1, "not_before": LATER}
    return [int(assistant.client.submit(spec)["id"]) for _ in range(count)]


def test_why_a_run_of_tasks_waits_explains_each_of_them(make_assistant):
    assistant = make_assistant()
    first, second, third = _queued(assistant, 3)

    turn = assistant.ask(f"why are {first}-{third} waiting?")

    assert turn.tool_calls == [
        {"name": "explain_task", "args": {"task_id": task_id}} for task_id in (first, second, third)
    ]
    answers = turn.reply.split("\n\n")
    assert [answer.split(":")[0] for answer in answers] == [
        f"Task #{task_id} is queued, number {place} in the queue"
        for place, task_id in enumerate((first, second, third), start=1)
    ]
    assert all("waiting until 2030-01-01 09:00 (not before)" in answer for answer in answers)


def test_two_tasks_named_side_by_side_in_chinese_get_a_chinese_answer_for_each(make_assistant):
    assistant = make_assistant()
    first, second = _queued(assistant, 2)

    turn = assistant.ask(f"为什么{first}号和{second}号还在排队")

    assert [call["args"]["task_id"] for call in turn.tool_calls] == [first, second]
    answers = turn.reply.split("\n\n")
    assert [answer.split("，")[0] for answer in answers] == [
        f"任务 #{first} 在排队",
        f"任务 #{second} 在排队",
    ]


def test_more_tasks_than_it_explains_at_once_gets_a_question_back(make_assistant):
    turn = make_assistant().ask("why are 12-40 waiting")

    assert turn.tool_calls == []
    assert turn.reply.startswith("I explain up to 5 tasks at once: which ones first?")
