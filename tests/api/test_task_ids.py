"""Unknown, malformed and finished task ids on get, cancel and logs."""

from __future__ import annotations

import pytest

ACTIONS = [
    pytest.param("GET", "/api/v1/tasks/{id}", id="get"),
    pytest.param("POST", "/api/v1/tasks/{id}/cancel", id="cancel"),
    pytest.param("GET", "/api/v1/tasks/{id}/logs", id="logs"),
]


@pytest.mark.parametrize(("method", "path"), ACTIONS)
def test_an_unknown_task_id_answers_404_task_not_found(client, alice, method, path):
    response = client.request(method, path.format(id=424242), headers=alice)

    assert response.status_code == 404
    assert response.json()["detail"] == "task 424242 not found"


@pytest.mark.parametrize(("method", "path"), ACTIONS)
@pytest.mark.parametrize("bad_id", ["abc", "1.5", "0x10"])
def test_a_non_integer_task_id_answers_422_naming_the_task_id(client, alice, method, path, bad_id):
    response = client.request(method, path.format(id=bad_id), headers=alice)

    assert response.status_code == 422
    assert "task_id" in response.json()["detail"]
    assert "integer" in response.json()["detail"]


@pytest.mark.parametrize(("method", "path"), ACTIONS)
@pytest.mark.parametrize("bad_id", ["0", "-3", str(2**63), "9" * 40])
def test_a_task_id_out_of_range_answers_422_not_a_database_error(client, alice, method, path, bad_id):
    response = client.request(method, path.format(id=bad_id), headers=alice)

    assert response.status_code == 422
    assert "task_id" in response.json()["detail"]


def test_cancelling_a_queued_task_cancels_it_at_once(client, cluster, alice):
    task_id = client.post("/api/v1/tasks", json={"command": "sleep 300"}, headers=alice).json()["id"]

    response = client.post(f"/api/v1/tasks/{task_id}/cancel", headers=alice)

    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert cluster.queue.length() == 0
    assert client.get(f"/api/v1/tasks/{task_id}", headers=alice).json()["status"] == "cancelled"


def test_cancelling_an_already_finished_task_answers_409(client, alice):
    task_id = client.post("/api/v1/tasks", json={"command": "sleep 300"}, headers=alice).json()["id"]
    client.post(f"/api/v1/tasks/{task_id}/cancel", headers=alice)

    response = client.post(f"/api/v1/tasks/{task_id}/cancel", headers=alice)

    assert response.status_code == 409
    assert response.json()["detail"] == f"task {task_id} already cancelled; nothing to cancel"


def test_a_task_with_no_output_yet_has_empty_logs(client, alice):
    task_id = client.post("/api/v1/tasks", json={"command": "true"}, headers=alice).json()["id"]

    response = client.get(f"/api/v1/tasks/{task_id}/logs", headers=alice)

    assert response.status_code == 200
    assert response.text == ""
