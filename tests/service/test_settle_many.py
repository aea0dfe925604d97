"""Attempts that end together are settled together: successes and cancels in one SQL transaction, failures
through the retry policy, every lease released, the scheduler rung once; a lost claim changes nothing."""

from __future__ import annotations

from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.nodes import NodeGpu
from scheduler.service import Settlement

GB = 1024


def test_a_mixed_batch_of_endings_gets_each_its_own_status(cluster, make_identity, tmp_path) -> None:
    who, _ = make_identity()
    gpus = [NodeGpu(i, "SIM", 24 * GB, 24 * GB) for i in range(8)]
    cluster.nodes.publish("node-a", gpus, now_ms(), "simulated")
    specs = [
        {"command": "true"},
        {"command": "sleep 100"},
        {"command": "false", "retries": 1},
        {"command": "false"},
        {"command": "true"},
    ]
    ids = [cluster.submit(who, {**spec, "workdir": str(tmp_path)})[0].id for spec in specs]
    for task_id in ids:
        assert cluster.queue.assign(task_id, "node-a", [task_id % 8], now_ms())
    claims = {c.task_id: c for c in cluster.queue.claim_many("node-a", now_ms(), 30_000, 10)}
    assert set(claims) == set(ids)
    started = cluster.tasks.mark_running_many(
        "node-a", [(c.task_id, c.token, c.gpu_indices) for c in claims.values()]
    )
    assert set(started) == set(ids)
    cluster.queue.client.delete(cluster.queue.keys.scheduler_doorbell)
    ok, cancelled, retried, failed, lost = ids

    statuses = cluster.settle_attempts(
        [
            Settlement(ok, claims[ok].token, "exit", 0, "exited 0"),
            Settlement(cancelled, claims[cancelled].token, "cancelled", -15, "cancelled by alice"),
            Settlement(retried, claims[retried].token, "nonzero_exit", 1, "exited 1"),
            Settlement(failed, claims[failed].token, "nonzero_exit", 1, "exited 1"),
            Settlement(lost, "another-claim", "exit", 0, "exited 0"),
        ]
    )

    assert statuses == ["succeeded", "cancelled", "queued", "failed", None]
    rows = cluster.tasks.by_ids(ids)
    assert [rows[i].status for i in ids] == ["succeeded", "cancelled", "queued", "failed", "running"]
    assert rows[cancelled].message == "cancelled by alice"
    assert (rows[failed].exit_code, rows[failed].reason) == (1, "nonzero_exit")
    assert retried in cluster.queue.queued_ids()
    assert [cluster.queue.lease(i) for i in (ok, cancelled, retried, failed)] == [None] * 4
    assert cluster.queue.lease(lost).token == claims[lost].token  # not ours to release
    assert cluster.queue.client.llen(cluster.queue.keys.scheduler_doorbell) == 1


def test_a_job_killed_for_its_lost_lease_leaves_the_lease_to_the_reaper_which_requeues_it(
    cluster, make_identity
) -> None:
    # the cluster state machine found it: the settle released the expired lease, so the task stayed
    # running in SQL with no lease to expire until the minute's rebuild put one back
    who, _ = make_identity()
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    task, _ = cluster.submit(who, {"command": "sleep 100"})
    assert cluster.queue.assign(task.id, "node-a", [0], now_ms())
    claim = cluster.queue.claim("node-a", now_ms() - 60_000, 30_000)  # its lease ran out 30 s ago
    assert claim is not None and cluster.tasks.mark_running(task.id, claim.token, "node-a", [0])

    status = cluster.settle_attempt(task.id, claim.token, "lost_lease", None, "lease not renewed")

    assert status is None and cluster.queue.lease(task.id) is not None
    assert Dispatcher(cluster).reap_expired_leases() == 1
    assert cluster.tasks.get_any(task.id).status == "queued" and task.id in cluster.queue.queued_ids()
    requeued = cluster.tasks.get_any(task.id)  # the reason names the node that went silent
    assert (requeued.reason, requeued.message) == (
        "lost_worker",
        "its worker on node node-a stopped heartbeating",
    )


def test_a_task_asked_to_cancel_whose_worker_is_lost_is_cancelled_not_retried(cluster, make_identity) -> None:
    # the cluster state machine found it: requeued as a lost worker's task, it kept cancel_requested, so
    # every node refused to start it and nothing queued it again: queued in SQL, nowhere in Redis
    who, _ = make_identity()
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    task, _ = cluster.submit(who, {"command": "sleep 100", "retries": 2})
    assert cluster.queue.assign(task.id, "node-a", [0], now_ms())
    claim = cluster.queue.claim("node-a", now_ms() - 60_000, 30_000)  # its lease ran out 30 s ago
    assert claim is not None and cluster.tasks.mark_running(task.id, claim.token, "node-a", [0])
    cluster.cancel(who, task.id)

    assert Dispatcher(cluster).reap_expired_leases() == 0

    assert cluster.tasks.get_any(task.id).status == "cancelled"
    assert task.id not in cluster.queue.queued_ids()
