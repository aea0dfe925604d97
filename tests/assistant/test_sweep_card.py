"""A sweep in the chat: one card for all its tasks (count and a few commands), one confirm submits them all."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from assistant.replies import card_text
from assistant.ui.views import card_html
from tests.assistant.conftest import NOW, ScriptedChatModel, tool_call

GRID = {"lr": [0.1, 0.01, 0.001], "bs": [32, 64]}


pytestmark = pytest.mark.usefixtures("four_gpu_node")


def _assistant(make_assistant, args):
    model = ScriptedChatModel(
        messages=iter([tool_call("submit_task", args), AIMessage(content="Please confirm the sweep.")])
    )
    return make_assistant(model=model)


def test_a_sweep_gets_one_card_with_its_task_count_and_first_commands_and_one_confirm(
    make_assistant, cluster
):
    args = {"command": "python train.py --lr {lr} --bs {bs}", "gpus": 1, "sweep": GRID}
    assistant = _assistant(make_assistant, args)

    turn = assistant.ask("sweep lr and bs")

    assert len(turn.cards) == 1
    card = turn.cards[0]
    assert card["sweep"]["tasks"] == 6 and card["sweep"]["params"] == ["lr", "bs"]
    assert card["sweep"]["examples"] == [
        "python train.py --lr 0.1 --bs 32",
        "python train.py --lr 0.1 --bs 64",
        "python train.py --lr 0.01 --bs 32",
    ]
    assert card["sweep"]["more"] == 3
    assert cluster.tasks.count_by_status() == {}

    result = assistant.confirm(card["action_id"])

    assert result["ok"], result
    assert result["task"]["tasks_count"] == 6
    assert "sweep" in result["message"]
    assert cluster.tasks.count_by_status() == {"queued": 6}
    assert assistant.confirm(card["action_id"])["ok"] is False  # once only


def test_a_sweep_with_a_template_mistake_gets_no_card_but_the_reason(make_assistant, cluster):
    args = {"command": "python train.py --lr {lr} --wd {wd}", "gpus": 1, "sweep": {"lr": [0.1, 0.2]}}
    assistant = _assistant(make_assistant, args)

    turn = assistant.ask("sweep lr")

    assert turn.cards == []
    assert turn.error is not None and "{wd}" in turn.error
    assert cluster.tasks.count_by_status() == {}


def test_a_sweep_card_says_how_many_tasks_it_submits_how_many_at_once_and_what_they_all_use(
    make_assistant, cluster
):
    args = {
        "command": "python train.py --lr {lr} --bs {bs}",
        "gpus": 2,
        "estimated_minutes": 60,
        "sweep": GRID,
        "max_running": 2,
    }
    assistant = _assistant(make_assistant, args)

    card = assistant.ask("sweep lr and bs, 2 at a time, about an hour each").cards[0]
    english, chinese = card_text(card, "en", NOW), card_text(card, "zh", NOW)
    page = card_html(card, lang="en")

    # The count and the limit are on the card, in both languages, as text and in the UI
    assert card["sweep"]["max_running"] == 2
    assert "• sweep: 6 tasks over lr, bs, at most 2 at a time" in english
    assert "• first tasks: `python train.py --lr 0.1 --bs 32`; " in english and english.count("+3 more") == 1
    assert "• 扫参: 6 个任务，参数 lr, bs，同时最多运行 2 个" in chinese
    assert "<h3>Submit this sweep of 6 tasks?</h3>" in page
    assert "python train.py --lr 0.1 --bs 32<br>python train.py --lr 0.1 --bs 64" in page
    assert "<h3>提交这个扫参（6 个任务）？</h3>" in card_html(card, lang="zh")
    # And the energy and GPU-hours are the whole sweep's: 6 tasks x 2 GPUs x 1 h
    assert card["summary"]["energy"]["tasks"] == 6
    assert "6 tasks × 2 × " in english
    assert card["summary"]["quota"]["uses_gpu_h"] == 12.0

    result = assistant.confirm(card["action_id"])

    assert result["ok"], result
    assert cluster.sweeps.get_any(result["task"]["id"]).max_running == 2
    assert cluster.tasks.count_by_status() == {"queued": 6}
