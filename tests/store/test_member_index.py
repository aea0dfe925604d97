"""Each member's queued tasks, indexed in Redis (`policy.window`): their first ones join a pass's window
however deep they sit in the queue, and the index follows the queue through every script."""

from __future__ import annotations

import os
import time
from dataclasses import replace

from scheduler.clock import now_ms, now_s
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.service import Cluster
from scheduler.store.identity import authenticate, create_token
from scheduler.store.queue import QueueEntry, RedisQueue
from scheduler.worker import Worker
from tests.observability.test_reports import _ran

H = 3600.0


def _member(queue: RedisQueue, member: str) -> list[int]:
    return [int(m) for m in queue.client.zrange(queue.keys.member_queue(member), 0, -1)]


def _members(queue: RedisQueue) -> set[str]:
    return set(queue.client.smembers(queue.keys.members))


def test_each_members_first_tasks_join_the_window_behind_anothers_flood(queue: RedisQueue) -> None:
    # Given alice's ten tasks ahead of bob's two and carol's one, all of team lab
    queue.enqueue_many([QueueEntry(i, float(i), None, "lab/alice") for i in range(1, 11)])
    queue.enqueue_many([QueueEntry(11, 11.0, None, "lab/bob"), QueueEntry(12, 12.0, None, "lab/bob")])
    queue.enqueue(13, 13.0, None, "lab/carol")

    # Then a window of 3 holds alice's first three, and each member's first tasks come with it
    snap = queue.pass_snapshot(3, now_s(), per_member=1)
    assert snap.head == [1, 2, 3]
    assert sorted(snap.member_heads) == [("lab", "alice", 1), ("lab", "bob", 11), ("lab", "carol", 13)]
    two = queue.pass_snapshot(3, now_s(), per_member=2).member_heads
    assert sorted(task_id for _, user, task_id in two if user != "alice") == [11, 12, 13]
    assert queue.pass_snapshot(3, now_s()).member_heads == ()  # none asked: none read


def test_the_index_follows_assign_give_back_cancel_and_rescore(queue: RedisQueue) -> None:
    queue.enqueue_many([QueueEntry(1, 1.0, None, "lab/bob"), QueueEntry(2, 2.0, None, "lab/bob")])
    queue.enqueue(3, 3.0, None, "lab/carol")

    # When bob's first task is assigned, his next one heads his index (the stale entry is dropped on read)
    assert queue.assign(1, "node-a", [0], now_ms())
    assert sorted(queue.pass_snapshot(1, now_s(), per_member=1).member_heads) == [
        ("lab", "bob", 2),
        ("lab", "carol", 3),
    ]
    assert _member(queue, "lab/bob") == [2]
    # Given back unclaimed, it is his first again
    assert queue.return_assignment(1, "node-a")
    assert _member(queue, "lab/bob") == [1, 2]
    assert queue.client.hget(queue.keys.queued_by, "1") == "lab/bob"
    # A change of its score moves it in his index too
    queue.rescore(2, 0.5, None, "lab/bob")
    assert _member(queue, "lab/bob") == [2, 1]
    # When carol's only task is cancelled, she leaves the members once a pass reads past it
    assert queue.remove(3)
    assert queue.client.hget(queue.keys.queued_by, "3") is None
    queue.pass_snapshot(1, now_s(), per_member=1)
    assert _members(queue) == {"lab/bob"} and _member(queue, "lab/carol") == []


def test_a_rebuild_indexes_queued_tasks_by_member_again(queue: RedisQueue) -> None:
    queue.client.delete(queue.keys.members, queue.keys.member_queue("lab/bob"), queue.keys.queued_by)

    assert queue.restore_queued(7, 7.0, None, "lab/bob")
    assert queue.restore_queued_many([QueueEntry(8, 8.0, None, "lab/bob")]) == [True]

    assert _member(queue, "lab/bob") == [7, 8] and _members(queue) == {"lab/bob"}
    # a task already queued (restored again) keeps one entry
    assert not queue.restore_queued(7, 7.0, None, "lab/bob")
    assert _member(queue, "lab/bob") == [7, 8]


def test_a_person_behind_a_teammates_flood_starts_first_when_they_ran_less(make_cluster, tmp_path) -> None:
    # Given a window of 4 tasks, one GPU busy for the moment, and alice, who ran 10 GPU-hours lately
    cluster: Cluster = make_cluster(lease_ttl_s=300.0)
    cluster.policy_config = replace(cluster.policy_config, window=4, window_per_person=1)
    alice = authenticate(cluster.factory, create_token(cluster.factory, user="alice", team="lab"))
    bob = authenticate(cluster.factory, create_token(cluster.factory, user="bob", team="lab"))
    now = time.time()
    _ran(cluster, alice, submitted=now - 12 * H, started=now - 11 * H, finished=now - H, tmp=tmp_path)
    worker = Worker(cluster, "node-a", SimulatedGpus("1x24", node="node-a"), base_env=dict(os.environ))
    worker.publish_node()
    flood = [cluster.submit(alice, {"command": "true", "workdir": str(tmp_path)})[0].id for _ in range(10)]
    mine = cluster.submit(bob, {"command": "true", "workdir": str(tmp_path)})[0].id

    # When the scheduler passes with the GPU free
    decisions = Dispatcher(cluster).run_pass()

    # Then bob's task, behind alice's ten and outside the window of 4, is seen and goes first
    assert [start.task_id for start in decisions.starts] == [mine]
    assert set(flood).isdisjoint(cluster.queue.assignments())
