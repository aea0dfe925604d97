"""Logs of a task that ran on another box, with no shared folder: the API (its own home) asks that node's
worker (another home) through the shared Redis, for the whole log, its last lines, `-f`, and the last lines
`explain` shows for a failure; a node that is down is a 503 that names it."""

from __future__ import annotations

import base64
import json
import os
import threading
from pathlib import Path

import pytest
import redis

from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.keys import RedisKeys
from scheduler.log_relay import (
    MAX_ANSWER_BYTES,
    WAIT_S,
    answer_log_requests,
    answer_request,
    request_log,
    wake_answerer,
)
from scheduler.nodes import NodeGpu
from scheduler.service import Cluster
from scheduler.worker import Worker
from tests.api.conftest import bearer
from tests.conftest import wait_until

NODE = "box-b"


@pytest.fixture
def box_b(cluster, make_settings, redis_url, tmp_path, run_in_thread):
    """A second machine: a worker with its own home (log folder), sharing the database and Redis; the
    scheduler runs beside the API. Yields the worker's stop flag and its cluster."""
    settings = make_settings(
        home=tmp_path / "box-b-home", node_name=NODE, database_url=f"sqlite:///{tmp_path / 'nightshift.db'}"
    )
    settings.home.mkdir(parents=True)
    remote = Cluster.open(settings, redis_url)
    worker = Worker(remote, NODE, SimulatedGpus("2x24", node=NODE), base_env=dict(os.environ))
    worker.claim_node()
    worker.publish_node()
    run_in_thread(Dispatcher(cluster).run)
    stop = threading.Event()
    serving = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    serving.start()
    yield stop, remote
    stop.set()
    serving.join(timeout=30)  # before its Redis connections close under it
    remote.close()


def _run(client, headers, command: str, workdir: Path, status: str = "succeeded") -> int:
    response = client.post(
        "/api/v1/tasks", json={"command": command, "workdir": str(workdir)}, headers=headers
    )
    assert response.status_code == 201, response.text
    task_id = int(response.json()["id"])
    wait_until(lambda: client.get(f"/api/v1/tasks/{task_id}", headers=headers).json()["status"] == status, 30)
    return task_id


def test_the_api_reads_a_log_from_the_node_that_ran_the_task(client, alice, cluster, box_b, tmp_path):
    _, remote = box_b
    task_id = _run(client, alice, "for i in 1 2 3; do echo line$i; done", tmp_path)

    whole = client.get(f"/api/v1/tasks/{task_id}/logs", headers=alice)
    last = client.get(f"/api/v1/tasks/{task_id}/logs", params={"tail": 1}, headers=alice)

    assert not cluster.log_path(task_id).exists() and remote.log_path(task_id).exists()
    assert whole.status_code == 200, whole.text
    assert [line for line in whole.text.splitlines() if line.startswith("line")] == [
        "line1",
        "line2",
        "line3",
    ]
    assert last.text.startswith(f"==> nightshift task {task_id} attempt 1 ended: exit code 0")


def test_a_failures_last_lines_and_a_followed_log_come_from_the_node_too(client, alice, box_b, tmp_path):
    failed = _run(client, alice, "echo 'ValueError: bad lr' >&2; exit 3", tmp_path, status="failed")
    explained = client.get(f"/api/v1/tasks/{failed}/explain", headers=alice).json()

    response = client.post(
        "/api/v1/tasks", json={"command": "echo start; sleep 1.5; echo end", "workdir": str(tmp_path)},
        headers=alice,
    )  # fmt: skip
    followed = client.get(
        f"/api/v1/tasks/{response.json()['id']}/logs", params={"follow": True}, headers=alice
    )

    assert explained["last_output"] == ["ValueError: bad lr"]
    lines = [line for line in followed.text.splitlines() if not line.startswith("==> ")]
    assert lines == ["start", "end"], followed.text


def test_a_log_on_a_node_that_is_down_is_a_503_naming_the_node(client, alice, box_b, tmp_path):
    stop, _ = box_b
    task_id = _run(client, alice, "echo hi", tmp_path)
    stop.set()  # box-b's worker stops: nobody answers for its logs
    wait_until(lambda: not any(t.name == "log-requests" for t in threading.enumerate()), 10)

    response = client.get(f"/api/v1/tasks/{task_id}/logs", headers=alice)

    assert response.status_code == 503
    assert response.json()["detail"].startswith(f"the log of task {task_id} is on node {NODE}, whose worker")


