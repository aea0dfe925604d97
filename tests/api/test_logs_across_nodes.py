"""Logs of a task whose attempts ran on different boxes: attempt 1 fails on box-a, attempt 2 runs on box-b,
each worker with its own home (no shared folder), sharing the database and a real Redis. The whole log shows
both attempts in order, a tail counts across the boundary, `-f` follows the task from one node to the next,
and a node that is gone leaves a line naming its missing part while the other part is shown."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import api.routes.tasks as task_routes
import scheduler.task_logs as task_logs
from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.errors import NodeDidNotAnswer
from scheduler.gpus import SimulatedGpus
from scheduler.nodes import NodeGpu
from scheduler.service import Cluster
from scheduler.task_logs import read_log_from, read_log_tail
from scheduler.worker import Worker
from tests.conftest import wait_until

A, B = "box-a", "box-b"
# attempt 1 waits for the gate (so the test can send the retry to box-b), then fails; attempt 2 succeeds
COMMAND = (
    'echo "attempt $NIGHTSHIFT_ATTEMPT starts"; '
    'if [ "$NIGHTSHIFT_ATTEMPT" = 1 ]; then '
    "while [ ! -e gate ]; do sleep 0.05; done; echo 'boom on a' >&2; exit 3; fi; "
    "echo 'fine on b'"
)


class Box:
    """A worker of one node, running in a thread, with the cluster (home) it writes its logs to."""

    def __init__(self, cluster: Cluster, name: str) -> None:
        self.cluster = cluster
        self.name = name
        self.worker = Worker(cluster, name, SimulatedGpus("2x24", node=name), base_env=dict(os.environ))
        self.worker.claim_node()
        self.worker.publish_node()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.worker.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def shut_down(self) -> None:
        """Stop the worker, then make its node look long gone (not heard from for 10 minutes)."""
        self.stop.set()
        self.thread.join(timeout=30)
        ten_minutes_ago = now_ms() - 10 * 60_000
        self.cluster.nodes.publish(
            self.name, [NodeGpu(0, "SIM", 24 * 1024, 24 * 1024)], ten_minutes_ago, "sim"
        )


@pytest.fixture
def boxes(
    cluster: Cluster, make_settings: Callable[..., Any], redis_url: str, tmp_path: Path, run_in_thread: Any
) -> Iterator[Callable[[str], dict[str, Box]]]:
    """Factory: box-a and box-b, each with its own home unless `here` names the one that runs on the API's
    machine (its home is the API's); the scheduler runs beside the API."""
    started: list[Box] = []
    opened: list[Cluster] = []

    def make(here: str = "") -> dict[str, Box]:
        made: dict[str, Box] = {}
        for name in (A, B):
            own = cluster
            if name != here:
                settings = make_settings(
                    home=tmp_path / f"{name}-home",
                    node_name=name,
                    database_url=f"sqlite:///{tmp_path / 'nightshift.db'}",
                )
                settings.home.mkdir(parents=True)
                own = Cluster.open(settings, redis_url)
                opened.append(own)
            made[name] = Box(own, name)
            started.append(made[name])
        run_in_thread(Dispatcher(cluster).run)
        return made

    yield make
    for box in started:
        box.stop.set()
    for box in started:
        box.thread.join(timeout=30)  # before their Redis connections close under them
    for own in opened:
        own.close()


def _task(client: Any, headers: dict[str, str], task_id: int) -> dict[str, Any]:
    return dict(client.get(f"/api/v1/tasks/{task_id}", headers=headers).json())


def _start_on_a(client: Any, headers: dict[str, str], cluster: Cluster, workdir: Path) -> int:
    """Submit `COMMAND` (one retry) and wait until its attempt 1 runs on box-a (box-b drained meanwhile)."""
    cluster.nodes.set_drained(B, True)
    response = client.post(
        "/api/v1/tasks", json={"command": COMMAND, "workdir": str(workdir), "retries": 1}, headers=headers
    )
    assert response.status_code == 201, response.text
    task_id = int(response.json()["id"])
    wait_until(lambda: _task(client, headers, task_id)["status"] == "running", 30)
    assert _task(client, headers, task_id)["node"] == A
    return task_id


def _retry_on_b(cluster: Cluster, workdir: Path) -> None:
    """Let attempt 1 fail; its retry can only go to box-b."""
    cluster.nodes.set_drained(A, True)
    cluster.nodes.set_drained(B, False)
    (workdir / "gate").touch()


def _run_on_a_then_b(client: Any, headers: dict[str, str], cluster: Cluster, workdir: Path) -> int:
    task_id = _start_on_a(client, headers, cluster, workdir)
    _retry_on_b(cluster, workdir)
    wait_until(lambda: _task(client, headers, task_id)["status"] == "succeeded", 30)
    assert _task(client, headers, task_id)["node"] == B
    return task_id


def _output(text: str) -> list[str]:
    """The job's own lines and the attempt headers/ends (shortened to `attempt N` / `attempt N ended`)."""
    kept: list[str] = []
    for line in text.splitlines():
        if line.startswith("==> nightshift task "):
            words = line.split()
            kept.append(f"attempt {words[5]}" + (" ended" if words[6] == "ended:" else ""))
        elif not line.startswith("==> "):
            kept.append(line)
    return kept


IN_ORDER = [
    "attempt 1",
    "attempt 1 starts",
    "boom on a",
    "attempt 1 ended",
    "attempt 2",
    "attempt 2 starts",
    "fine on b",
    "attempt 2 ended",
]


@pytest.mark.parametrize(
    "here", ["", A, B], ids=["neither-box-is-the-apis", "box-a-is-the-apis", "box-b-is-the-apis"]
)
def test_the_whole_log_shows_every_attempt_in_order_from_the_node_that_ran_it(
    client, alice, cluster, boxes, tmp_path, here
):
    # Given attempt 1 failed on box-a and attempt 2 ran on box-b (one of them maybe the API's own machine)
    made = boxes(here)
    task_id = _run_on_a_then_b(client, alice, cluster, tmp_path)
    assert made[A].cluster.log_path(task_id) != made[B].cluster.log_path(task_id)

    # When the whole log is read
    whole = client.get(f"/api/v1/tasks/{task_id}/logs", headers=alice)

    # Then both attempts' output is there, in order, each once
    assert whole.status_code == 200, whole.text
    assert _output(whole.text) == IN_ORDER, whole.text
    # each attempt's header names the node it ran on
    assert f"==> nightshift task {task_id} attempt 1 on {A} GPUs " in whole.text
    assert f"==> nightshift task {task_id} attempt 2 on {B} GPUs " in whole.text


def test_a_tail_counts_its_lines_across_the_attempts(client, alice, cluster, boxes, tmp_path):
    boxes()
    task_id = _run_on_a_then_b(client, alice, cluster, tmp_path)
    whole = client.get(f"/api/v1/tasks/{task_id}/logs", headers=alice).text
    second = whole[whole.index(f"==> nightshift task {task_id} attempt 2 on ") :]
    lines = len(second.splitlines()) + 2  # attempt 2 whole, and attempt 1's last two lines

    last = client.get(f"/api/v1/tasks/{task_id}/logs", params={"tail": lines}, headers=alice)

    assert last.status_code == 200
    assert last.text.splitlines() == whole.splitlines()[-lines:]
    assert _output(last.text) == ["boom on a", "attempt 1 ended", *IN_ORDER[4:]], last.text


def test_a_failures_last_lines_are_its_last_attempts_though_an_earlier_one_is_here(
    client, alice, cluster, boxes, tmp_path
):
    # Given attempt 1 failed on the API's own box and attempt 2 fails too, on box-b
    boxes(A)
    command = COMMAND.replace("echo 'fine on b'", "echo 'boom on b' >&2; exit 4")
    cluster.nodes.set_drained(B, True)
    task_id = int(
        client.post(
            "/api/v1/tasks", json={"command": command, "workdir": str(tmp_path), "retries": 1}, headers=alice
        ).json()["id"]
    )
    wait_until(lambda: _task(client, alice, task_id)["status"] == "running", 30)
    _retry_on_b(cluster, tmp_path)
    wait_until(lambda: _task(client, alice, task_id)["status"] == "failed", 30)

    explained = client.get(f"/api/v1/tasks/{task_id}/explain", headers=alice).json()

    assert explained["last_output"] == ["attempt 2 starts", "boom on b"]


def test_a_gone_nodes_part_is_named_and_the_rest_shown_until_no_part_can_be_read(
    client, alice, cluster, boxes, tmp_path
):
    made = boxes()
    task_id = _run_on_a_then_b(client, alice, cluster, tmp_path)

    # When box-a is gone for good, the log is box-b's part with a line for attempt 1's
    made[A].shut_down()
    partial = client.get(f"/api/v1/tasks/{task_id}/logs", headers=alice)
    last_two = client.get(f"/api/v1/tasks/{task_id}/logs", params={"tail": 2}, headers=alice)

    assert partial.status_code == 200, partial.text
    missing, *rest = partial.text.splitlines()
    assert missing.startswith(f"==> the output of attempt 1, on node {A}, is missing here: the log of task")
    assert "whose worker has been silent for ~10 min" in missing
    assert _output("\n".join(rest)) == IN_ORDER[4:]
    assert _output(last_two.text) == ["fine on b", "attempt 2 ended"]

    # And once box-b is gone too, nothing can be read: a 503 naming the last attempt's node
    made[B].shut_down()
    gone = client.get(f"/api/v1/tasks/{task_id}/logs", headers=alice)

    assert gone.status_code == 503
    assert gone.json()["detail"].startswith(f"the log of task {task_id} is on node {B}, whose worker")


def test_following_a_task_goes_on_to_the_node_of_its_next_attempt(
    client, alice, cluster, boxes, tmp_path, monkeypatch
):
    # Given attempt 1 running on box-a, followed
    boxes()
    task_id = _start_on_a(client, alice, cluster, tmp_path)
    streaming = threading.Event()
    real_read_from = task_routes.read_log_from

    def read_from(*args: Any) -> Any:
        streaming.set()  # only the follow loop reads on from a cursor: the stream has begun
        return real_read_from(*args)

    monkeypatch.setattr(task_routes, "read_log_from", read_from)

    def retry_on_b_once_streaming() -> None:
        if streaming.wait(timeout=30):
            _retry_on_b(cluster, tmp_path)

    mover = threading.Thread(target=retry_on_b_once_streaming, daemon=True)
    mover.start()

    # When it fails there and its retry runs on box-b
    with client.stream(
        "GET", f"/api/v1/tasks/{task_id}/logs", params={"follow": "true"}, headers=alice
    ) as response:
        assert response.status_code == 200
        body = "".join(response.iter_text())
    mover.join(timeout=5)

    # Then the stream shows attempt 1 from box-a, then attempt 2 from box-b, each line once
    assert _task(client, alice, task_id)["node"] == B
    assert _output(body) == IN_ORDER, body


def test_following_a_task_whose_node_dies_goes_on_to_its_next_attempt_elsewhere(
    client, alice, cluster, boxes, tmp_path, monkeypatch
):
    """`logs -f` once ended at the first refused read of a node whose worker had just died, though the task
    was about to run again elsewhere: it says the node is silent, once, and follows on."""
    # Given attempt 1 running on box-a (it would wait for the gate forever), followed
    made = boxes()
    task_id = _start_on_a(client, alice, cluster, tmp_path)
    # its first line is in box-a's log before the follow starts (else box-a may "die" before it is read)
    log_on_a = made[A].cluster.log_path(task_id)
    wait_until(lambda: log_on_a.is_file() and "attempt 1 starts" in log_on_a.read_text())
    streaming, a_is_dead = threading.Event(), threading.Event()
    real_read_from, real_ask_node = task_routes.read_log_from, task_logs._ask_node

    def read_from(*args: Any) -> Any:
        streaming.set()
        return real_read_from(*args)

    def ask_node(cluster: Cluster, task_id: int, node: str, **asked: Any) -> Any:
        if node == A and a_is_dead.is_set():  # as box-a's worker killed -9: no answer, task still running
            raise NodeDidNotAnswer(task_id, node, "did not answer in 3 s")
        return real_ask_node(cluster, task_id, node, **asked)

    monkeypatch.setattr(task_routes, "read_log_from", read_from)
    monkeypatch.setattr(task_logs, "_ask_node", ask_node)

    def box_a_dies_once_streaming() -> None:
        if not streaming.wait(timeout=30):
            return
        a_is_dead.set()
        wait_until(lambda: _task(client, alice, task_id)["status"] == "running")
        time.sleep(1.5)  # the follower meets the silence while the task still runs there
        cluster.nodes.set_drained(A, True)  # then the task comes back, on box-b
        cluster.nodes.set_drained(B, False)
        made[A].shut_down()

    killer = threading.Thread(target=box_a_dies_once_streaming, daemon=True)
    killer.start()

    # When box-a's worker goes away and the task runs again on box-b
    with client.stream(
        "GET", f"/api/v1/tasks/{task_id}/logs", params={"follow": "true"}, headers=alice
    ) as response:
        assert response.status_code == 200
        body = "".join(response.iter_text())
    killer.join(timeout=30)

    # Then the stream names box-a's silence once and goes on to attempt 2's output until the task ends
    assert _task(client, alice, task_id)["status"] == "succeeded"
    assert body.count(f"; following on until task {task_id} ends") == 1, body
    assert _output(body)[:2] == ["attempt 1", "attempt 1 starts"], body
    assert _output(body)[-4:] == ["attempt 2", "attempt 2 starts", "fine on b", "attempt 2 ended"], body


def _header(task_id: int, number: int) -> str:
    return f"==> nightshift task {task_id} attempt {number} on GPUs 0 at 2026-01-01T00:00:00+00:00\n"


def test_with_a_shared_folder_both_nodes_attempts_are_read_once_from_it_and_followed_on(
    cluster, make_identity, tmp_path
):
    # Given a folder the nodes share: attempt 1 (node-a) and attempt 2 (node-b) append to the same file
    who, _ = make_identity("alice", "vision")
    task, _ = cluster.submit(who, {"command": "true", "workdir": str(tmp_path), "retries": 1})
    log = cluster.log_path(task.id)
    log.parent.mkdir(parents=True, exist_ok=True)
    cluster.tasks.mark_running(task.id, "token-1", "node-a", [0])
    log.write_text(_header(task.id, 1) + "one\n")
    _, cursor = read_log_tail(cluster, cluster.tasks.get_any(task.id), None)
    cluster.tasks.requeue(task.id, "token-1", "nonzero_exit")
    cluster.tasks.mark_running(task.id, "token-2", "node-b", [0])
    with log.open("a") as more:
        more.write(_header(task.id, 2) + "two\n")

    # When it is read whole (no node is asked: neither answers here), and followed on from attempt 1's end
    whole, _ = read_log_tail(cluster, cluster.tasks.get_any(task.id), None)
    followed, after = read_log_from(cluster, cluster.tasks.get_any(task.id), cursor)

    # Then each attempt shows once, and the follow goes on in the same file
    assert whole == _header(task.id, 1) + "one\n" + _header(task.id, 2) + "two\n"
    assert followed.decode() == _header(task.id, 2) + "two\n"
    assert (after.attempt, after.node, after.offset) == (2, None, log.stat().st_size)
