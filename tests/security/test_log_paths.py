"""Log download serves only the task's own log: no path traversal, no symlink or hard-link escapes."""

from __future__ import annotations

import os

import pytest

from scheduler.logs import read_from, read_tail

PASSWD_MARK = "root:"
TRAVERSALS = [
    "../../etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "..%252F..%252Fetc%252Fpasswd",
    "1%2F..%2F..%2F..%2Fetc%2Fpasswd",
    "1/../../../../etc/passwd",
    "/etc/passwd",
    "1;cat /etc/passwd",
    "%00",
]


@pytest.mark.parametrize("payload", TRAVERSALS)
def test_traversal_payloads_in_the_task_id_never_serve_another_file(app_client, callers, payload):
    response = app_client.get(f"/api/v1/tasks/{payload}/logs", headers=callers.of("own"))

    assert response.status_code in (404, 405, 422)
    assert PASSWD_MARK not in response.text


def test_a_log_file_that_is_a_symlink_to_a_file_outside_is_not_served(app_client, cluster, callers):
    task, _ = cluster.submit(callers.own_identity, {"command": "true"})
    log_path = cluster.log_path(task.id)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.symlink_to("/etc/passwd")

    response = app_client.get(f"/api/v1/tasks/{task.id}/logs", headers=callers.of("own"))
    tail = app_client.get(f"/api/v1/tasks/{task.id}/logs", params={"tail": 5}, headers=callers.of("own"))

    assert response.status_code == tail.status_code == 200
    assert PASSWD_MARK not in response.text + tail.text
    assert read_from(log_path, 0) == (b"", 0)


def test_a_logs_folder_that_is_a_symlink_is_not_followed(cluster, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "7.log").write_text("root:x:0:0 not ours\n")
    logs_dir = cluster.settings.logs_dir
    if logs_dir.exists():
        logs_dir.rmdir()
    logs_dir.symlink_to(elsewhere, target_is_directory=True)

    assert read_tail(cluster.log_path(7), None) == ("", 0)


def test_a_hard_link_to_another_file_is_not_served(cluster, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root:x:0:0 secret\n")
    log_path = cluster.log_path(8)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    os.link(secret, log_path)

    assert read_tail(log_path, 10) == ("", 0)


def test_a_regular_log_file_is_served(cluster):
    log_path = cluster.log_path(9)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text("one\ntwo\n")

    assert read_tail(log_path, 1) == ("two\n", 8)
    assert read_from(log_path, 4) == (b"two\n", 8)
