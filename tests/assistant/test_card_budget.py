"""A submit card for a team whose day budget is used up says the task would wait, why, and until when (as
the team's work ages out of the last 24 h), instead of promising a start now and '-0.1 of 0 GPU-h left'."""

from __future__ import annotations

import time
from datetime import datetime

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


def _team_over_its_budget(cluster, tmp_path):
    """alice of vision, whose task has been running long enough to use up the team's day budget; her token."""
    token = create_token(cluster.factory, user="alice", team="vision")
    who = authenticate(cluster.factory, token)
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB), NodeGpu(1, "SIM", 24 * GB, 24 * GB)],
                          now_ms(), "simulated")  # fmt: skip
    task, _ = cluster.submit(who, {"command": "sleep 60", "workdir": str(tmp_path)})
    assert cluster.queue.assign(task.id, "node-a", [0], now_ms())
    claim = wait_until(lambda: cluster.queue.claim("node-a", now_ms(), 60_000))
    assert cluster.tasks.mark_running(task.id, claim.token, "node-a", claim.gpu_indices) == 1
    time.sleep(1.2)
    return token


def test_explain_says_when_a_task_held_by_its_teams_budget_should_start(budget_cluster, tmp_path):
    cluster = budget_cluster
    token = _team_over_its_budget(cluster, tmp_path)
    who = authenticate(cluster.factory, token)
    waiting, _ = cluster.submit(who, {"command": "python eval.py", "workdir": str(tmp_path)})

    with TestClient(create_app(cluster)) as api:
        headers = {"Authorization": f"Bearer {token}"}
        answer = api.get(f"/api/v1/tasks/{waiting.id}/explain", headers=headers)
        quota = api.get("/api/v1/quota", headers=headers).json()
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        assistant = Assistant(cluster.settings, client, user="alice", team="vision")
        reply = assistant.ask("how much quota is left?").reply
        client.close()

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["reason"].startswith("day budget of team vision is used up (")
    assert "; new starts again at " in body["reason"]  # a GPU is free: only the budget holds it
    start = datetime.fromisoformat(body["estimated_start"]).timestamp()
    assert time.time() + 24 * 3600 < start < time.time() + 26 * 3600
    # the quota says the same moment, and so does the chat's answer
    assert quota["state"] == "exhausted"
    assert abs(datetime.fromisoformat(quota["new_starts_at"]).timestamp() - start) < 60
    assert "; new starts again " in reply, reply


def test_a_card_for_a_team_over_its_day_budget_says_it_would_wait(budget_cluster, tmp_path):
    cluster = budget_cluster
    # Given the team's task has been running long enough to use up its day budget
    token = _team_over_its_budget(cluster, tmp_path)

    with TestClient(create_app(cluster)) as api:
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        assistant = Assistant(cluster.settings, client, now=lambda: NOW, user="alice", team="vision")
        # When alice asks to run another one
        turn = assistant.ask("run `python train.py` on 1 GPU")
        client.close()

    # Then the card starts it when the budget frees (a day after the running task's expected end, an hour
    # from now by default: its work then ages out of the last 24 h), says why, and says the budget is used up
    summary = turn.cards[0]["summary"]
    start = datetime.fromisoformat(summary["estimated_start"]).timestamp()
    assert time.time() + 24 * 3600 < start < time.time() + 26 * 3600
    assert summary["wait_reason"].startswith("day budget of team vision is used up")
    assert "; new starts again at " in summary["wait_reason"]
    assert (summary["quota"]["team"], summary["quota"]["state"]) == ("vision", "exhausted")
    text = card_text(turn.cards[0], "en")
    assert "• estimate: " in text and "none yet" not in text
    assert "• quota: team vision's day budget is used up (" in text
    assert text.count("it waits until the team's usage falls") == 1
    chinese = card_text(turn.cards[0], "zh")
    assert "• 配额: 团队 vision 日预算已用完（" in chinese
    assert "它会等到团队用量回落" in chinese


def test_a_cpu_only_card_of_a_team_over_its_budget_starts_now_and_says_nothing_of_the_budget(
    budget_cluster, tmp_path
):
    cluster = budget_cluster
    token = _team_over_its_budget(cluster, tmp_path)

    with TestClient(create_app(cluster)) as api:
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        assistant = Assistant(cluster.settings, client, now=lambda: NOW, user="alice", team="vision")
        turn = assistant.ask("run `python preprocess.py` on 0 GPUs")
        client.close()

    summary = turn.cards[0]["summary"]
    assert turn.cards[0]["spec"]["gpus"] == 0
    assert summary.get("quota") is None and summary["wait_reason"] == "starts now"
    assert "budget" not in card_text(turn.cards[0], "en")


def test_a_card_for_a_person_over_their_own_budget_says_it_would_wait_and_a_teammates_does_not(
    make_cluster, tmp_path
):
    cluster = make_cluster(user_day_budget_gpu_h={"alice": BUDGET_GPU_H})
    # Given alice's own task has been running long enough to use up her own day budget (the team has none)
    token = _team_over_its_budget(cluster, tmp_path)
    bob = create_token(cluster.factory, user="bob", team="vision")

    with TestClient(create_app(cluster)) as api:
        turns = {}
        for user, user_token in (("alice", token), ("bob", bob)):
            client = AssistantClient(
                "http://testserver", user_token, transport=AppTransport(api, new_endpoints)
            )
            assistant = Assistant(cluster.settings, client, now=lambda: NOW, user=user, team="vision")
            turns[user] = assistant.ask("run `python train.py` on 1 GPU")
            client.close()

    # Then her card says it waits for her own budget, until her work ages out of the last 24 h
    summary = turns["alice"].cards[0]["summary"]
    assert summary["wait_reason"].startswith("day budget of alice in team vision is used up")
    start = datetime.fromisoformat(summary["estimated_start"]).timestamp()
    assert time.time() + 24 * 3600 < start < time.time() + 26 * 3600
    text = card_text(turns["alice"].cards[0], "en")
    assert "team vision: no daily budget" in text and "your own day budget is used up (" in text
    assert "你个人的日预算已用完" in card_text(turns["alice"].cards[0], "zh")
    # and bob, of the same team, with no budget of his own, starts now
    assert turns["bob"].cards[0]["summary"]["wait_reason"] == "starts now"
    assert "own day budget" not in card_text(turns["bob"].cards[0], "en")
