"""GET /api/v1/tasks/{id}/logs: whole, last N lines, and followed until the task ends."""

from __future__ import annotations

import threading

import pytest

import api.routes.tasks as task_routes
from tests.conftest import wait_until


def _submit(client, headers, command, workdir) -> int:
    response = client.post(
        "/api/v1/tasks", json={"command": command, "workdir": str(workdir)}, headers=headers
    )
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def _status(client, headers, task_id) -> str:
    return str(client.get(f"/api/v1/tasks/{task_id}", headers=headers).json()["status"])


def test_logs_show_a_finished_tasks_output_whole_or_its_last_lines(client, alice, running_cluster, tmp_path):
    task_id = _submit(client, alice, "for i in 1 2 3 4 5; do echo line$i; done", tmp_path)
    wait_until(lambda: _status(client, alice, task_id) == "succeeded", timeout_s=30)

    whole = client.get(f"/api/v1/tasks/{task_id}/logs", headers=alice)
    last_two = client.get(f"/api/v1/tasks/{task_id}/logs", params={"tail": 2}, headers=alice)
    none = client.get(f"/api/v1/tasks/{task_id}/logs", params={"tail": 0}, headers=alice)

    assert whole.status_code == last_two.status_code == none.status_code == 200
    assert none.text == ""  # as `tail -n 0`
    assert whole.headers["content-type"].startswith("text/plain")
    assert [line for line in whole.text.splitlines() if line.startswith("line")] == [
        f"line{i}" for i in range(1, 6)
    ]
    assert last_two.text.splitlines() == whole.text.splitlines()[-2:]
    last_line_of_output, footer = last_two.text.splitlines()
    assert last_line_of_output == "line5"
    assert footer.startswith(f"==> nightshift task {task_id} attempt 1 ended: exit code 0")


@pytest.mark.parametrize("tail", ["-1", "many"])
def test_a_bad_tail_is_refused(client, alice, tail):
    task_id = client.post("/api/v1/tasks", json={"command": "true"}, headers=alice).json()["id"]

    response = client.get(f"/api/v1/tasks/{task_id}/logs", params={"tail": tail}, headers=alice)

    assert response.status_code == 422
    assert "tail" in response.json()["detail"]


def test_following_a_running_tasks_logs_streams_until_the_task_ends(
    client, alice, running_cluster, tmp_path, monkeypatch
):
    gate = tmp_path / "gate"
    command = f"echo line0; while [ ! -e {gate} ]; do sleep 0.05; done; for i in 1 2 3; do echo line$i; sleep 0.2; done"
    task_id = _submit(client, alice, command, tmp_path)
    log_file = running_cluster.log_path(task_id)
    wait_until(lambda: log_file.exists() and "line0" in log_file.read_text(errors="replace"), timeout_s=30)
    assert _status(client, alice, task_id) == "running"

    streaming = threading.Event()
    real_read_from = task_routes.read_log_from

    def read_from(cluster, task, offset):
        streaming.set()  # only the follow loop reads by offset: the stream has begun
        return real_read_from(cluster, task, offset)

    monkeypatch.setattr(task_routes, "read_log_from", read_from)

    def open_the_gate_once_streaming() -> None:
        if streaming.wait(timeout=30):
            gate.touch()

    opener = threading.Thread(target=open_the_gate_once_streaming, daemon=True)
    opener.start()
    with client.stream(
        "GET", f"/api/v1/tasks/{task_id}/logs", params={"follow": "true"}, headers=alice
    ) as response:
        assert response.status_code == 200
        body = "".join(response.iter_text())
    opener.join(timeout=5)

    assert streaming.is_set()
    assert [line for line in body.splitlines() if line.startswith("line")] == [
        "line0",
        "line1",
        "line2",
        "line3",
    ]
    assert _status(client, alice, task_id) == "succeeded"


def test_following_a_finished_tasks_logs_returns_at_once(client, alice, running_cluster, tmp_path):
    task_id = _submit(client, alice, "echo done", tmp_path)
    wait_until(lambda: _status(client, alice, task_id) == "succeeded", timeout_s=30)

    response = client.get(
        f"/api/v1/tasks/{task_id}/logs", params={"follow": "true", "tail": 2}, headers=alice
    )

    assert response.status_code == 200
    assert response.text.splitlines()[0] == "done"
    assert "ended: exit code 0" in response.text.splitlines()[1]
