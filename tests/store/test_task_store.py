"""Task rows on SQLite and PostgreSQL: idempotent creation, scoped reads, compare-and-set on the lease token."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, inspect, select, text

from scheduler.errors import ConflictError, NotFoundError
from scheduler.store.db import migrate
from scheduler.store.tables import Attempt, Task, TaskUsage
from scheduler.store.tasks import Finish
from tests.store.conftest import NODE, new_task


def _count_tasks(store) -> int:
    with store.factory() as session:
        return int(session.scalar(select(func.count()).select_from(Task)) or 0)


# --- creation -----------------------------------------------------------------------------------


def test_a_created_task_is_queued_under_the_callers_team_and_user(store):
    who = store.identity("alice", "vision")
    task, created = store.tasks.create(who, new_task("python train.py", priority="high", gpus=2))
    assert created is True
    row = store.tasks.get_any(task.id)
    assert (row.status, row.team_id, row.user_id) == ("queued", who.team_id, who.user_id)
    assert (row.command, row.priority, row.gpus, row.attempts_count) == ("python train.py", "high", 2, 0)
    assert row.enqueued_at.tzinfo is not None and row.submitted_at.tzinfo is not None


def test_the_same_idempotency_key_from_the_same_user_returns_the_first_task(store):
    who = store.identity()
    first, created_first = store.tasks.create(who, new_task("echo one"), idempotency_key="k-1")
    again, created_again = store.tasks.create(who, new_task("echo two"), idempotency_key="k-1")
    assert (created_first, created_again) == (True, False)
    assert again.id == first.id
    assert again.command == "echo one"
    assert _count_tasks(store) == 1


def test_an_idempotency_key_is_scoped_to_its_user(store):
    alice, bob = store.identity("alice", "vision"), store.identity("bob", "vision")
    a, _ = store.tasks.create(alice, new_task(), idempotency_key="same")
    b, created = store.tasks.create(bob, new_task(), idempotency_key="same")
    assert created is True and a.id != b.id


def test_tasks_without_an_idempotency_key_are_always_new(store):
    who = store.identity()
    ids = {store.tasks.create(who, new_task())[0].id for _ in range(3)}
    assert len(ids) == 3


def test_concurrent_creates_with_the_same_key_make_one_row(store):
    who = store.identity()
    start = threading.Barrier(8)

    def create():
        start.wait()
        return store.tasks.create(who, new_task(), idempotency_key="double-click")

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = [future.result(timeout=60) for future in [pool.submit(create) for _ in range(8)]]
    assert len({task.id for task, _ in results}) == 1
    assert sum(created for _, created in results) == 1
    assert _count_tasks(store) == 1


# --- compare-and-set on the lease token ------------------------------------------------------------


def test_mark_running_lets_only_one_of_two_claims_win(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    assert store.tasks.mark_running(task.id, "e-1", NODE, [0]) == 1
    assert store.tasks.mark_running(task.id, "e-2", "node-b", [1]) is None
    row = store.tasks.get_any(task.id)
    assert (row.status, row.lease_token, row.node, row.gpu_indices) == ("running", "e-1", NODE, [0])
    assert [(a.number, a.token) for a in store.tasks.attempts(task.id)] == [(1, "e-1")]


def test_concurrent_mark_running_has_exactly_one_winner(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    start = threading.Barrier(6)

    def mark(token: str):
        start.wait()
        return store.tasks.mark_running(task.id, token, NODE, [0])

    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = dict(zip(range(6), pool.map(mark, [f"e-{i}" for i in range(6)]), strict=True))
    winners = [i for i, number in answers.items() if number is not None]
    assert len(winners) == 1 and answers[winners[0]] == 1
    assert store.tasks.get_any(task.id).lease_token == f"e-{winners[0]}"
    assert len(store.tasks.attempts(task.id)) == 1


def test_a_cancelled_task_cannot_be_marked_running(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    assert store.tasks.cancel_queued(task.id, "alice") is True
    assert store.tasks.mark_running(task.id, "e-1", NODE, [0]) is None
    row = store.tasks.get_any(task.id)
    assert (row.status, row.lease_token, row.message) == ("cancelled", None, "cancelled by alice")
    assert store.tasks.attempts(task.id) == []
    assert store.tasks.cancel_queued(task.id, "alice") is False


def test_finish_with_a_stale_token_returns_false_and_changes_nothing(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    store.tasks.mark_running(task.id, "e-2", NODE, [0])
    before = store.tasks.get_any(task.id)
    assert store.tasks.finish(task.id, "e-1", "succeeded", exit_code=0, reason="exit") is False
    after = store.tasks.get_any(task.id)
    assert (after.status, after.finished_at, after.exit_code, after.reason) == ("running", None, None, None)
    assert after.lease_token == before.lease_token == "e-2"
    assert store.tasks.attempts(task.id)[0].finished_at is None


def test_finish_with_the_current_token_closes_the_task_and_its_attempt(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    store.tasks.mark_running(task.id, "e-1", NODE, [0])
    assert store.tasks.finish(task.id, "e-1", "failed", exit_code=3, reason="nonzero_exit") is True
    row = store.tasks.get_any(task.id)
    assert (row.status, row.exit_code, row.reason) == ("failed", 3, "nonzero_exit")
    assert row.finished_at is not None
    (attempt,) = store.tasks.attempts(task.id)
    assert (attempt.outcome, attempt.exit_code, attempt.reason) == ("failed", 3, "nonzero_exit")
    assert store.tasks.finish(task.id, "e-1", "succeeded", exit_code=0, reason="exit") is False


def test_finish_refuses_a_status_that_is_not_final(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    store.tasks.mark_running(task.id, "e-1", NODE, [0])
    with pytest.raises(ValueError, match="not a final status"):
        store.tasks.finish(task.id, "e-1", "queued", exit_code=None, reason="exit")


def test_a_requeued_task_is_claimed_again_and_the_old_token_is_fenced_out(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    store.tasks.mark_running(task.id, "e-1", NODE, [0])
    assert store.tasks.requeue(task.id, "stale", "lost_worker") is None
    enqueued_at = store.tasks.requeue(task.id, "e-1", "lost_worker", "the worker stopped heartbeating")
    assert enqueued_at is not None and enqueued_at.tzinfo is not None
    row = store.tasks.get_any(task.id)
    assert (row.status, row.lease_token, row.node, row.reason) == ("queued", None, None, "lost_worker")
    assert store.tasks.mark_running(task.id, "e-2", "node-b", [1]) == 2
    assert store.tasks.finish(task.id, "e-1", "succeeded", exit_code=0, reason="exit") is False
    assert store.tasks.requeue(task.id, "e-1", "lost_worker") is None
    assert store.tasks.finish(task.id, "e-2", "succeeded", exit_code=0, reason="exit") is True
    attempts = store.tasks.attempts(task.id)
    assert [(a.number, a.token, a.node, a.outcome) for a in attempts] == [
        (1, "e-1", NODE, "retried"),
        (2, "e-2", "node-b", "succeeded"),
    ]


def test_attempts_are_numbered_one_to_n(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    for number in range(1, 5):
        assert store.tasks.mark_running(task.id, f"e-{number}", NODE, [0]) == number
        assert store.tasks.requeue(task.id, f"e-{number}", "nonzero_exit") is not None
    assert [a.number for a in store.tasks.attempts(task.id)] == [1, 2, 3, 4]
    assert store.tasks.get_any(task.id).attempts_count == 4


def test_record_pid_lands_on_the_attempt_of_that_claim(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    store.tasks.mark_running(task.id, "e-1", NODE, [0])
    store.tasks.record_pid(task.id, "e-1", 4242)
    assert store.tasks.attempts(task.id)[0].pid == 4242


def test_request_cancel_flags_a_running_task_and_refuses_a_finished_one(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    store.tasks.mark_running(task.id, "e-1", NODE, [0])
    assert store.tasks.request_cancel(task.id).cancel_requested is True
    store.tasks.finish(task.id, "e-1", "cancelled", exit_code=-15, reason="cancelled")
    with pytest.raises(ConflictError, match="already cancelled"):
        store.tasks.request_cancel(task.id)


def test_fail_queued_fails_only_a_queued_task(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    assert store.tasks.fail_queued(task.id, "dependency_failed", "task 1 failed") is True
    row = store.tasks.get_any(task.id)
    assert (row.status, row.reason, row.message) == ("failed", "dependency_failed", "task 1 failed")
    assert store.tasks.fail_queued(task.id, "dependency_failed", "again") is False


def test_statuses_and_counts_reflect_the_rows(store):
    who = store.identity()
    ids = [store.tasks.create(who, new_task())[0].id for _ in range(3)]
    store.tasks.cancel_queued(ids[0], "alice")
    store.tasks.mark_running(ids[1], "e-1", NODE, [0])
    assert store.tasks.statuses([*ids, 999]) == {ids[0]: "cancelled", ids[1]: "running", ids[2]: "queued"}
    assert store.tasks.count_by_status() == {"cancelled": 1, "running": 1, "queued": 1}
    assert [row.id for row in store.tasks.with_status("queued", "running")] == [ids[1], ids[2]]
    assert set(store.tasks.by_ids([ids[2], 999])) == {ids[2]}


# --- scoping ---------------------------------------------------------------------------------------


def test_another_teams_task_answers_exactly_like_a_missing_one(store):
    alice, carol = store.identity("alice", "vision"), store.identity("carol", "nlp")
    task, _ = store.tasks.create(alice, new_task())
    with pytest.raises(NotFoundError) as hidden:
        store.tasks.get_for(carol, task.id)
    with pytest.raises(NotFoundError) as missing:
        store.tasks.get_for(carol, task.id + 1000)
    assert hidden.value.message == f"task {task.id} not found"
    assert missing.value.message == f"task {task.id + 1000} not found"
    assert store.tasks.get_for(alice, task.id).id == task.id


def test_a_teammate_and_an_admin_see_a_task(store):
    alice, bob = store.identity("alice", "vision"), store.identity("bob", "vision")
    admin = store.identity("root", "ops", admin=True)
    task, _ = store.tasks.create(alice, new_task())
    assert store.tasks.get_for(bob, task.id).id == task.id
    assert store.tasks.get_for(admin, task.id).id == task.id


def test_list_for_shows_only_the_callers_team_newest_first(store):
    alice, carol = store.identity("alice", "vision"), store.identity("carol", "nlp")
    mine = [store.tasks.create(alice, new_task())[0].id for _ in range(3)]
    theirs = store.tasks.create(carol, new_task())[0].id
    store.tasks.cancel_queued(mine[0], "alice")
    assert [t.id for t in store.tasks.list_for(alice)] == mine[::-1]
    assert [t.id for t in store.tasks.list_for(alice, status="queued")] == [mine[2], mine[1]]
    assert [t.id for t in store.tasks.list_for(alice, team="nlp")] == mine[::-1]  # not an admin: ignored
    assert [t.id for t in store.tasks.list_for(carol)] == [theirs]
    assert [t.id for t in store.tasks.list_for(alice, limit=1, offset=1)] == [mine[1]]


def test_an_admin_lists_every_team_or_filters_by_team_name(store):
    alice, carol = store.identity("alice", "vision"), store.identity("carol", "nlp")
    admin = store.identity("root", "ops", admin=True)
    a = store.tasks.create(alice, new_task())[0].id
    c = store.tasks.create(carol, new_task())[0].id
    assert [t.id for t in store.tasks.list_for(admin)] == [c, a]
    assert [t.id for t in store.tasks.list_for(admin, team="vision")] == [a]
    assert [t.id for t in store.tasks.list_for(admin, team="nlp", status="queued")] == [c]
    assert store.tasks.list_for(admin, team="nobody") == []


# --- schema ------------------------------------------------------------------------------------------


def test_migrating_twice_changes_nothing_and_keeps_the_rows(store):
    task, _ = store.tasks.create(store.identity(), new_task())
    migrate(store.engine)
    migrate(store.engine)
    with store.engine.connect() as connection:
        versions = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    assert len(versions) == 1
    assert {"teams", "users", "api_tokens", "tasks", "attempts"} <= set(
        inspect(store.engine).get_table_names()
    )
    assert store.tasks.get_any(task.id).status == "queued"


def test_the_migrated_schema_matches_the_models(store):
    tables = {"tasks": Task, "attempts": Attempt, "task_usage": TaskUsage}
    for name, model in tables.items():
        assert {c["name"] for c in inspect(store.engine).get_columns(name)} == {
            c.name for c in model.__table__.columns
        }


def test_mark_running_many_starts_the_queued_ones_in_one_go_and_leaves_the_others_alone(store):
    who = store.identity()
    tasks = [store.tasks.create(who, new_task())[0] for _ in range(4)]
    assert store.tasks.cancel_queued(tasks[1].id, "alice")
    store.tasks.mark_running(tasks[2].id, "e-0", "node-b", [3])  # another claim got there first
    claims = [(task.id, f"e-{task.id}", (task.id % 4,)) for task in tasks]

    started = store.tasks.mark_running_many(NODE, claims)

    assert started == {tasks[0].id: 1, tasks[3].id: 1}
    rows = store.tasks.by_ids(t.id for t in tasks)
    assert [rows[t.id].status for t in tasks] == ["running", "cancelled", "running", "running"]
    assert rows[tasks[3].id].lease_token == f"e-{tasks[3].id}"
    assert rows[tasks[3].id].gpu_indices == [tasks[3].id % 4]
    assert rows[tasks[2].id].lease_token == "e-0"  # untouched
    (attempt,) = store.tasks.attempts(tasks[3].id)
    assert (attempt.number, attempt.token, attempt.node) == (1, f"e-{tasks[3].id}", NODE)
    assert store.tasks.attempts(tasks[1].id) == []


def test_a_claim_decided_on_an_older_revision_of_the_row_is_refused(store):
    who = store.identity()
    changed, same = (store.tasks.create(who, new_task())[0] for _ in range(2))
    assert store.tasks.update_queued(changed.id, new_task(priority="high"))  # revision 0 -> 1
    claims = [(changed.id, "e-1", (0,)), (same.id, "e-2", (1,))]

    started = store.tasks.mark_running_many(NODE, claims, {changed.id: 0, same.id: 0})

    assert started == {same.id: 1}
    assert store.tasks.get_any(changed.id).status == "queued"
    assert store.tasks.mark_running(changed.id, "e-3", NODE, [0], revision=1) == 1


def test_finish_many_closes_only_the_tasks_whose_claim_still_holds(store):
    who = store.identity()
    tasks = [store.tasks.create(who, new_task())[0] for _ in range(3)]
    for task in tasks:
        store.tasks.mark_running(task.id, f"e-{task.id}", NODE, [0])
    finishes = [
        Finish(tasks[0].id, f"e-{tasks[0].id}", "succeeded", 0, "exit"),
        Finish(tasks[1].id, "stale", "succeeded", 0, "exit"),
        Finish(tasks[2].id, f"e-{tasks[2].id}", "cancelled", -15, "cancelled", "cancelled by bob"),
    ]

    assert store.tasks.finish_many(finishes) == {tasks[0].id, tasks[2].id}

    rows = store.tasks.by_ids(t.id for t in tasks)
    assert [rows[t.id].status for t in tasks] == ["succeeded", "running", "cancelled"]
    assert (rows[tasks[2].id].exit_code, rows[tasks[2].id].message) == (-15, "cancelled by bob")
    assert [store.tasks.attempts(t.id)[0].outcome for t in tasks] == ["succeeded", None, "cancelled"]
    with pytest.raises(ValueError, match="not a final status"):
        store.tasks.finish_many([Finish(tasks[1].id, f"e-{tasks[1].id}", "running", None, "exit")])
    assert store.tasks.get_any(tasks[1].id).status == "running"


def test_record_pids_lands_each_pid_on_its_own_claims_attempt(store):
    who = store.identity()
    tasks = [store.tasks.create(who, new_task())[0] for _ in range(3)]
    for task in tasks:
        store.tasks.mark_running(task.id, f"e-{task.id}", NODE, [0])
    store.tasks.record_pids([(t.id, f"e-{t.id}", 1000 + t.id) for t in tasks] + [(tasks[0].id, "stale", 1)])
    assert [store.tasks.attempts(t.id)[0].pid for t in tasks] == [1000 + t.id for t in tasks]
