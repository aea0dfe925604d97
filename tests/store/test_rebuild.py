"""SQL is the source of truth: whatever Redis loses, `Cluster.rebuild_redis` puts back from SQL."""

from __future__ import annotations

import random

from scheduler.clock import now_ms
from scheduler.nodes import NodeGpu
from scheduler.service import Cluster
from scheduler.store.queue import RenewResult

NODE = "node-a"
PRIORITIES = ("low", "normal", "high", "urgent")


def _submit(cluster: Cluster, who, count: int, rng: random.Random | None = None) -> list[int]:
    ids = []
    for i in range(count):
        priority = rng.choice(PRIORITIES) if rng else PRIORITIES[i % len(PRIORITIES)]
        ids.append(cluster.submit(who, {"command": f"echo {i}", "priority": priority, "gpus": 0})[0].id)
    return ids


def _queue_with_scores(cluster: Cluster) -> list[tuple[int, float]]:
    return cluster.queue.head(10_000)


def _start_running(cluster: Cluster, task_id: int, gpus: list[int]) -> str:
    """What the dispatcher and a worker do: assign, claim (lease), mark running in SQL."""
    assert cluster.queue.assign(task_id, NODE, gpus, now_ms())
    claim = cluster.queue.claim(NODE, now_ms(), 60_000)
    assert claim is not None and claim.task_id == task_id
    assert cluster.tasks.mark_running(task_id, claim.token, NODE, claim.gpu_indices) == 1
    return claim.token


def test_after_redis_loses_everything_every_queued_task_comes_back_in_the_same_order(cluster, make_identity):
    who, _ = make_identity()
    ids = _submit(cluster, who, 12)
    before = _queue_with_scores(cluster)
    assert sorted(task_id for task_id, _ in before) == ids
    cluster.queue.client.flushall()
    assert cluster.queue.length() == 0 and cluster.queue.epoch() is None
    report = cluster.rebuild_redis()
    assert (report.queued_restored, report.leases_restored, report.stale_removed) == (12, 0, 0)
    assert _queue_with_scores(cluster) == before
    assert cluster.queue.epoch() is not None
    assert cluster.queue.wait_scheduler_doorbell(0.1)  # the scheduler is woken to place them


def test_a_running_tasks_lease_comes_back_with_its_sql_token_so_its_heartbeat_still_renews(
    cluster, make_identity
):
    who, _ = make_identity()
    (task_id,) = _submit(cluster, who, 1)
    token = _start_running(cluster, task_id, [1, 2])
    cluster.queue.client.flushall()
    assert cluster.queue.renew(task_id, token, now_ms(), 60_000) == RenewResult.MISSING
    report = cluster.rebuild_redis()
    assert (report.queued_restored, report.leases_restored) == (0, 1)
    lease = cluster.queue.lease(task_id)
    assert (lease.token, lease.node, lease.gpu_indices) == (token, NODE, (1, 2))
    assert cluster.queue.renew(task_id, token, now_ms(), 60_000) == RenewResult.RENEWED
    assert cluster.queue.renew(task_id, token + "0", now_ms(), 60_000) == RenewResult.STOLEN
    assert cluster.queue.position(task_id) is None  # running, so not queued again


def test_a_restored_lease_expires_like_any_other_if_its_worker_is_gone(cluster, make_identity):
    who, _ = make_identity()
    (task_id,) = _submit(cluster, who, 1)
    token = _start_running(cluster, task_id, [0])
    cluster.queue.client.flushall()
    cluster.rebuild_redis()
    expires = cluster.queue.lease(task_id).expires_ms
    assert cluster.queue.expired(expires - 1) == []
    assert cluster.queue.expired(expires) == [(task_id, token)]


def test_the_rebuild_leaves_assigned_claimed_and_running_tasks_where_they_are(cluster, make_identity):
    who, _ = make_identity()
    queued, assigned, claimed, running = _submit(cluster, who, 4)
    token = _start_running(cluster, running, [2])
    assert cluster.queue.assign(claimed, NODE, [1], now_ms())
    claim = cluster.queue.claim(NODE, now_ms(), 60_000)
    assert claim.task_id == claimed  # leased, but the worker has not marked it running in SQL yet
    assert cluster.queue.assign(assigned, NODE, [0], now_ms())
    lease_before = cluster.queue.lease(running)

    report = cluster.rebuild_redis()

    assert (report.queued_restored, report.leases_restored, report.stale_removed) == (0, 0, 0)
    assert cluster.queue.queued_ids() == {queued}
    assert cluster.queue.assignments() == {assigned: (NODE, (0,))}
    assert cluster.queue.lease(claimed).token == claim.token
    assert cluster.queue.lease(running) == lease_before
    assert cluster.queue.lease(running).token == token


