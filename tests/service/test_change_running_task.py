"""Changing a running task's time limit (`PATCH /tasks/{id}`, `nightshift change`, the chat's "give task 5
2 more hours"): the worker running it applies the new limit on its next loop, so more time lets it finish and
less stops it; what decides when or where it started cannot change, and a limit it has already run past is
refused rather than stopping it at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from assistant.agent import Assistant
from assistant.client import AssistantClient
from scheduler import service
from scheduler.errors import ConflictError, SpecError
from scheduler.service import Cluster
from scheduler.store.identity import Identity
from scheduler.store.queue import announced_time_limit
from scheduler.store.tables import Task
from tests.assistant.conftest import AppTransport, new_endpoints
from tests.conftest import wait_until

NODE = "node-a"


def _running(cluster: Cluster, who: Identity, command: str, limit_minutes: float, workdir: Path) -> Task:
    """A task of `who` running `command` with a time limit, once it runs."""
    spec = {"command": command, "time_limit_minutes": limit_minutes, "workdir": str(workdir)}
    task = cluster.submit(who, spec)[0]
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "running")
    return task


@pytest.fixture
def no_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let a test set a limit seconds ahead of what the task has run (the service asks a minute more)."""
    monkeypatch.setattr(service, "MIN_TIME_LEFT_S", 0.0)


def test_more_time_lets_a_running_task_finish_past_its_first_limit(
    cluster, make_identity, start_worker, tmp_path: Path, no_margin
):
    # Given a 9-second task with a 6-second limit, running (room for a slow machine to change it in time)
    who, _ = make_identity()
    start_worker()
    task = _running(cluster, who, "sleep 9; echo done", 0.1, tmp_path)
    revision = cluster.tasks.get_any(task.id).revision

    # When its limit is raised to a minute while it runs
    changed = cluster.update(who, task.id, {"time_limit_minutes": 1})

    # Then it runs on past its first limit and succeeds, and the row holds the new limit
    assert changed.status == "running" and changed.spec["time_limit_minutes"] == 1
    assert changed.revision == revision + 1
    wait_until(lambda: cluster.tasks.get_any(task.id).status != "running", timeout_s=30)
    row = cluster.tasks.get_any(task.id)
    assert (row.status, row.exit_code) == ("succeeded", 0), (row.reason, row.message)
    assert "done" in cluster.log_path(task.id).read_text()


def test_a_lower_limit_stops_a_running_task_as_a_timeout(
    cluster, make_identity, start_worker, tmp_path: Path, no_margin
):
    # Given a long task with a 10-minute limit, running
    who, _ = make_identity()
    start_worker()
    task = _running(cluster, who, "sleep 300", 10, tmp_path)

    # When its limit is lowered to 5 seconds from its start
    cluster.update(who, task.id, {"time_limit_minutes": 5 / 60})

    # Then its worker stops it as it would any task past its limit
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "failed", timeout_s=30)
    assert cluster.tasks.get_any(task.id).reason == "timeout"


def test_a_running_task_changes_only_how_long_it_may_run_and_a_limit_it_has_run_past_is_refused(
    cluster, make_identity, start_worker, tmp_path: Path
):
    who, _ = make_identity()
    start_worker()
    task = _running(cluster, who, "sleep 300", 10, tmp_path)
    before = cluster.tasks.get_any(task.id)

    # what decides when or where it starts is past
    with pytest.raises(ConflictError, match=f"task {task.id} is running: priority, offpeak can no longer"):
        cluster.update(who, task.id, {"priority": "urgent", "offpeak": True})
    # what runs or where never changes: the same 422 as for a queued task, with the way to do it
    with pytest.raises(SpecError, match=f"gpus cannot change once a task is queued .* --like {task.id}"):
        cluster.update(who, task.id, {"gpus": 2, "time_limit_minutes": 20})
    # a limit it would pass within a minute stops it at once: refused, with what to give instead
    with pytest.raises(ConflictError, match=r"has run 0 min already; a 0.5-min time limit would stop it"):
        cluster.update(who, task.id, {"time_limit_minutes": 0.5})
    after = cluster.tasks.get_any(task.id)
    assert (after.spec, after.priority, after.revision) == (before.spec, before.priority, before.revision)
    assert cluster.queue.client.get(cluster.queue.keys.time_limit(task.id)) is None

    # its estimate and name may change, and its limit may go
    cluster.update(who, task.id, {"estimated_minutes": 30, "name": "longer"})
    cluster.update(who, task.id, {"time_limit_minutes": None})
    row = cluster.tasks.get_any(task.id)
    assert (row.name, row.spec["estimated_minutes"], row.spec.get("time_limit_minutes")) == (
        "longer",
        30,
        None,
    )
    raw = cluster.queue.client.get(cluster.queue.keys.time_limit(task.id))
    assert announced_time_limit(raw) == (row.lease_token, None)
    cluster.cancel(who, task.id)
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "cancelled", timeout_s=15)
    with pytest.raises(
        ConflictError, match="already cancelled; only a queued or running task can be changed"
    ):
        cluster.update(who, task.id, {"time_limit_minutes": 20})


