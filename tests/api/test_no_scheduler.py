"""A cluster whose scheduler is not running (never started on the server, or killed) starts nothing: the
queue, `explain` and /healthz say so instead of only promising "starts now"."""

from __future__ import annotations

from scheduler.dispatcher import Dispatcher
from tests.conftest import wait_until


def _views(client, alice, task_id: int) -> tuple[str | None, str | None, str]:
    """The queue's and the task's scheduler warning, and what /healthz says of the scheduler."""
    queue = client.get("/api/v1/queue", headers=alice).json()
    explained = client.get(f"/api/v1/tasks/{task_id}/explain", headers=alice).json()
    return (
        queue["scheduler_warning"],
        explained["scheduler_warning"],
        client.get("/healthz").json()["scheduler"],
    )


def test_without_a_scheduler_the_queue_and_explain_say_nothing_starts(
    client, cluster, alice, four_gpu_node, run_in_thread
):
    task_id = client.post("/api/v1/tasks", json={"command": "true"}, headers=alice).json()["id"]

    queue_warning, task_warning, health = _views(client, alice, task_id)
    assert queue_warning == task_warning
    assert queue_warning is not None and queue_warning.startswith("no scheduler is running")
    assert "`nightshift scheduler`" in queue_warning
    assert health == "none running"

    run_in_thread(Dispatcher(cluster).run)
    wait_until(lambda: client.get("/healthz").json()["scheduler"] == "running")
    assert client.get("/api/v1/queue", headers=alice).json()["scheduler_warning"] is None
