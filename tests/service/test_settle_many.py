"""Attempts that end together are settled together: successes and cancels in one SQL transaction, failures
through the retry policy, every lease released, the scheduler rung once; a lost claim changes nothing."""

from __future__ import annotations

from scheduler.clock import now_ms
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
