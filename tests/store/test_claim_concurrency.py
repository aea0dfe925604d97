"""The Lua claim under concurrent workers: each assigned task is leased exactly once, with a unique token."""

from __future__ import annotations

import multiprocessing
import queue as queue_module
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from scheduler.store.queue import RedisQueue
from tests.store.claimers import LEASE_TTL_MS, claim_in_process, claim_until_empty
from tests.store.conftest import NODE, fill_inbox

TASKS = 300


def _assert_each_claimed_once(queue: RedisQueue, claims: list[tuple[int, str]]) -> None:
    task_ids = [task_id for task_id, _ in claims]
    tokens = [token for _, token in claims]
    duplicates = [task_id for task_id, count in Counter(task_ids).items() if count > 1]
    assert duplicates == []
    assert sorted(task_ids) == list(range(1, TASKS + 1))
    assert len(set(tokens)) == len(tokens)
    epoch = queue.epoch()
    assert all(token.startswith(f"{epoch}-") for token in tokens)
    # every claim left a lease with its own token, and nothing is left assigned or in the inbox
    leases = {task_id: queue.lease(task_id) for task_id in task_ids}
    assert {task_id: lease.token for task_id, lease in leases.items() if lease} == dict(claims)
    assert queue.client.llen(queue.keys.inbox(NODE)) == 0
    assert queue.assignments() == {}
    assert queue.client.zcard(queue.keys.leases) == TASKS


def test_eight_threads_claim_every_task_exactly_once_with_unique_tokens(queue, redis_url):
    fill_inbox(queue, range(1, TASKS + 1))
    start = threading.Barrier(8)

    def claimer() -> list[tuple[int, str]]:
        start.wait()
        return claim_until_empty(redis_url, NODE)

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(claimer) for _ in range(8)]
        claims = [claim for future in futures for claim in future.result(timeout=60)]
    _assert_each_claimed_once(queue, claims)


def test_four_processes_claim_every_task_exactly_once_with_unique_tokens(queue, redis_url):
    fill_inbox(queue, range(1, TASKS + 1))
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(4)
    results = context.Queue()
    processes = [
        context.Process(target=claim_in_process, args=(redis_url, NODE, start, results)) for _ in range(4)
    ]
    for process in processes:
        process.start()
    try:
        per_process = [results.get(timeout=60) for _ in processes]
    except queue_module.Empty:
        raise AssertionError("a claiming process sent no result") from None
    finally:
        for process in processes:
            process.join(timeout=30)
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]
    _assert_each_claimed_once(queue, [claim for claims in per_process for claim in claims])


def test_a_claim_under_another_node_name_takes_nothing_from_this_nodes_inbox(queue):
    fill_inbox(queue, [1, 2, 3])
    assert queue.claim("node-b", 1_000, LEASE_TTL_MS) is None
    assert queue.client.lrange(queue.keys.inbox(NODE), 0, -1) == ["1", "2", "3"]
    assert set(queue.assignments()) == {1, 2, 3}
    assert [queue.claim(NODE, 1_000, LEASE_TTL_MS).task_id for _ in range(3)] == [1, 2, 3]


def test_a_claim_leases_the_gpus_of_the_assignment_in_assignment_order(queue):
    queue.enqueue(7, 1.0)
    queue.enqueue(8, 2.0)
    assert queue.assign(8, NODE, [2, 3], 100)
    assert queue.assign(7, NODE, [0], 100)
    first = queue.claim(NODE, 1_000, 5_000)
    second = queue.claim(NODE, 1_000, 5_000)
    assert (first.task_id, first.gpu_indices) == (8, (2, 3))
    assert (second.task_id, second.gpu_indices) == (7, (0,))
    lease = queue.lease(8)
    assert (lease.node, lease.token, lease.gpu_indices, lease.expires_ms) == (
        NODE,
        first.token,
        (2, 3),
        6_000,
    )
    assert queue.claim(NODE, 1_000, 5_000) is None


def test_an_inbox_entry_whose_assignment_was_cancelled_is_skipped(queue):
    fill_inbox(queue, [1, 2, 3])
    assert queue.unassign(2) == (NODE, (2,))
    claimed = [queue.claim(NODE, 1_000, LEASE_TTL_MS) for _ in range(3)]
    assert [claim.task_id if claim else None for claim in claimed] == [1, 3, None]
    assert queue.lease(2) is None
    assert queue.assignments() == {}


def test_unassigning_a_task_twice_answers_none_the_second_time(queue):
    fill_inbox(queue, [1])
    assert queue.unassign(1) == (NODE, (1,))
    assert queue.unassign(1) is None


def test_assign_of_a_task_no_longer_in_the_queue_returns_false(queue):
    queue.enqueue(1, 1.0)
    queue.enqueue(2, 2.0)
    assert queue.remove(1)
    assert queue.assign(1, NODE, [0], 0) is False  # cancelled
    assert queue.assign(2, NODE, [0], 0) is True
    assert queue.assign(2, "node-b", [1], 0) is False  # already assigned elsewhere
    assert queue.assign(99, NODE, [0], 0) is False  # never queued
    assert queue.assignments() == {2: (NODE, (0,))}
    assert queue.client.lrange(queue.keys.inbox("node-b"), 0, -1) == []


