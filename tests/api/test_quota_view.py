"""GET /quota counts the GPUs a team holds as its cap counts them."""

from __future__ import annotations

import os

from api.main import create_app
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.store.identity import create_token
from scheduler.worker import Worker
from tests.api.conftest import TestClient, bearer


def test_a_task_assigned_to_a_node_but_not_yet_running_counts_against_the_cap_in_quota(make_cluster):
    # no worker loop heartbeats node-a: a long lease keeps it alive (and its assignment held) on a busy machine
    cluster = make_cluster(team_gpu_caps={"vision": 2}, borrowing=False, lease_ttl_s=300.0)
    Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ)).publish_node()
    token = create_token(cluster.factory, user="alice", team="vision")
    with TestClient(create_app(cluster)) as client:
        first = client.post(
            "/api/v1/tasks", json={"command": "true", "gpus": 2}, headers=bearer(token)
        ).json()
        Dispatcher(cluster).run_pass()  # assigned to node-a; no worker runs, so it is not running in SQL yet
        second = client.post(
            "/api/v1/tasks", json={"command": "true", "gpus": 1}, headers=bearer(token)
        ).json()
        Dispatcher(cluster).run_pass()
        quota = client.get("/api/v1/quota", headers=bearer(token)).json()
        explained = client.get(f"/api/v1/tasks/{second['id']}/explain", headers=bearer(token)).json()

    assert cluster.tasks.get_any(first["id"]).status == "queued"  # held in Redis, on its node's inbox
    assert (quota["gpu_cap"], quota["gpus_in_use"]) == (2, 2)  # as the cap that holds the second one sees it
    assert explained["reason"] == "team vision is at its 2-GPU cap"


def test_a_persons_cap_holds_their_next_task_and_quota_shows_it_to_them(make_cluster):
    cluster = make_cluster(user_gpu_caps={"alice": 1}, borrowing=False, lease_ttl_s=300.0)
    Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ)).publish_node()
    alice = create_token(cluster.factory, user="alice", team="vision")
    bob = create_token(cluster.factory, user="bob", team="vision")
    with TestClient(create_app(cluster)) as client:
        ids = [
            client.post("/api/v1/tasks", json={"command": "true"}, headers=bearer(token)).json()["id"]
            for token in (alice, alice, bob)
        ]
        Dispatcher(cluster).run_pass()
        mine = client.get("/api/v1/quota", headers=bearer(alice)).json()
        bobs = client.get("/api/v1/quota", headers=bearer(bob)).json()
        explained = client.get(f"/api/v1/tasks/{ids[1]}/explain", headers=bearer(alice)).json()

    assert explained["reason"] == "alice is at the 1-GPU cap per person"
    assert ids[2] in cluster.queue.assignments()  # bob, of the same team, is not held by it
    assert (mine["user"], mine["user_gpu_cap"], mine["user_gpus_in_use"]) == ("alice", 1, 1)
    assert (bobs["user_gpu_cap"], bobs["user_gpus_in_use"], bobs["gpus_in_use"]) == (None, 1, 2)
