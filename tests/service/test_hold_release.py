"""Holding a queued task back (`POST /tasks/{id}/hold`, `nightshift hold`) and letting it go again: a held
task leaves the queue, starts nowhere, survives a Redis rebuild as held, and keeps its age."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from scheduler.batches import submit_sweep
from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.errors import ConflictError, NotFoundError
from scheduler.spec import parse_spec
from tests.conftest import wait_until

NODE = "node-a"


def test_a_held_task_starts_nowhere_until_released_and_then_runs(
    cluster, make_identity, start_worker, tmp_path
):
    who, _ = make_identity()
    held, _ = cluster.submit(who, {"command": "echo held", "workdir": str(tmp_path)})
    cluster.hold(who, held.id)
    start_worker()
    other, _ = cluster.submit(who, {"command": "echo other", "workdir": str(tmp_path)})

    # the other task runs on the free GPUs; the held one stays queued, out of the queue
    wait_until(lambda: cluster.tasks.get_any(other.id).status == "succeeded")
    row = cluster.tasks.get_any(held.id)
    assert (row.status, row.held_by, row.attempts_count) == ("queued", "alice", 0)
    assert held.id not in cluster.queue.queued_ids()

    released = cluster.release(who, held.id)
    assert released.held_by is None and released.enqueued_at == row.enqueued_at  # its age is kept
    wait_until(lambda: cluster.tasks.get_any(held.id).status == "succeeded")


def test_a_task_held_after_it_was_assigned_is_refused_by_the_node_that_claims_it(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1})
    assert cluster.queue.assign(task.id, NODE, [0], now_ms())  # the scheduler placed it
    claim = cluster.queue.claim(NODE, now_ms(), 60_000)  # and its node took it, before the hold
    assert claim is not None

    cluster.hold(who, task.id)

    assert cluster.tasks.mark_running(task.id, claim.token, NODE, claim.gpu_indices) is None
    assert cluster.tasks.get_any(task.id).status == "queued"


def test_a_task_held_and_released_while_a_node_claims_it_is_queued_once_and_starts_there(
    cluster, make_identity
):
    # the cluster state machine found it: release queued the task again beside the claim in flight,
    # so a pass could assign it a second time while it ran, and that claim overwrote the running lease
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1})
    assert cluster.queue.assign(task.id, NODE, [0], now_ms())
    claim = cluster.queue.claim(NODE, now_ms(), 60_000)
    assert claim is not None

    cluster.hold(who, task.id)
    cluster.release(who, task.id)

    assert task.id not in cluster.queue.queued_ids()  # its claim still stands for it
    assert cluster.tasks.mark_running(task.id, claim.token, NODE, claim.gpu_indices) is not None


def test_a_sweep_task_held_and_released_while_claimed_is_not_queued_beside_its_claim(cluster, make_identity):
    who, _ = make_identity()
    spec = parse_spec({"command": "train {i}", "gpus": 1, "sweep": {"i": [0, 1]}, "max_running": 1})
    first, second = (task.id for task in submit_sweep(cluster, who, spec)[0].tasks)
    assert cluster.queue.assign(first, NODE, [0], now_ms())
    claim = cluster.queue.claim(NODE, now_ms(), 60_000)
    assert claim is not None
    cluster.hold(who, first)  # its slot goes to the second task
    cluster.release(who, first)  # it waits for a slot

    cluster.cancel(who, second)  # the slot comes back to the first, whose claim is still in flight

    assert first not in cluster.queue.queued_ids()
    assert cluster.tasks.mark_running(first, claim.token, NODE, claim.gpu_indices) is not None


def test_a_rebuild_of_redis_leaves_a_held_task_out_and_a_check_does_not_call_it_lost(cluster, make_identity):
    who, _ = make_identity()
    held, _ = cluster.submit(who, {"command": "true", "gpus": 0})
    waiting, _ = cluster.submit(who, {"command": "true", "gpus": 0})
    cluster.hold(who, held.id)
    cluster.queue.client.flushall()

    report = cluster.rebuild_redis()

    assert report.queued_restored == 1 and set(cluster.queue.queued_ids()) == {waiting.id}
    assert Dispatcher(cluster)._redis_suspects(None) == set()
    cluster.queue.restore_queued(held.id, 0.0)  # a held task found in Redis is dropped as stale
    assert cluster.rebuild_redis().stale_removed == 1 and held.id not in cluster.queue.queued_ids()


def test_only_a_queued_task_can_be_held_and_only_a_held_one_released(cluster, make_identity):
    who, _ = make_identity()
    other_team, _ = make_identity("bob", "nlp")
    task, _ = cluster.submit(who, {"command": "true", "gpus": 0})

    with pytest.raises(ConflictError, match="is not held"):
        cluster.release(who, task.id)
    cluster.hold(who, task.id)
    with pytest.raises(ConflictError, match="already held by alice"):
        cluster.hold(who, task.id)
    with pytest.raises(NotFoundError):
        cluster.hold(other_team, task.id)  # another team's task answers as missing
    cluster.cancel(who, task.id)
    with pytest.raises(ConflictError, match="already cancelled; only a queued task can be held"):
        cluster.hold(who, task.id)


def test_the_api_holds_explains_and_releases(cluster, make_identity):
    _, token = make_identity()
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(cluster)) as api:
        task = api.post("/api/v1/tasks", json={"command": "true", "gpus": 0}, headers=headers).json()
        held = api.post(f"/api/v1/tasks/{task['id']}/hold", headers=headers)
        why = api.get(f"/api/v1/tasks/{task['id']}/explain", headers=headers).json()
        again = api.post(f"/api/v1/tasks/{task['id']}/hold", headers=headers)
        released = api.post(f"/api/v1/tasks/{task['id']}/release", headers=headers)

    assert held.status_code == 200 and held.json()["held_by"] == "alice" and held.json()["status"] == "queued"
    assert why["reason"] == f"held by alice: nightshift release {task['id']} lets it start"
    assert why["estimated_start"] is None
    assert again.status_code == 409 and "already held by alice" in again.json()["detail"]
    assert released.status_code == 200 and released.json()["held_by"] is None