def test_assign_many_assigns_each_task_in_one_round_trip_as_assign_would(queue):
    # Given three queued tasks, one of them cancelled, and Redis not yet holding the script
    for task_id in (1, 2, 3):
        queue.enqueue(task_id, float(task_id))
    assert queue.remove(2)
    queue.client.script_flush()
    # When a pass assigns them to two nodes, and task 3 twice
    done = queue.assign_many([(1, NODE, (0,)), (2, NODE, (1,)), (3, "node-b", (0, 1)), (3, NODE, (1,))], 5)
    # Then each answer is what `assign` would have said in that order, and only the assigned moved
    assert done == [True, False, True, False]
    assert queue.assignments() == {1: (NODE, (0,)), 3: ("node-b", (0, 1))}
    assert queue.client.lrange(queue.keys.inbox(NODE), 0, -1) == ["1"]
    assert queue.client.lrange(queue.keys.inbox("node-b"), 0, -1) == ["3"]
    assert queue.length() == 0 and queue.assign_many([], 5) == []


def test_assign_rings_the_node_doorbell_once_however_many_tasks(queue):
    fill_inbox(queue, [1, 2, 3])
    assert queue.client.llen(queue.keys.node_doorbell(NODE)) == 1
    assert queue.wait_node_doorbell(NODE, 0.1) is True


def test_a_stale_inbox_entry_does_not_take_the_tasks_new_assignment_from_another_node(queue):
    fill_inbox(queue, [1])
    # Redis lost the assignment but not the inbox entry; the rebuild queued the task again,
    # and the scheduler gave it to node-b this time
    queue.client.delete(queue.keys.assignment(1))
    queue.client.srem(queue.keys.assigned, "1")
    queue.enqueue(1, 1.0)
    assert queue.assign(1, "node-b", [3], 0)
    assert queue.claim(NODE, 1_000, LEASE_TTL_MS) is None
    assert queue.assignments() == {1: ("node-b", (3,))}
    claim = queue.claim("node-b", 1_000, LEASE_TTL_MS)
    assert claim is not None and (claim.task_id, claim.gpu_indices) == (1, (3,))


def test_a_claim_carries_the_row_revision_its_start_was_decided_on(queue):
    queue.enqueue(7, 1.0)
    queue.enqueue(8, 2.0)
    assert queue.assign_many([(7, NODE, [0]), (8, NODE, [1])], 100, {7: 3})
    first, second = queue.claim_many(NODE, 1_000, 5_000, 2)
    assert (first.task_id, first.revision) == (7, 3)
    assert (second.task_id, second.revision) == (8, None)  # a start that named none


def test_claim_many_takes_at_most_the_limit_in_inbox_order_skipping_cancelled_entries(queue):
    fill_inbox(queue, [1, 2, 3, 4, 5])
    assert queue.unassign(2) == (NODE, (2,))

    first = queue.claim_many(NODE, 1_000, LEASE_TTL_MS, 3)
    rest = queue.claim_many(NODE, 1_000, LEASE_TTL_MS, 10)

    assert [(c.task_id, c.gpu_indices) for c in first] == [(1, (1,)), (3, (3,)), (4, (0,))]
    assert [c.task_id for c in rest] == [5]
    assert len({c.token for c in first + rest}) == 4
    assert all(queue.lease(c.task_id).token == c.token for c in first + rest)
    assert queue.claim_many(NODE, 1_000, LEASE_TTL_MS, 10) == []
    assert queue.assignments() == {}


def test_claim_many_without_an_epoch_claims_nothing_and_keeps_the_inbox(queue):
    fill_inbox(queue, [1, 2])
    queue.client.delete(queue.keys.epoch)
    assert queue.claim_many(NODE, 1_000, LEASE_TTL_MS, 10) == []
    assert queue.client.llen(queue.keys.inbox(NODE)) == 2


def test_release_many_drops_only_the_leases_still_held_and_rings_the_scheduler_once(queue):
    fill_inbox(queue, [1, 2, 3])
    claims = queue.claim_many(NODE, 1_000, LEASE_TTL_MS, 3)
    queue.client.delete(queue.keys.scheduler_doorbell)

    answers = queue.release_many([(1, claims[0].token), (2, "stale"), (3, claims[2].token)])

    assert answers == [True, False, True]
    assert (queue.lease(1), queue.lease(3)) == (None, None)
    assert queue.lease(2).token == claims[1].token
    assert queue.client.llen(queue.keys.scheduler_doorbell) == 1
    assert queue.renew_many([(2, claims[1].token), (1, claims[0].token)], 2_000, LEASE_TTL_MS) == [1, -1]
