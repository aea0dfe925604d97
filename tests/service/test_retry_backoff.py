"""A failed attempt with retries left goes back to the queue behind its backoff: the policy sees when it may
start again as a retry (not as the spec's `not_before`), so `explain` can say so."""

from __future__ import annotations

import pytest

from scheduler.clock import now_ms
from scheduler.nodes import NodeGpu
from scheduler.policy_input import queued_task_of
from scheduler.service import Settlement
from scheduler.store.identity import authenticate, create_token

GB = 1024


@pytest.fixture
def backoff_cluster(make_cluster):
    return make_cluster(retry_backoff_s=60.0)


def test_a_requeued_attempt_carries_its_backoff_as_a_retry_time(backoff_cluster, tmp_path) -> None:
    cluster = backoff_cluster
    who = authenticate(cluster.factory, create_token(cluster.factory, user="alice", team="vision"))
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    task, _ = cluster.submit(who, {"command": "false", "retries": 1, "workdir": str(tmp_path)})
    assert cluster.queue.assign(task.id, "node-a", [0], now_ms())
    claim = cluster.queue.claim("node-a", now_ms(), 30_000)
    assert claim is not None
    assert cluster.tasks.mark_running(task.id, claim.token, "node-a", claim.gpu_indices) == 1
    failed_at_s = now_ms() / 1000

    status = cluster.settle_attempts([Settlement(task.id, claim.token, "nonzero_exit", 1, "exit code 1")])

    assert status == ["queued"]
    view = queued_task_of(cluster.tasks.get_any(task.id))
    assert view.not_before_s is None  # the spec set none
    assert view.retry_at_s is not None and 59 <= view.retry_at_s - failed_at_s <= 65
