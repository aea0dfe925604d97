"""Running a sweep's failed tasks again from the chat: a card ("rerun the failed runs of sweep 4", "重跑扫参4
失败的任务") that runs nothing until confirmed, then each failed task has a new task in its place; through
the real API, in English and Chinese, another team's sweep answered like a missing one."""

from __future__ import annotations

import pytest

from assistant.parsing.intents import understand
from assistant.replies import dropped_words
from assistant.ui.views import card_html
from tests.assistant.conftest import NOW
from tests.assistant.test_sweep_chat import _run, _statuses, _sweep

pytestmark = pytest.mark.usefixtures("four_gpu_node")
THREE = {"lr": [0.1, 0.01, 0.001], "seed": [1]}


def _one_failed(cluster, assistant) -> tuple[int, list[int]]:
    """A sweep of three: the first failed, the second succeeded, the third is still queued."""
    sweep_id, ids = _sweep(assistant, grid=THREE)
    _run(cluster, ids[0], reason="nonzero_exit")
    _run(cluster, ids[1], {"val_loss": 0.3})
    return sweep_id, ids


def test_a_rerun_is_a_card_that_runs_nothing_until_confirmed(make_assistant, cluster):
    assistant = make_assistant()
    sweep_id, ids = _one_failed(cluster, assistant)
    before = _statuses(cluster, ids)

    turn = assistant.ask(f"rerun the failed runs of sweep {sweep_id}")

    assert turn.tool_calls == [{"name": "rerun_sweep", "args": {"sweep_id": sweep_id, "status": ["failed"]}}]
    [card] = turn.cards
    assert (card["kind"], card["count"], card["status"]) == ("rerun_sweep", 1, ["failed"])
    assert _statuses(cluster, ids) == before and cluster.tasks.count_by_status()["queued"] == 1
    assert turn.reply == (
        f"Run again in sweep #{sweep_id} (lr-seeds) (please confirm):\n"
        f"• the 1 failed task: #{ids[0]} (lr=0.1, seed=1)\n"
        "• each new task keeps its parameters and takes the old one's place in the sweep's counts and "
        "results; the old ones keep their record\n"
        "Nothing happens until you confirm."
    )
    page = card_html(card)
    assert "<h3>Run these tasks again?</h3>" in page and f"#{ids[0]} (lr=0.1, seed=1)" in page
    assert "<h3>重新运行这些任务？</h3>" in card_html(card, lang="zh")

    result = assistant.confirm(card["action_id"])

    assert result["ok"], result
    new = cluster.tasks.get_any(ids[0]).replaced_by
    assert new is not None and cluster.tasks.get_any(new).params == {"lr": 0.1, "seed": 1}
    assert cluster.tasks.get_any(new).status == "queued"
    assert result["message"] == (
        f"Sweep #{sweep_id}: ran again #{ids[0]} as #{new}; its tasks now: 2 queued, 1 succeeded."
    )
    assert assistant.confirm(card["action_id"])["ok"] is False  # once only


def test_a_chinese_rerun_card_speaks_chinese_and_a_dropped_one_runs_nothing(make_assistant, cluster):
    assistant = make_assistant()
    sweep_id, ids = _one_failed(cluster, assistant)

    turn = assistant.ask(f"重跑扫参{sweep_id}失败的任务")

    [card] = turn.cards
    assert turn.reply.startswith(
        f"重新运行扫参 #{sweep_id}（lr-seeds）里的任务（请确认）：\n• 1 个失败的任务：#{ids[0]}"
    )
    assert assistant.drop(card["action_id"])
    assert dropped_words(card["kind"], "zh") == "已放弃：没有重新运行任何任务。"
    assert cluster.tasks.get_any(ids[0]).replaced_by is None

    again = assistant.ask(f"重跑扫参{sweep_id}失败的任务").cards[0]
    message = assistant.confirm(again["action_id"])["message"]
    assert message.startswith(f"扫参 #{sweep_id}：已重新运行 #{ids[0]} → #")


