"""`POST /tasks/check` (Slurm's `sbatch --test-only`): a spec checked as its submission would be, with when it
would start, and nothing created."""

from __future__ import annotations

from api.main import create_app
from tests.api.conftest import TestClient, bearer


def test_a_spec_is_checked_and_estimated_and_nothing_is_created(cluster, four_gpu_node, make_identity):
    _, token = make_identity("alice", "vision")
    headers = bearer(token)
    with TestClient(create_app(cluster)) as client:
        checked = client.post(
            "/api/v1/tasks/check", json={"command": "python t.py", "gpus": 2}, headers=headers
        )
        too_big = client.post(
            "/api/v1/tasks/check", json={"command": "python t.py", "gpus": 9}, headers=headers
        )
        no_secret = client.post(
            "/api/v1/tasks/check", json={"command": "t", "secrets": ["HF_TOKEN"]}, headers=headers
        )
        sweep = client.post(
            "/api/v1/tasks/check", json={"command": "t --lr {lr}", "sweep": {"lr": [1, 2]}}, headers=headers
        )
        listed = client.get("/api/v1/tasks", headers=headers).json()

    assert checked.status_code == 200, checked.text
    body = checked.json()
    assert body["tasks"][0]["gpus"] == 2 and body["tasks"][0]["name"] == "t.py"
    assert body["estimate"]["reason"] == "starts now" and body["estimate"]["start"]
    assert too_big.status_code == 422 and "the largest node has 4 GPUs" in too_big.json()["detail"]
    assert no_secret.status_code == 422 and "you have no secret HF_TOKEN" in no_secret.json()["detail"]
    assert sweep.status_code == 200 and [t["command"] for t in sweep.json()["tasks"]] == [
        "t --lr 1",
        "t --lr 2",
    ]
    assert listed["total"] == 0 and cluster.tasks.with_status("queued") == []  # nothing made


def test_a_full_team_queue_refuses_the_check_as_it_would_the_submission(make_cluster):
    from scheduler.store.identity import create_token

    cluster = make_cluster(max_queued_per_team=1)
    headers = bearer(create_token(cluster.factory, user="alice", team="vision"))
    with TestClient(create_app(cluster)) as client:
        before = client.post("/api/v1/tasks/check", json={"command": "t", "gpus": 0}, headers=headers)
        client.post("/api/v1/tasks", json={"command": "t", "gpus": 0}, headers=headers)
        full = client.post("/api/v1/tasks/check", json={"command": "t", "gpus": 0}, headers=headers)

    assert before.status_code == 200
    assert full.status_code == 429 and "already has 1 task queued (the cap is 1)" in full.json()["detail"]