def test_a_limit_announced_for_another_attempt_is_not_applied(
    cluster, make_identity, start_worker, tmp_path: Path
):
    # Given two running tasks; a stale announcement for the first names an earlier attempt's lease token
    who, _ = make_identity()
    worker = start_worker()
    stale, other = (_running(cluster, who, "sleep 300", 10, tmp_path) for _ in range(2))
    cluster.queue.announce_time_limit(stale.id, NODE, "an-earlier-attempt", 0.5)

    # When the second's limit is changed after it, and its worker has applied that (the same round trip
    # reads both announcements, so the stale one has been read by then)
    cluster.update(who, other.id, {"time_limit_minutes": 20})
    wait_until(lambda: (job := worker.job_of(other.id)) is not None and job.job.time_limit_s == 1200.0)

    # Then the first keeps the limit its own attempt has, and runs on
    job = worker.job_of(stale.id)
    assert job is not None and job.job.time_limit_s == 600.0
    assert cluster.tasks.get_any(stale.id).status == "running"
    assert announced_time_limit(None) is None
    assert announced_time_limit(b"tok:en:90.0") == ("tok:en", 90.0)
    for task in (stale, other):
        cluster.cancel(who, task.id)


def test_the_api_and_the_chat_give_a_running_task_more_time(
    cluster, make_identity, start_worker, tmp_path: Path
):
    who, token = make_identity("alice", "vision")
    worker = start_worker()
    task = _running(cluster, who, "sleep 300", 10, tmp_path)
    headers = {"Authorization": f"Bearer {token}"}
    with TestClient(create_app(cluster)) as api:
        # PATCH answers 200 with the new limit, 409 with what can change
        patched = api.patch(f"/api/v1/tasks/{task.id}", json={"time_limit_minutes": 20}, headers=headers)
        refused = api.patch(f"/api/v1/tasks/{task.id}", json={"priority": "high"}, headers=headers)
        # the chat reads "2 more hours" as the limit it has plus two hours, on a card to confirm
        client = AssistantClient("http://testserver", token, transport=AppTransport(api, new_endpoints))
        assistant = Assistant(cluster.settings, client, user="alice", team="vision")
        asked = assistant.ask(f"give task {task.id} 2 more hours")
        unchanged = cluster.tasks.get_any(task.id).spec["time_limit_minutes"]
        confirmed = assistant.confirm(asked.cards[0]["action_id"])
        chinese = assistant.ask(f"给{task.id}号任务改成高优先级")
        client.close()

    assert patched.status_code == 200, patched.text
    assert patched.json()["spec"]["time_limit_minutes"] == 20
    assert refused.status_code == 409
    assert "a running task can change only name, tags, time_limit_minutes" in refused.json()["detail"]
    assert [card["changes"] for card in asked.cards] == [{"time_limit_minutes": [20, 140]}], asked.reply
    assert unchanged == 20  # nothing changes before the confirm
    assert confirmed["ok"], confirmed
    assert cluster.tasks.get_any(task.id).spec["time_limit_minutes"] == 140
    wait_until(lambda: (job := worker.job_of(task.id)) is not None and job.job.time_limit_s == 140 * 60)
    assert chinese.reply == (
        f"抱歉，没能完成：任务 {task.id} 正在运行：priority 已不能修改；"
        "运行中的任务只能改时间限制、预计时长、重试次数、名称和标签"
    ), chinese.reply
    cluster.cancel(who, task.id)
