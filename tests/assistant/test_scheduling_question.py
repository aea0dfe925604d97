""" "How does the scheduler decide who goes first?", "is the scheduling fair", "调度规则是什么": how the queue
is ordered, in words, and where one task's parts are shown; a question about one task stays about it."""

from __future__ import annotations

import pytest

from assistant.parsing.intents import understand
from tests.assistant.conftest import NOW


@pytest.mark.parametrize(
    "text",
    [
        "how does the scheduler decide who goes first",
        "why does bob always get the GPUs first",
        "is the scheduling fair",
        "how does aging work",
        "what does priority urgent do",
        "调度规则是什么",
        "为什么别人的任务先跑",
    ],
)
def test_how_the_queue_is_ordered_gets_the_rule(text):
    reading = understand(text, NOW)

    assert (reading.kind, reading.reason) == ("help", "scheduling")


@pytest.mark.parametrize(
    ("text", "tool"), [("why is 45 waiting", "explain_task"), ("how is 45 doing", "explain_task")]
)
def test_a_question_about_one_task_stays_about_it(text, tool):
    assert understand(text, NOW).tool == tool


def test_the_answer_names_the_parts_and_the_commands_that_show_them(make_assistant):
    assistant = make_assistant()

    english = assistant.ask("how does the scheduler decide who goes first").reply
    chinese = assistant.ask("调度规则是什么").reply

    for words in ("priority class", "fair share", "backfill", "bound on its wait", "`nightshift explain ID`"):
        assert words in english
    assert "never running jobs" in english
    assert chinese.startswith("排队顺序：") and "`nightshift explain 任务编号`" in chinese