def test_another_teams_task_log_is_not_asked_for(client, make_identity, box_b, tmp_path, alice):
    task_id = _run(client, alice, "echo secret", tmp_path)
    _, bob = make_identity("bob", "nlp")

    response = client.get(f"/api/v1/tasks/{task_id}/logs", headers=bearer(bob))

    assert response.status_code == 404 and "secret" not in response.text


def test_the_answer_reads_as_the_api_does(tmp_path):
    """No symlink is followed; an offset reads on from there, at most `MAX_ANSWER_BYTES` at a time."""
    (tmp_path / "1.log").write_bytes(b"x" * (MAX_ANSWER_BYTES + 10))
    (tmp_path / "secret").write_text("not a log")
    (tmp_path / "2.log").symlink_to(tmp_path / "secret")

    def path(task_id: int) -> Path:
        return tmp_path / f"{task_id}.log"

    first = answer_request({"task": 1, "offset": 0}, path)
    rest = answer_request({"task": 1, "offset": first["offset"]}, path)
    linked = answer_request({"task": 2, "tail": None, "offset": None}, path)
    missing = answer_request({"task": 3, "tail": 5, "offset": None}, path)
    whole = base64.b64decode(answer_request({"task": 1, "tail": None, "offset": None}, path)["data"])

    assert first["offset"] == MAX_ANSWER_BYTES and rest["offset"] == MAX_ANSWER_BYTES + 10
    assert (linked["found"], linked["data"], missing["found"]) == (False, "", False)
    head, rest = whole.split(b"\n", 1)  # a whole log past the answer's size says what it left out
    assert head == b"==> the first 10 bytes are left out: see the log on its node"
    assert rest == b"x" * MAX_ANSWER_BYTES


def test_a_request_the_api_gave_up_on_is_not_answered(redis_url, tmp_path):
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    keys = RedisKeys(prefix="relaytest:")
    stale = {"id": "old", "task": 1, "tail": None, "offset": None, "sent_s": 0}
    client.rpush(keys.log_requests(NODE), json.dumps(stale))
    stop = threading.Event()
    loop = threading.Thread(
        target=answer_log_requests, args=(client, keys, NODE, lambda i: tmp_path / f"{i}.log", stop, 0.2)
    )
    loop.start()
    (tmp_path / "1.log").write_text("fresh\n")
    try:
        piece = request_log(client, keys, NODE, 1, tail=None, timeout_s=5)
    finally:
        stop.set()
        loop.join()

    assert (piece.data, piece.found) == (b"fresh\n", True)
    assert client.exists(keys.log_reply("old")) == 0
    client.close()


def test_a_node_not_heard_from_is_not_even_asked(client, alice, box_b, tmp_path):
    stop, remote = box_b
    task_id = _run(client, alice, "echo hi", tmp_path)
    stop.set()
    wait_until(lambda: not any(t.name == "log-requests" for t in threading.enumerate()), 10)
    ten_minutes_ago = now_ms() - 10 * 60_000
    remote.nodes.publish(NODE, [NodeGpu(0, "SIM", 24 * 1024, 24 * 1024)], ten_minutes_ago, "simulated")

    response = client.get(f"/api/v1/tasks/{task_id}/logs", headers=alice)

    assert response.status_code == 503
    assert f"is on node {NODE}, whose worker has been silent for ~10 min" in response.json()["detail"]


def test_a_whole_wait_of_the_answering_loop_is_no_redis_error(cluster, tmp_path, caplog):
    # redis-py 8 cuts a read after 5 s by default: every idle 5 s block of the loop was a "Timeout reading
    # from socket" warning in `make up`'s output, and the connection was dropped each time
    queue = cluster.queue
    keys = RedisKeys(prefix="relaytest:")
    stop = threading.Event()
    loop = threading.Thread(
        target=answer_log_requests, args=(queue.client, keys, NODE, lambda i: tmp_path / f"{i}.log", stop)
    )
    (tmp_path / "1.log").write_text("after a whole wait\n")
    with caplog.at_level("WARNING", logger="scheduler.log_relay"):
        loop.start()
        try:
            stop.wait(WAIT_S + 1.0)  # one whole block with nothing to answer
            piece = request_log(queue.client, keys, NODE, 1, timeout_s=5)
        finally:
            stop.set()
            wake_answerer(queue.client, keys, NODE)
            loop.join(timeout=30)

    assert piece.data == b"after a whole wait\n"
    assert [r.getMessage() for r in caplog.records] == []