def test_a_single_missing_queue_entry_is_put_back_at_its_score(cluster, make_identity):
    who, _ = make_identity()
    ids = _submit(cluster, who, 5)
    before = _queue_with_scores(cluster)
    assert cluster.queue.client.zrem(cluster.queue.keys.queue, str(ids[2])) == 1
    report = cluster.rebuild_redis()
    assert (report.queued_restored, report.stale_removed) == (1, 0)
    assert _queue_with_scores(cluster) == before


def test_queue_entries_of_tasks_that_left_the_queue_in_sql_are_removed(cluster, make_identity):
    who, _ = make_identity()
    keep, cancelled, failed, finished = _submit(cluster, who, 4)
    # SQL changed but the Redis side was never done (a crash between the two writes)
    assert cluster.tasks.cancel_queued(cancelled, "alice")
    assert cluster.tasks.fail_queued(failed, "dependency_failed", "parent failed")
    assert cluster.tasks.mark_running(finished, "old-1", NODE, [0]) == 1
    assert cluster.tasks.finish(finished, "old-1", "succeeded", exit_code=0, reason="exit")
    cluster.queue.enqueue(4242, 0.0)  # a task SQL never heard of
    report = cluster.rebuild_redis()
    assert report.stale_removed == 4
    assert cluster.queue.queued_ids() == {keep}


def test_cancel_takes_a_queued_or_assigned_task_out_of_redis_so_nothing_stale_is_left(cluster, make_identity):
    who, _ = make_identity()
    queued, assigned = _submit(cluster, who, 2)
    assert cluster.queue.assign(assigned, NODE, [0], now_ms())
    assert cluster.cancel(who, queued).status == "cancelled"
    assert cluster.cancel(who, assigned).status == "cancelled"
    assert cluster.queue.queued_ids() == set() and cluster.queue.assignments() == {}
    assert cluster.queue.claim(NODE, now_ms(), 60_000) is None
    report = cluster.rebuild_redis()
    assert (report.queued_restored, report.stale_removed) == (0, 0)


def test_rebuilding_twice_changes_nothing_the_second_time(cluster, make_identity):
    who, _ = make_identity()
    ids = _submit(cluster, who, 3)
    _start_running(cluster, ids[0], [0])
    cluster.queue.client.flushall()
    cluster.rebuild_redis()
    epoch, queue, lease = cluster.queue.epoch(), _queue_with_scores(cluster), cluster.queue.lease(ids[0])
    report = cluster.rebuild_redis()
    assert (report.queued_restored, report.leases_restored, report.stale_removed) == (0, 0, 0)
    assert (cluster.queue.epoch(), _queue_with_scores(cluster), cluster.queue.lease(ids[0])) == (
        epoch,
        queue,
        lease,
    )


def _damage(cluster: Cluster, rng: random.Random, ids: list[int]) -> None:
    """Lose some of what Redis holds: everything, or random queue entries, leases and assignments."""
    client, keys = cluster.queue.client, cluster.queue.keys
    if rng.random() < 0.25:
        client.flushall()
        return
    for task_id in ids:
        roll = rng.random()
        if roll < 0.2:
            client.zrem(keys.queue, str(task_id))
        elif roll < 0.3:
            client.delete(keys.lease(task_id))
            client.zrem(keys.leases, str(task_id))
        elif roll < 0.35:
            client.delete(keys.assignment(task_id))
            client.srem(keys.assigned, str(task_id))


