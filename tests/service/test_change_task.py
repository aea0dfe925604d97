"""Changing a queued task (`PATCH /tasks/{id}`, `nightshift change`): the fields that decide when it starts
change and it keeps its age; the fields that decide what runs or where do not, and a refused change leaves
the task exactly as it was."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from api.main import create_app
from scheduler.clock import now_ms
from scheduler.cluster_state import RowCache, UsageCache, gather_state
from scheduler.dispatcher import Dispatcher
from scheduler.errors import ConflictError, NotFoundError, SpecError
from scheduler.gpus import SimulatedGpus
from scheduler.policy.types import PriorityClass
from scheduler.service import Cluster
from scheduler.store.tables import Task
from scheduler.worker import Worker
from tests.conftest import wait_until

NODE = "node-a"
LATER = (datetime.now(UTC) + timedelta(hours=2)).isoformat()


def _queue_order(cluster: Cluster) -> list[int]:
    return [task_id for task_id, _ in cluster.queue.head(100)]


def _snapshot(cluster: Cluster, task_id: int) -> tuple[object, ...]:
    row = cluster.tasks.get_any(task_id)
    score = dict(cluster.queue.head(100)).get(task_id)
    return (row.status, row.priority, row.name, row.retries, row.spec, row.enqueued_at, score)


def test_a_higher_priority_moves_a_queued_task_ahead_and_it_keeps_its_age(cluster, make_identity):
    who, _ = make_identity()
    first, _ = cluster.submit(who, {"command": "python a.py", "gpus": 1})
    second, _ = cluster.submit(who, {"command": "python b.py", "gpus": 1})
    before = _queue_order(cluster)

    changed = cluster.update(who, second.id, {"priority": "urgent", "name": "b-urgent"})

    assert before == [first.id, second.id]
    assert _queue_order(cluster) == [second.id, first.id]
    assert (changed.priority, changed.name, changed.spec["priority"]) == ("urgent", "b-urgent", "urgent")
    assert changed.enqueued_at == second.enqueued_at and changed.spec["command"] == "python b.py"


def test_dropping_a_not_before_time_lets_the_task_start_now(cluster, make_identity, run_in_thread, tmp_path):
    who, _ = make_identity()
    task, _ = cluster.submit(
        who, {"command": "echo now", "gpus": 1, "not_before": LATER, "workdir": str(tmp_path)}
    )
    worker = Worker(cluster, NODE, SimulatedGpus("1x24", node=NODE), base_env=dict(os.environ))
    worker.publish_node()
    run_in_thread(Dispatcher(cluster).run)
    run_in_thread(worker.run)

    cluster.update(who, task.id, {"not_before": None})  # it was to wait two hours

    wait_until(lambda: cluster.tasks.get_any(task.id).status == "succeeded")


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"gpus": 4}, "gpus cannot change once a task is queued"),
        ({"command": "rm -rf /"}, "command cannot change once a task is queued"),
        ({"gpu_memory_gb": 80, "priority": "high"}, "submit it again with `nightshift submit --like"),
        ({"colour": "blue"}, "colour is not a task spec field; these can change: name, priority"),
        ({"priority": "asap"}, "priority"),
        ({"time_limit_minutes": -5}, "time_limit_minutes"),
        ({"deadline": "2001-01-01T00:00:00+00:00"}, "deadline"),
        ({}, "nothing to change"),
    ],
)
def test_a_refused_change_says_what_to_fix_and_leaves_the_task_as_it_was(
    cluster, make_identity, changes, expected
):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "python train.py", "gpus": 1})
    before = _snapshot(cluster, task.id)

    with pytest.raises(SpecError) as refused:
        cluster.update(who, task.id, changes)

    assert expected in refused.value.message
    assert _snapshot(cluster, task.id) == before


def test_the_running_scheduler_sees_a_change_at_its_next_pass(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1, "not_before": LATER})
    rows, usage = RowCache(), UsageCache(cluster)  # the scheduler keeps both from pass to pass
    before = gather_state(cluster, usage, 16, rows).queued

    cluster.update(who, task.id, {"not_before": None, "priority": "urgent"})
    after = gather_state(cluster, usage, 16, rows).queued

    assert [(t.task_id, t.priority, t.not_before_s is None) for t in before] == [
        (task.id, PriorityClass.NORMAL, False)
    ]
    assert [(t.task_id, t.priority, t.not_before_s) for t in after] == [(task.id, PriorityClass.URGENT, None)]


def test_a_change_between_a_pass_reading_versions_and_loading_rows_keeps_the_task_queued(
    cluster, make_identity
):
    """The pass read the row's version, then the change committed, then it loaded the row: the task is
    still queued (with its new spec), not a stale entry to drop from the queue."""
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1, "not_before": LATER})
    versions = cluster.tasks.queued_versions([task.id])

    cluster.update(who, task.id, {"not_before": None})
    views = RowCache().queued_views(cluster, [task.id], versions)
    state = gather_state(cluster, UsageCache(cluster), 16, RowCache())

    assert [(view.task_id, view.not_before_s) for view in views.values()] == [(task.id, None)]
    assert [queued.task_id for queued in state.queued] == [task.id]


def test_a_task_whose_deadline_passed_while_it_waited_can_still_change(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1, "deadline": LATER})
    passed = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    with cluster.factory() as session, session.begin():
        session.execute(update(Task).where(Task.id == task.id).values(spec={**task.spec, "deadline": passed}))

    changed = cluster.update(who, task.id, {"priority": "urgent"})

    assert (changed.priority, changed.spec["deadline"]) == ("urgent", passed)


def test_only_a_queued_task_of_ones_own_team_can_change(cluster, make_identity):
    who, _ = make_identity()
    other_team, _ = make_identity("bob", "nlp")
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1})

    with pytest.raises(NotFoundError):
        cluster.update(other_team, task.id, {"priority": "urgent"})
    cluster.cancel(who, task.id)
    with pytest.raises(
        ConflictError, match="already cancelled; only a queued or running task can be changed"
    ):
        cluster.update(who, task.id, {"priority": "urgent"})
    assert cluster.tasks.get_any(task.id).priority == "normal"


def test_a_task_a_node_has_claimed_is_refused_and_starts_as_it_was(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1})
    assert cluster.queue.assign(task.id, NODE, [0], now_ms())
    claim = cluster.queue.claim(NODE, now_ms(), 60_000)
    assert claim is not None

    with pytest.raises(ConflictError, match=f"task {task.id} is starting on {NODE}"):
        cluster.update(who, task.id, {"priority": "urgent", "not_before": LATER})

    assert cluster.tasks.get_any(task.id).priority == "normal"
    assert cluster.tasks.mark_running(task.id, claim.token, NODE, claim.gpu_indices) == 1


def test_an_assigned_task_not_yet_claimed_changes_and_goes_back_to_the_queue(cluster, make_identity):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1})
    assert cluster.queue.assign(task.id, NODE, [0], now_ms())

    cluster.update(who, task.id, {"not_before": LATER})

    assert cluster.queue.claim(NODE, now_ms(), 60_000) is None  # its node can no longer take it
    assert task.id in cluster.queue.queued_ids()
    assert cluster.tasks.get_any(task.id).spec["not_before"] == LATER


def test_a_held_task_changes_and_stays_held_until_released(cluster, make_identity):
    who, _ = make_identity()
    first, _ = cluster.submit(who, {"command": "python a.py", "gpus": 1})
    held, _ = cluster.submit(who, {"command": "python b.py", "gpus": 1})
    cluster.hold(who, held.id)

    cluster.update(who, held.id, {"priority": "urgent"})
    while_held = _queue_order(cluster)
    cluster.release(who, held.id)

    assert while_held == [first.id]
    assert _queue_order(cluster) == [held.id, first.id]


def test_the_api_changes_a_task_and_answers_422_and_409_with_what_to_do(cluster, make_identity):
    _, token = make_identity()
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(cluster)) as api:
        task = api.post("/api/v1/tasks", json={"command": "true", "gpus": 1}, headers=headers).json()
        path = f"/api/v1/tasks/{task['id']}"
        changed = api.patch(
            path, json={"priority": "high", "offpeak": True, "tags": ["ablation"]}, headers=headers
        )
        refused = api.patch(path, json={"gpus": 2}, headers=headers)
        not_an_object = api.patch(path, json=["priority", "high"], headers=headers)
        empty = api.patch(path, json={}, headers=headers)
        api.post(f"{path}/cancel", headers=headers)
        too_late = api.patch(path, json={"priority": "low"}, headers=headers)

    assert changed.status_code == 200, changed.text
    body = changed.json()
    assert (body["priority"], body["spec"]["offpeak"], body["spec"]["tags"]) == ("high", True, ["ablation"])
    assert refused.status_code == 422
    assert refused.json()["detail"].startswith("gpus cannot change once a task is queued")
    assert f"--like {task['id']}" in refused.json()["detail"]
    assert not_an_object.status_code == 422
    assert empty.status_code == 422 and "send one or more of these fields: name, priority" in empty.text
    assert [item["field"] for item in empty.json()["errors"]] == [None]
    assert (
        too_late.status_code == 409
        and "only a queued or running task can be changed" in too_late.json()["detail"]
    )


def test_tasks_changed_again_and_again_while_the_cluster_runs_each_run_exactly_once(
    cluster, make_identity, run_in_thread, tmp_path
):
    who, _ = make_identity()
    ids = [
        cluster.submit(who, {"command": f"sleep 0.0{i % 5}", "gpus": 1, "workdir": str(tmp_path)})[0].id
        for i in range(24)
    ]
    worker = Worker(cluster, NODE, SimulatedGpus("2x24", node=NODE), base_env=dict(os.environ))
    worker.publish_node()
    run_in_thread(Dispatcher(cluster).run)
    run_in_thread(worker.run)
    priorities = ["low", "normal", "high", "urgent"]
    changes = refused = 0

    def all_done() -> bool:
        return all(cluster.tasks.get_any(i).status == "succeeded" for i in ids)

    round_ = 0
    while not all_done():
        for n, task_id in enumerate(ids):
            try:  # a change that races the task's claim is refused; one that wins re-queues it
                cluster.update(
                    who, task_id, {"priority": priorities[(n + round_) % 4], "retries": round_ % 3}
                )
                changes += 1
            except ConflictError:
                refused += 1
        round_ += 1
        assert round_ < 2000, "the tasks did not finish while being changed"

    rows = [cluster.tasks.get_any(i) for i in ids]
    assert [row.attempts_count for row in rows] == [1] * len(ids)  # none ran twice, none was lost
    assert changes > 0 and refused > 0
    assert cluster.queue.length() == 0 and cluster.queue.assignments() == {}


def test_a_change_that_lands_while_the_scheduler_decides_wins_and_the_task_waits(
    cluster, make_identity, tmp_path
):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1, "workdir": str(tmp_path)})
    worker = Worker(cluster, NODE, SimulatedGpus("1x24", node=NODE), base_env=dict(os.environ))
    worker.publish_node()

    class ChangedMidPass(Dispatcher):
        def _decide(self, state):  # the user's change commits between the pass's read and its assignment
            decisions = super()._decide(state)
            cluster.update(who, task.id, {"not_before": LATER})
            return decisions

    stale = ChangedMidPass(cluster).run_pass()
    worker.step()  # claims the stale start and refuses it
    again = Dispatcher(cluster).run_pass()

    assert [start.task_id for start in stale.starts] == [task.id]
    row = cluster.tasks.get_any(task.id)
    assert (row.status, row.attempts_count, row.spec["not_before"]) == ("queued", 0, LATER)
    assert again.starts == () and task.id in cluster.queue.queued_ids()
    assert cluster.queue.leased_gpus([task.id]) == {}


def test_a_held_task_released_and_started_while_it_changes_runs_only_as_changed(
    cluster, make_identity, monkeypatch, tmp_path
):
    who, _ = make_identity()
    task, _ = cluster.submit(who, {"command": "true", "gpus": 1, "workdir": str(tmp_path)})
    cluster.hold(who, task.id)
    worker = Worker(cluster, NODE, SimulatedGpus("1x24", node=NODE), base_env=dict(os.environ))
    worker.publish_node()
    store_update = cluster.tasks.update_queued
    raced = []

    def released_and_started_first(task_id, new, class_limit=None):  # both land after the change read it
        if not raced:
            cluster.release(who, task_id)
            raced.extend(Dispatcher(cluster).run_pass().starts)
        return store_update(task_id, new, class_limit)

    monkeypatch.setattr(cluster.tasks, "update_queued", released_and_started_first)

    changed = cluster.update(who, task.id, {"priority": "urgent", "not_before": LATER})
    worker.step()  # the node claims the start decided on the old spec, and refuses it

    row = cluster.tasks.get_any(task.id)
    assert [start.task_id for start in raced] == [task.id]
    assert (changed.priority, row.status, row.attempts_count, row.spec["not_before"]) == (
        "urgent",
        "queued",
        0,
        LATER,
    )
    assert dict(cluster.queue.head(10)) == {task.id: cluster.score(row)}
    assert Dispatcher(cluster).run_pass().starts == ()  # not before two hours from now
