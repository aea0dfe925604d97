"""One member's spec must not take a node away from every team: a task that cannot start fails alone, and the
API refuses what no process could be given (a NUL byte in an env value) or what only fills the database
(thousands of env variables, megabytes of value). A real worker, real SQLite and redis-server."""

from __future__ import annotations

import os
from typing import Any

import pytest
from sqlalchemy import update

from scheduler.clock import now_ms
from scheduler.gpus import SimulatedGpus
from scheduler.service import Cluster
from scheduler.spec import MAX_ENV_VALUE_CHARS, MAX_ENV_VARS
from scheduler.store.tables import Task
from scheduler.worker import Worker
from tests.conftest import wait_until

FINAL = ("succeeded", "failed", "cancelled")


@pytest.mark.parametrize(
    "env",
    [
        {"X": "a\x00b"},
        {f"V{i}": "x" for i in range(MAX_ENV_VARS + 1)},
        {"BIG": "x" * (MAX_ENV_VALUE_CHARS + 1)},
        {"N" * 129: "x"},
    ],
    ids=["nul", "too-many", "too-long", "long-name"],
)
def test_the_api_refuses_env_no_process_can_take_or_that_only_fills_the_database(app_client, callers, env):
    response = app_client.post(
        "/api/v1/tasks", json={"command": "true", "gpus": 0, "env": env}, headers=callers.of("own")
    )

    assert response.status_code == 422, response.text[:300]
    assert "env" in response.text[:2000]


def _worker(cluster: Cluster, run_in_thread: Any) -> None:
    worker = Worker(cluster, "node-a", SimulatedGpus("4x24", node="node-a"), base_env=dict(os.environ))
    worker.publish_node()
    run_in_thread(worker.run)


def _assigned(cluster: Cluster, who: Any, spec: dict[str, Any]) -> int:
    task, _ = cluster.submit(who, {"gpus": 0, **spec})
    assert cluster.queue.assign(task.id, "node-a", [], now_ms())
    return task.id


def _status(cluster: Cluster, task_id: int) -> str:
    status = cluster.tasks.get_any(task_id).status
    return status if status in FINAL else ""


def test_a_stored_spec_with_a_nul_in_its_env_fails_alone_and_the_worker_runs_the_next_task(
    cluster, make_identity, run_in_thread, tmp_path
):
    # Given a task whose stored spec holds a NUL in an env value (stored before the API refused it)
    who, _ = make_identity("alice", "vision")
    poison, _ = cluster.submit(who, {"command": "true", "gpus": 0, "env": {"X": "ok"}})
    spec = dict(cluster.tasks.get_any(poison.id).spec)
    spec["env"] = {"X": "a\x00b"}
    with cluster.factory.begin() as session:
        session.execute(update(Task).where(Task.id == poison.id).values(spec=spec))
    _worker(cluster, run_in_thread)

    # When the node's worker gets it, then another task
    assert cluster.queue.assign(poison.id, "node-a", [], now_ms())
    assert wait_until(lambda: _status(cluster, poison.id), 20) == "failed"
    after = _assigned(cluster, who, {"command": "echo still-serving"})

    # Then the poison task failed with a reason, and the worker went on
    assert wait_until(lambda: _status(cluster, after), 20) == "succeeded"
    assert "NUL" in (cluster.tasks.get_any(poison.id).message or "")


def test_an_unexpected_error_at_a_tasks_start_fails_that_task_not_the_worker(
    cluster, make_identity, run_in_thread, monkeypatch
):
    import scheduler.worker as worker_module

    real_start = worker_module.start_job

    def start_or_break(request, **kwargs):
        if "break-me" in request.command:
            raise RuntimeError("a launch bug")
        return real_start(request, **kwargs)

    monkeypatch.setattr(worker_module, "start_job", start_or_break)
    who, _ = make_identity("alice", "vision")
    _worker(cluster, run_in_thread)

    broken = _assigned(cluster, who, {"command": "echo break-me"})
    assert wait_until(lambda: _status(cluster, broken), 20) == "failed"
    after = _assigned(cluster, who, {"command": "echo still-serving"})

    assert wait_until(lambda: _status(cluster, after), 20) == "succeeded"
    assert "RuntimeError: a launch bug" in (cluster.tasks.get_any(broken).message or "")
