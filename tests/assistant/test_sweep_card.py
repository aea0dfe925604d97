"""A sweep in the chat: one card for all its tasks (count and a few commands), one confirm submits them all."""

from __future__ import annotations

import os

import pytest
from langchain_core.messages import AIMessage

from scheduler.gpus import SimulatedGpus
from scheduler.worker import Worker
from tests.assistant.conftest import ScriptedChatModel, tool_call

GRID = {"lr": [0.1, 0.01, 0.001], "bs": [32, 64]}


@pytest.fixture(autouse=True)
def four_gpu_node(cluster):
    """A node with 4 simulated 24 GB GPUs, registered as a worker registers it (no worker loop runs)."""
    worker = Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ))
    worker.publish_node()
    return worker


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
