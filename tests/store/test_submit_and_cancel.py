"""Submit and cancel write SQL first, then Redis; repeating them never duplicates or resurrects a task."""

from __future__ import annotations

import pytest

from scheduler.clock import now_ms
from scheduler.errors import ConflictError, NotFoundError
from scheduler.store.queue import RenewResult

NODE = "node-a"


def test_a_submitted_task_is_queued_in_sql_and_in_redis_at_its_score(cluster, make_identity):
    who, _ = make_identity()
    task, created = cluster.submit(who, {"command": "echo hi", "gpus": 0, "priority": "high"})
    assert created and task.status == "queued"
    assert cluster.queue.head(10) == [(task.id, cluster.score(task))]
    assert cluster.queue.wait_scheduler_doorbell(0.1)


def test_higher_priority_submissions_are_ahead_in_the_queue(cluster, make_identity):
    who, _ = make_identity()
    low = cluster.submit(who, {"command": "echo low", "gpus": 0, "priority": "low"})[0].id
    normal = cluster.submit(who, {"command": "echo normal", "gpus": 0})[0].id
    urgent = cluster.submit(who, {"command": "echo urgent", "gpus": 0, "priority": "urgent"})[0].id
    assert [task_id for task_id, _ in cluster.queue.head(10)] == [urgent, normal, low]
    assert [cluster.queue.position(t) for t in (urgent, normal, low)] == [0, 1, 2]


def test_a_repeated_submit_with_the_same_key_returns_the_task_and_keeps_one_entry(cluster, make_identity):
    who, _ = make_identity()
    first, created = cluster.submit(who, {"command": "echo hi", "gpus": 0}, idempotency_key="k")
    again, created_again = cluster.submit(who, {"command": "echo hi", "gpus": 0}, idempotency_key="k")
    assert (created, created_again, again.id) == (True, False, first.id)
    assert cluster.queue.head(10) == [(first.id, cluster.score(first))]


def test_a_repeated_submit_puts_back_a_queue_entry_the_first_submit_never_wrote(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "echo hi", "gpus": 0}, idempotency_key="k")
    cluster.queue.remove(task.id)  # as if the first request died between SQL and Redis
    cluster.submit(who, {"command": "echo hi", "gpus": 0}, idempotency_key="k")
    assert cluster.queue.position(task.id) == 0


def test_a_repeated_submit_does_not_put_an_assigned_task_back_in_the_queue(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "echo hi", "gpus": 0}, idempotency_key="k")
    assert cluster.queue.assign(task.id, NODE, [], now_ms())
    cluster.submit(who, {"command": "echo hi", "gpus": 0}, idempotency_key="k")
    assert cluster.queue.position(task.id) is None  # else the scheduler places it a second time


def test_a_repeated_submit_does_not_put_a_claimed_task_back_in_the_queue(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "echo hi", "gpus": 0}, idempotency_key="k")
    assert cluster.queue.assign(task.id, NODE, [], now_ms())
    assert cluster.queue.claim(NODE, now_ms(), 60_000) is not None  # leased; SQL still says queued
    cluster.submit(who, {"command": "echo hi", "gpus": 0}, idempotency_key="k")
    assert cluster.queue.position(task.id) is None


def test_a_repeated_submit_of_a_running_task_leaves_the_queue_alone(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "echo hi", "gpus": 0}, idempotency_key="k")
    assert cluster.queue.assign(task.id, NODE, [], now_ms())
    claim = cluster.queue.claim(NODE, now_ms(), 60_000)
    cluster.tasks.mark_running(task.id, claim.token, NODE, claim.gpu_indices)
    again, created = cluster.submit(who, {"command": "echo hi", "gpus": 0}, idempotency_key="k")
    assert (created, again.status) == (False, "running")
    assert cluster.queue.length() == 0


def test_cancelling_a_queued_task_takes_it_out_of_the_queue(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "echo hi", "gpus": 0})
    assert cluster.cancel(who, task.id).status == "cancelled"
    assert cluster.queue.position(task.id) is None
    with pytest.raises(ConflictError, match="already cancelled"):
        cluster.cancel(who, task.id)


def test_cancelling_a_running_task_flags_it_for_its_workers_heartbeat(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "sleep 300", "gpus": 0})
    assert cluster.queue.assign(task.id, NODE, [], now_ms())
    claim = cluster.queue.claim(NODE, now_ms(), 60_000)
    cluster.tasks.mark_running(task.id, claim.token, NODE, claim.gpu_indices)
    assert cluster.cancel(who, task.id).cancel_requested is True
    assert cluster.queue.renew(task.id, claim.token, now_ms(), 60_000) == RenewResult.CANCEL_REQUESTED
    assert cluster.queue.wait_node_doorbell(NODE, 0.1)


def test_a_task_claimed_but_not_yet_running_when_cancelled_is_refused_to_its_worker(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "echo hi", "gpus": 0})
    assert cluster.queue.assign(task.id, NODE, [], now_ms())
    claim = cluster.queue.claim(NODE, now_ms(), 60_000)
    assert cluster.cancel(who, task.id).status == "cancelled"
    assert cluster.tasks.mark_running(task.id, claim.token, NODE, claim.gpu_indices) is None
    assert cluster.queue.release(task.id, claim.token)
    assert cluster.rebuild_redis().queued_restored == 0


def test_another_team_cannot_cancel_a_task_and_learns_nothing(cluster, make_identity):
    alice, _ = make_identity("alice", "vision")
    carol, _ = make_identity("carol", "nlp")
    task, _ = cluster.submit(alice, {"command": "echo hi", "gpus": 0})
    with pytest.raises(NotFoundError) as refused:
        cluster.cancel(carol, task.id)
    assert refused.value.message == f"task {task.id} not found"
    assert cluster.tasks.get_any(task.id).status == "queued"
    assert cluster.queue.position(task.id) == 0