def test_a_sweep_with_nothing_failed_gets_no_card(make_assistant, cluster):
    assistant = make_assistant()
    sweep_id, _ = _sweep(assistant, grid=THREE)

    turn = assistant.ask(f"rerun the failed runs of sweep {sweep_id}")

    assert turn.cards == [] and assistant.actions.pending() == []
    assert turn.reply == (
        f"Sorry, that didn't work: sweep {sweep_id} has no failed task to run again (3 queued)"
    )


def test_another_teams_sweep_cannot_be_rerun_and_reads_like_a_missing_one(make_assistant, cluster):
    bob = make_assistant(user="bob", team="nlp")
    theirs, their_ids = _sweep(bob, name="nlp-secret-run", grid=THREE)
    _run(cluster, their_ids[0], reason="nonzero_exit")
    alice = make_assistant()

    turn = alice.ask(f"rerun the failed runs of sweep {theirs}")
    forged = alice.actions.add(
        "rerun_sweep", {"kind": "rerun_sweep", "sweep_id": theirs}, {"sweep_id": theirs, "status": ["failed"]}
    )
    outcome = alice.confirm(forged.action_id)

    assert turn.reply == f"Sorry, that didn't work: no sweep {theirs}" and turn.cards == []
    assert outcome["ok"] is False and "not found" in outcome["error"]
    assert cluster.tasks.get_any(their_ids[0]).replaced_by is None


@pytest.mark.parametrize(
    ("text", "statuses"),
    [
        ("rerun the failed runs of sweep 4", ["failed"]),
        ("run sweep 4's failed tasks again", ["failed"]),
        ("retry the crashed runs in sweep 4", ["failed"]),
        ("re-run the cancelled runs of sweep 4", ["cancelled"]),
        ("rerun failed and cancelled in sweep 4", ["failed", "cancelled"]),
        ("rerun all of sweep 4", ["failed", "cancelled", "succeeded"]),
        ("rerun sweep 4", None),
        ("重跑扫参4失败的任务", ["failed"]),
        ("把扫参4失败的重新跑一下", ["failed"]),
        ("扫参4里取消的任务再跑一遍", ["cancelled"]),
    ],
)
def test_a_rerun_of_a_sweep_reads_which_ended_tasks(text, statuses):
    reading = understand(text, NOW)

    assert (reading.tool, reading.args.get("sweep_id"), reading.args.get("status")) == (
        "rerun_sweep",
        4,
        statuses,
    )


@pytest.mark.parametrize("text", ["rerun the queued runs of sweep 4", "重跑扫参4排队中的任务"])
def test_rerunning_tasks_that_have_not_ended_asks(text, make_assistant):
    turn = make_assistant().ask(text)

    assert (understand(text, NOW).reason, turn.cards) == ("rerun_ended_only", [])
    assert "nightshift ls --sweep" in turn.reply


@pytest.mark.parametrize(
    "text",
    ["rerun sweep 4 tonight", "rerun sweep 4's failed runs with high priority", "今晚重跑扫参4失败的任务"],
)
def test_a_rerun_with_changes_asks_instead_of_dropping_them(text, make_assistant):
    turn = make_assistant().ask(text)

    assert (understand(text, NOW).reason, turn.cards, turn.tool_calls) == ("rerun_as_it_was", [], [])
    assert "sweep 4" in turn.reply or "扫参4" in turn.reply


def test_running_a_failed_sweep_task_again_alone_says_it_is_outside_the_sweep(make_assistant, cluster):
    assistant = make_assistant()
    sweep_id, ids = _one_failed(cluster, assistant)

    english = assistant.ask(f"run {ids[0]} again")
    chinese = assistant.ask(f"{ids[0]}号再跑一遍")
    succeeded = assistant.ask(f"run {ids[1]} again")

    assert english.cards[0]["warnings"] == [
        f"task {ids[0]} is a run of sweep {sweep_id}: this new task is outside it (`nightshift rerun {ids[0]}`, "
        f'or "rerun the failed runs of sweep {sweep_id}" here, runs it again in its place)'
    ]
    assert f"⚠ 任务 {ids[0]} 是扫参 {sweep_id} 的一次运行：这个新任务不在扫参里" in chinese.reply
    assert not succeeded.cards[0].get("warnings")