def _assert_redis_matches_sql(cluster: Cluster) -> None:
    rows = cluster.tasks.by_ids(range(1, 10_000))
    queue = dict(cluster.queue.head(10_000))
    assigned = cluster.queue.assignments()
    for task_id, row in rows.items():
        lease = cluster.queue.lease(task_id)
        if row.status == "queued":
            # exactly one place: waiting in the queue (at its SQL score), assigned, or claimed
            places = [task_id in queue, task_id in assigned, lease is not None]
            assert places.count(True) == 1, (task_id, places)
            if task_id in queue:
                assert queue[task_id] == cluster.score(row)
        elif row.status == "running":
            assert lease is not None and lease.token == row.lease_token, task_id
            assert task_id not in queue and task_id not in assigned
        else:
            assert task_id not in queue and lease is None, (task_id, row.status)
    assert set(queue) <= set(rows)


def test_a_seeded_random_mix_of_states_and_losses_is_always_repaired(cluster, make_identity):
    rng = random.Random(20240611)
    who, _ = make_identity()
    for _round in range(6):
        ids = _submit(cluster, who, 15, rng)
        for task_id in ids:
            roll = rng.random()
            if roll < 0.2:
                _start_running(cluster, task_id, [rng.randrange(4)])
            elif roll < 0.3:
                assert cluster.queue.assign(task_id, NODE, [0], now_ms())
                claim = cluster.queue.claim(NODE, now_ms(), 60_000)
                assert claim is not None and claim.task_id == task_id
            elif roll < 0.4:
                cluster.cancel(who, task_id)
            elif roll < 0.5:
                cluster.tasks.cancel_queued(task_id, "alice")  # SQL only: leaves a stale queue entry
            elif roll < 0.55:
                token = _start_running(cluster, task_id, [0])
                cluster.tasks.finish(task_id, token, "succeeded", exit_code=0, reason="exit")
                cluster.queue.release(task_id, token)
        _damage(cluster, rng, ids)
        cluster.rebuild_redis()
        _assert_redis_matches_sql(cluster)


def test_what_admins_set_on_the_nodes_comes_back_after_redis_loses_everything(cluster, make_identity):
    who, _ = make_identity("alice", "vision")
    gpus = [NodeGpu(0, "NVIDIA A100", 80 * 1024, 80 * 1024)]
    for name in ("box-1", "box-2", "box-3"):
        cluster.nodes.publish(name, gpus, now_ms(), "nvml")
    hour_s = 3600.0
    now = now_ms() / 1000
    assert cluster.set_node_drained("box-1", True)
    assert cluster.drain_later(who, "box-2", now + hour_s, True, now + 3 * hour_s, "weekly") == []
    admin, _ = make_identity("root", "ops", admin=True)
    assert cluster.reserve_node(admin, "box-2", "vision", now + 4 * hour_s, now + 8 * hour_s)[1] == []
    assert cluster.reserve_node(admin, "box-2", "nlp", now + 9 * hour_s, now + 11 * hour_s, "weekly")[1] == []
    assert cluster.set_node_drained("box-3", True) and cluster.set_node_drained("box-3", False)
    before = {node.name: node for node in cluster.nodes.all()}

    cluster.queue.client.flushall()
    report = cluster.rebuild_redis()

    after = {node.name: node for node in cluster.nodes.all()}
    assert report.nodes_restored == 3
    assert after["box-1"].drained and after["box-1"].drained_at(now_ms())
    assert after["box-2"].drain_repeat == "weekly"
    for field in (
        "drain_at_ms",
        "drain_until_ms",
        "drain_repeat",
        "drain_zone",
        "drain_requeue_by",
        "reservations",
    ):
        assert getattr(after["box-2"], field) == getattr(before["box-2"], field), field
    assert [(held.team, held.repeat) for held in after["box-2"].reservations] == [
        ("vision", None),
        ("nlp", "weekly"),
    ]
    assert not after["box-3"].drained_at(now_ms())  # undrained before the loss: stays in service
    assert all(node.heartbeat_ms == 0 for node in after.values())  # down until their workers publish


def test_a_redis_that_kept_its_data_keeps_its_node_settings_as_they_are(cluster):
    cluster.nodes.publish("box-1", [NodeGpu(0, "NVIDIA A100", 80 * 1024, 80 * 1024)], now_ms(), "nvml")
    assert cluster.set_node_drained("box-1", True)
    cluster.nodes.set_drained("box-1", False)  # changed in Redis alone (as a test or an old API would)

    report = cluster.rebuild_redis()

    assert report.nodes_restored == 0 and not cluster.nodes.all()[0].drained
