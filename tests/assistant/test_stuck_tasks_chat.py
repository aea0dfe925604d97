""" "Why is my job stuck?" asked without a number: each of the team's queued tasks with its place, why it
waits and when it should start (the queue), instead of a question back; with a number it is still that
task's explanation."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from assistant.parsing.intents import understand
from tests.assistant.conftest import NOW

pytestmark = pytest.mark.usefixtures("four_gpu_node")


@pytest.mark.parametrize(
    "text",
    [
        "why is my job stuck?",
        "is anything of mine stuck?",
        "why isn't my job running?",
        "why hasn't my task started yet",
        "why are my tasks still queued",
        "我的任务卡住了吗",
        "我的任务为什么还没跑",
        "为什么我的任务还在排队",
    ],
)
def test_a_waiting_question_without_a_number_reads_the_queue(text):
    reading = understand(text, NOW)

    assert (reading.kind, reading.tool, reading.args) == ("tool", "queue_position", {})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("why is 45 stuck", ("tool", "explain_task", {"task_id": 45})),
        ("why did my job fail", ("question", None, {})),  # which one: a failure is no queue matter
        ("why is my team capped", ("tool", "quota_status", {})),
    ],
)
def test_other_why_questions_read_as_before(text, expected):
    reading = understand(text, NOW)

    assert (reading.kind, reading.tool, reading.args) == expected


def test_the_queue_answer_says_each_tasks_reason_start_and_owner(make_assistant, cluster):
    later = (datetime.now(UTC) + timedelta(hours=3)).isoformat()
    alice, bob = make_assistant(), make_assistant(user="bob")
    mine = alice.client.submit({"command": "python a.py", "name": "mine", "gpus": 1, "not_before": later})
    theirs = bob.client.submit({"command": "python b.py", "name": "theirs", "gpus": 1, "not_before": later})

    turn = alice.ask("why is my job stuck?")

    assert turn.tool_calls == [{"name": "queue_position", "args": {}}]
    lines = turn.reply.splitlines()
    assert len(lines) == 2
    line = next(line for line in lines if line.startswith(f"#{mine['id']} "))
    assert re.fullmatch(
        rf"#{mine['id']} mine \(alice\) is number \d of 2 in the queue: waiting until \d\d:\d\d \(not before\); "
        r"expected to start .+\.",
        line,
    ), line
    other = next(line for line in lines if line.startswith(f"#{theirs['id']} "))
    assert other.startswith(f"#{theirs['id']} theirs (bob) is number ")
    chinese = alice.ask("我的任务卡住了吗").reply
    assert f"任务 #{mine['id']}（mine，alice）排在第" in chinese and "之前不开始" in chinese


def test_with_nothing_queued_the_answer_says_so(make_assistant):
    assert make_assistant().ask("why is my job stuck?").reply == "None of your tasks is waiting in the queue."
