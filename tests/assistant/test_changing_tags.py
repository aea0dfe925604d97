"""Labels added to a task or taken away, queued or running, in the chat ("tag 12 with exp7", "把12号的标签exp7
去掉") and from the command line (`nightshift change 12 --tag exp7 --untag old`): the task's other tags stay."""

from __future__ import annotations

from datetime import datetime

import pytest

from api.cli.ask import change_command
from assistant.parsing.intents import understand
from scheduler.edits import retagged
from scheduler.errors import SpecError
from tests.assistant.conftest import tool_result

NOW = datetime.fromisoformat("2026-03-02T15:00:00+08:00")
LATER = "2030-01-01T09:00:00+00:00"


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("tag 12 with exp7", {"task_id": 12, "add_tags": ["exp7"]}),
        ("tag task 12 as exp7 and ablation", {"task_id": 12, "add_tags": ["exp7", "ablation"]}),
        ("add the tags exp7, v2 to task 12", {"task_id": 12, "add_tags": ["exp7", "v2"]}),
        ("add exp7 as a tag to 12", {"task_id": 12, "add_tags": ["exp7"]}),
        ("label 12 as baseline", {"task_id": 12, "add_tags": ["baseline"]}),
        ("remove the tag exp7 from 12", {"task_id": 12, "remove_tags": ["exp7"]}),
        ("untag exp7 from 12", {"task_id": 12, "remove_tags": ["exp7"]}),
        ("12号加个标签exp7", {"task_id": 12, "add_tags": ["exp7"]}),
        ("给12号打上exp7标签", {"task_id": 12, "add_tags": ["exp7"]}),
        ("给12号加标签 exp7和v2", {"task_id": 12, "add_tags": ["exp7", "v2"]}),
        ("把12号的标签exp7去掉", {"task_id": 12, "remove_tags": ["exp7"]}),
    ],
)
def test_a_label_added_or_taken_away_is_read_as_a_change(text, args):
    reading = understand(text, NOW)

    assert (reading.kind, reading.tool, reading.args) == ("tool", "change_task", args)


@pytest.mark.parametrize(
    ("text", "tool"),
    [("show tasks tagged exp7", "list_tasks"), ("compare results tagged exp7", "compare_results")],
)
def test_a_question_about_tagged_tasks_changes_no_tags(text, tool):
    assert understand(text, NOW).tool == tool


def test_tags_are_added_in_order_and_taken_away_and_a_missing_one_is_named():
    assert retagged(5, ["a", "b"], ["c", "a", "c"], ["b"]) == ["a", "c"]
    with pytest.raises(SpecError, match=r"task 5 has no tag 'x' to take away \(its tags: 'a'\)"):
        retagged(5, ["a"], [], ["x"])
    with pytest.raises(SpecError, match="both added and taken away"):
        retagged(5, ["a"], ["b"], ["b"])


def test_a_tag_is_added_by_a_card_that_keeps_the_others_and_its_command_line_does_the_same(
    make_assistant, cluster
):
    assistant = make_assistant()
    task_id = int(
        assistant.client.submit(
            {"command": "python train.py", "gpus": 1, "not_before": LATER, "tags": ["base"]}
        )["id"]
    )

    turn = assistant.ask(f"tag {task_id} with exp7")

    [card] = turn.cards
    assert card["changes"] == {"tags": [["base"], ["base", "exp7"]]}
    assert "• tags: base → base, exp7" in turn.reply
    assert change_command(card) == f"nightshift change {task_id} --tag exp7"
    assert cluster.tasks.get_any(task_id).spec["tags"] == ["base"]  # nothing before the click
    assert assistant.confirm(card["action_id"])["ok"]
    assert cluster.tasks.get_any(task_id).spec["tags"] == ["base", "exp7"]

    removed = assistant.ask(f"把{task_id}号的标签base去掉")
    assert change_command(removed.cards[0]) == f"nightshift change {task_id} --untag base"
    assert assistant.confirm(removed.cards[0]["action_id"])["ok"]
    assert cluster.tasks.get_any(task_id).spec["tags"] == ["exp7"]

    missing = assistant.ask(f"remove the tag nope from {task_id}")
    assert missing.cards == []
    assert tool_result(assistant.history, "change_task")["error"] == (
        f"task {task_id} has no tag 'nope' to take away (its tags: 'exp7')"
    )
