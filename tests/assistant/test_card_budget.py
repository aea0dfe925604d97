"""A submit card for a team whose day budget is used up says the task would wait and why, instead of
promising a start now and '-0.1 of 0 GPU-h left'."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from assistant.agent import Assistant
from assistant.client import AssistantClient
from assistant.replies import card_text
from scheduler.clock import now_ms
from scheduler.nodes import NodeGpu
from scheduler.store.identity import authenticate, create_token
from tests.assistant.conftest import NOW, AppTransport, new_endpoints
from tests.conftest import wait_until

GB = 1024
BUDGET_GPU_H = 0.0001  # 0.36 GPU-seconds: a task running for a second uses it up


@pytest.fixture
def budget_cluster(make_cluster):
    return make_cluster(day_budget_gpu_h={"vision": BUDGET_GPU_H})


def test_a_card_for_a_team_over_its_day_budget_says_it_would_wait(budget_cluster, tmp_path):
    cluster = budget_cluster
    token = create_token(cluster.factory, user="alice", team="vision")
    who = authenticate(cluster.factory, token)
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    # Given the team's task has been running long enough to use up its day budget
    task, _ = cluster.submit(who, {"command": "sleep 60", "workdir": str(tmp_path)})
    assert cluster.queue.assign(task.id, "node-a", [0], now_ms())
    claim = wait_until(lambda: cluster.queue.claim("node-a", now_ms(), 60_000))
    assert cluster.tasks.mark_running(task.id, claim.token, "node-a", claim.gpu_indices) == 1
    time.sleep(1.2)

    with TestClient(create_app(cluster)) as api:
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        assistant = Assistant(cluster.settings, client, now=lambda: NOW, user="alice", team="vision")
        # When alice asks to run another one
        turn = assistant.ask("run `python train.py` on 1 GPU")
        client.close()

    # Then the card gives no start time, says why, and says the budget is used up
    summary = turn.cards[0]["summary"]
    assert "estimated_start" not in summary
    assert summary["wait_reason"].startswith("day budget of team vision is used up")
    assert (summary["quota"]["team"], summary["quota"]["state"]) == ("vision", "exhausted")
    text = card_text(turn.cards[0], "en")
    assert "• estimate: none yet — day budget of team vision is used up" in text
    assert "• quota: team vision's day budget is used up (" in text
    assert text.count("it waits until the team's usage falls") == 1
    chinese = card_text(turn.cards[0], "zh")
    assert "• 配额: 团队 vision 今天的预算已用完（" in chinese
    assert "它会等到团队用量回落" in chinese
