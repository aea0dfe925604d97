"""The overdue set (task -> when it passes its aging bound) follows the queue through every script."""

from __future__ import annotations

import time
from dataclasses import replace

from scheduler.clock import now_ms, now_s
from scheduler.cluster_state import UsageCache, gather_state
from scheduler.dispatcher import Dispatcher
from scheduler.nodes import NodeGpu
from scheduler.service import Cluster
from scheduler.store.queue import RedisQueue

GB = 1024


def _overdue(queue: RedisQueue) -> dict[int, float]:
    rows = queue.client.zrange(queue.keys.overdue, 0, -1, withscores=True)
    return {int(m): float(s) for m, s in rows}


def test_assign_unassign_remove_keep_the_overdue_set_equal_to_the_queue(queue: RedisQueue) -> None:
    # Given three queued tasks, deep ones due soonest
    for task_id, score, due in [(1, 1.0, 300.0), (2, 2.0, 200.0), (3, 3.0, 100.0)]:
        queue.enqueue(task_id, score, due)
    # Then the range query finds the due ones, earliest first, up to a limit
    assert queue.overdue_ids(250.0, 10) == [3, 2]
    assert queue.overdue_ids(250.0, 1) == [3]
    assert queue.pass_snapshot(2, 250.0).head == [3, 2]
    assert queue.pass_snapshot(3, 150.0).head == [3, 1, 2]
    # When one is assigned, it leaves both sets; given back, it returns to both at its old scores
    assert queue.assign(3, "node-a", [0], now_ms())
    assert _overdue(queue) == {1: 300.0, 2: 200.0}
    assert queue.return_assignment(3, "node-a")
    assert _overdue(queue) == {1: 300.0, 2: 200.0, 3: 100.0}
    assert dict(queue.head(10))[3] == 3.0
    # When one is cancelled, it leaves both
    assert queue.remove(2)
    assert _overdue(queue) == {1: 300.0, 3: 100.0} and queue.indexes_agree()


def test_rescore_changes_only_tasks_in_the_queue_and_keeps_both_indexes_equal(queue: RedisQueue) -> None:
    queue.enqueue(1, 10.0, 500.0)
    queue.enqueue(2, 20.0, 600.0)
    assert queue.assign(2, "node-a", [0], now_ms())

    queue.rescore(1, 5.0, 400.0)
    queue.rescore(2, 1.0, 100.0)  # assigned meanwhile: not queued a second time

    assert dict(queue.head(10)) == {1: 5.0} and _overdue(queue) == {1: 400.0}
    assert queue.indexes_agree()


def test_restore_indexes_a_queued_task_missing_from_the_overdue_set(queue: RedisQueue) -> None:
    queue.enqueue(1, 1.0)  # as before the overdue index existed
    assert not queue.indexes_agree()
    assert queue.restore_queued(1, 1.0, 50.0)
    assert _overdue(queue) == {1: 50.0} and queue.indexes_agree()
    assert not queue.restore_queued(1, 1.0, 50.0)  # nothing left to restore


def test_the_rebuild_and_the_reconcile_restore_the_overdue_set(cluster: Cluster, make_identity) -> None:
    who, _ = make_identity()
    ids = [cluster.submit(who, {"command": "true", "gpus": 0})[0].id for _ in range(3)]
    before = _overdue(cluster.queue)
    assert sorted(before) == ids
    assert all(due == cluster.due(cluster.tasks.get_any(i)) for i, due in before.items())
    # When Redis loses everything, the rebuild puts the overdue set back as it was
    cluster.queue.client.flushall()
    cluster.rebuild_redis()
    assert _overdue(cluster.queue) == before
    # When only the overdue set is missing (a Redis from before the index), the reconcile rebuilds it
    cluster.queue.client.delete(cluster.queue.keys.overdue)
    Dispatcher(cluster)._reconcile_redis(-1e9)
    assert _overdue(cluster.queue) == before


def test_the_live_window_holds_an_overdue_task_deep_in_the_queue_and_it_starts_first(
    cluster: Cluster, make_identity, tmp_path
) -> None:
    # Given a window of 2, a 0.5 s class step and a 2 s short-job credit: a low task's aging bound is 3.5 s
    cluster.policy_config = replace(
        cluster.policy_config,
        window=2,
        class_step_s=0.5,
        short_job_max_credit_s=2.0,
        fairshare_max_credit_s=0.0,
        deadline_credit_s=0.0,
    )
    who, _ = make_identity()
    cluster.nodes.publish("node-a", [NodeGpu(0, "SIM", 24 * GB, 24 * GB)], now_ms(), "simulated")
    spec = {"command": "true", "workdir": str(tmp_path), "priority": "low"}
    # a long low task, then three short ones of the same class that rank ahead of it by their credit
    big = cluster.submit(who, {**spec, "estimated_minutes": 86_400})[0].id
    small = [cluster.submit(who, {**spec, "estimated_minutes": 0.1})[0].id for _ in range(3)]
    # Before its bound the short tasks fill the window
    state = gather_state(cluster, UsageCache(cluster), 2)
    assert [t.task_id for t in state.queued] == small[:2]
    # When it has waited its bound
    time.sleep(max(0.0, cluster.due(cluster.tasks.get_any(big)) - now_s()) + 0.05)
    assert cluster.queue.overdue_ids(now_s(), 2)[0] == big
    # Then it is in the window of both reads, and the dispatcher starts it first
    assert gather_state(cluster, UsageCache(cluster), 2).queued[0].task_id == big
    assert [s.task_id for s in Dispatcher(cluster).run_pass().starts] == [big]
