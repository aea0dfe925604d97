"""Nodes: listed with their state; a drained node gets no new task while its running ones finish."""

from __future__ import annotations

import os
import re
import threading
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from scheduler import nodes as nodes_module
from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.errors import ConflictError
from scheduler.gpus import SimulatedGpus
from scheduler.nodes import TeamReservation
from scheduler.store.identity import create_token
from scheduler.worker import Worker
from tests.cli.conftest import cli_as
from tests.conftest import wait_until


def test_an_admin_drains_a_node_and_new_tasks_go_to_the_other_node(
    cluster, make_identity, run_in_thread, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    who, token = make_identity()
    for node in ("box-1", "box-2"):
        worker = Worker(cluster, node, SimulatedGpus("2x24", node=node), base_env=dict(os.environ))
        worker.publish_node()
        run_in_thread(worker.run)
    run_in_thread(Dispatcher(cluster).run)
    client = TestClient(create_app(cluster))
    gate = tmp_path / "gate"
    running, _ = cluster.submit(
        who, {"command": f"while [ ! -e {gate} ]; do sleep 0.05; done", "gpus": 2, "workdir": str(tmp_path)}
    )
    wait_until(lambda: cluster.tasks.get_any(running.id).status == "running")
    busy_node = cluster.tasks.get_any(running.id).node
    free_node = "box-2" if busy_node == "box-1" else "box-1"

    assert (
        client.post(
            f"/api/v1/nodes/{busy_node}/drain", headers={"Authorization": f"Bearer {token}"}
        ).status_code
        == 403
    )
    answer = client.post(
        f"/api/v1/nodes/{free_node}/drain", headers={"Authorization": f"Bearer {admin_token}"}
    )
    assert answer.status_code == 200 and answer.json()["drained"] is True

    waiting, _ = cluster.submit(who, {"command": "true", "gpus": 1, "workdir": str(tmp_path)})
    explain = client.get(
        f"/api/v1/tasks/{waiting.id}/explain", headers={"Authorization": f"Bearer {token}"}
    ).json()
    assert explain["status"] == "queued"
    gate.touch()
    wait_until(lambda: cluster.tasks.get_any(running.id).status == "succeeded")
    wait_until(lambda: cluster.tasks.get_any(waiting.id).status == "succeeded")
    assert cluster.tasks.get_any(waiting.id).node == busy_node

    listed = client.get("/api/v1/nodes", headers={"Authorization": f"Bearer {token}"}).json()
    assert {node["name"]: node["drained"] for node in listed} == {busy_node: False, free_node: True}
    missing = client.post("/api/v1/nodes/nope/drain", headers={"Authorization": f"Bearer {admin_token}"})
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]


def test_a_node_says_whether_its_jobs_run_in_cgroups(make_cluster, job_cgroups):
    # Given a node whose worker gives each job a cgroup, and the same node told not to (job_cgroups=off)
    shown = {}
    for mode in ("auto", "off"):
        cluster = make_cluster(job_cgroups=mode)
        token = create_token(cluster.factory, user="alice", team="vision")
        Worker(
            cluster, "box-1", SimulatedGpus("1x24", node="box-1"), base_env=dict(os.environ)
        ).publish_node()

        # When someone lists the nodes
        client = TestClient(create_app(cluster))
        listed = client.get("/api/v1/nodes", headers={"Authorization": f"Bearer {token}"}).json()

        shown[mode] = listed[0]["job_isolation"]
    # Then each says how it holds its jobs
    assert shown == {"auto": "cgroup", "off": "process group"}


def test_a_node_drained_with_requeue_sends_its_running_tasks_to_the_other_node(
    cluster, make_identity, run_in_thread, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    who, _ = make_identity("alice", "vision")
    bob, _ = make_identity("bob", "nlp")  # another team's task goes too: the admin drains the node
    for node in ("box-1", "box-2"):
        worker = Worker(cluster, node, SimulatedGpus("2x24", node=node), base_env=dict(os.environ))
        worker.publish_node()
        run_in_thread(worker.run)
    run_in_thread(Dispatcher(cluster).run)
    cluster.nodes.set_drained("box-2", True)
    spec = {"command": "echo attempt $NIGHTSHIFT_ATTEMPT on $NIGHTSHIFT_NODE; sleep 30", "gpus": 1}
    tasks = [cluster.submit(owner, {**spec, "workdir": str(tmp_path)})[0] for owner in (who, bob)]
    wait_until(lambda: all(cluster.tasks.get_any(task.id).status == "running" for task in tasks))
    cluster.nodes.set_drained("box-2", False)
    client = TestClient(create_app(cluster))

    answer = client.post(
        "/api/v1/nodes/box-1/drain",
        params={"requeue": "true"},
        headers={"Authorization": f"Bearer {admin_token}"},
    )

    assert answer.status_code == 200, answer.text
    assert answer.json()["drained"] is True and answer.json()["requeued"] == [task.id for task in tasks]
    for task in tasks:
        wait_until(lambda task=task: cluster.tasks.get_any(task.id).attempts_count == 2)
        wait_until(lambda task=task: cluster.tasks.get_any(task.id).node == "box-2")
        assert cluster.tasks.attempts(task.id)[0].reason == "requeued"
        cluster.cancel(who if task is tasks[0] else bob, task.id)


def test_node_drain_requeue_from_the_command_line_says_what_it_sent_away(
    cluster, make_identity, start_worker, monkeypatch, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    who, _ = make_identity("alice", "vision")
    start_worker(node="box-1")
    task, _ = cluster.submit(who, {"command": "sleep 30", "gpus": 1, "workdir": str(tmp_path)})
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "running")
    with cli_as(cluster, admin_token, monkeypatch, tmp_path / "home") as nightshift:
        drained = nightshift("node", "drain", "box-1", "--requeue")
        wait_until(lambda: cluster.tasks.get_any(task.id).status == "queued")  # box-1 was its only node
        again = nightshift("node", "drain", "box-1", "--requeue")

    assert drained.exit_code == 0, drained.output
    assert f"node box-1 drained: task {task.id} stopping and going back to the queue" in " ".join(
        drained.output.split()
    )
    assert "no task ran there" in again.output


def test_a_drain_set_for_later_lets_only_tasks_that_end_by_then_start_and_can_be_called_off(
    cluster, make_identity, monkeypatch, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    who, token = make_identity("alice", "vision")
    worker = Worker(cluster, "box-1", SimulatedGpus("2x24", node="box-1"), base_env=dict(os.environ))
    worker.publish_node()
    admin = {"Authorization": f"Bearer {admin_token}"}
    with TestClient(create_app(cluster)) as client:
        # Refused: a time past
        past = client.post(
            "/api/v1/nodes/box-1/drain", params={"at": "2020-01-01T00:00:00+00:00"}, headers=admin
        )
        soon = datetime.now(UTC) + timedelta(hours=1)
        assert past.status_code == 422
        assert "has passed: drop `at` to drain the node now" in past.json()["detail"]

        # When an admin sets box-1 to go down in an hour
        set_for_later = client.post(
            "/api/v1/nodes/box-1/drain", params={"at": soon.isoformat()}, headers=admin
        )
        long, _ = cluster.submit(who, {"command": "true", "estimated_minutes": 120, "workdir": str(tmp_path)})
        short, _ = cluster.submit(who, {"command": "true", "estimated_minutes": 20, "workdir": str(tmp_path)})
        worker.publish_node()  # a heartbeat, as its worker would send: the node is alive for this pass
        Dispatcher(cluster).run_pass()
        explained = client.get(
            f"/api/v1/tasks/{long.id}/explain", headers={"Authorization": f"Bearer {token}"}
        )
        listed = client.get("/api/v1/nodes", headers=admin).json()

    # Then it is still in service, the 20-minute task starts there and the 2-hour one waits, saying why
    assert set_for_later.status_code == 200, set_for_later.text
    assert set_for_later.json()["drained"] is False
    assert abs(datetime.fromisoformat(set_for_later.json()["drain_at"]) - soon) < timedelta(seconds=1)
    assert listed[0]["drain_at"] is not None and listed[0]["drained"] is False
    assigned = cluster.queue.assignments()
    assert short.id in assigned and long.id not in assigned
    assert explained.json()["reason"].startswith("node box-1 goes down for maintenance at ")
    assert explained.json()["reason"].endswith(": its ~2.0 h estimate would run past it")

    # Called off from the command line: the 2-hour task starts at the next pass
    with cli_as(cluster, admin_token, monkeypatch, tmp_path / "home") as nightshift:
        later = nightshift("node", "drain", "box-1", "--at", "+3h")
        shown = nightshift("nodes")
        undrained = nightshift("node", "undrain", "box-1")
    assert later.exit_code == 0, later.output
    assert "node box-1 goes down for maintenance at " in " ".join(later.output.split())
    assert "maintenance at" in shown.output
    assert undrained.exit_code == 0 and cluster.nodes.all()[0].drain_at_ms is None
    worker.publish_node()  # a heartbeat: the command-line calls above may outlast the test's 5-s lease
    Dispatcher(cluster).run_pass()
    assert long.id in cluster.queue.assignments()


def test_cpu_only_tasks_go_to_nodes_with_no_maintenance_ahead(cluster, make_identity, tmp_path):
    who, _ = make_identity("alice", "vision")
    for node in ("box-1", "box-2"):
        Worker(cluster, node, SimulatedGpus("1x24", node=node), base_env=dict(os.environ)).publish_node()
    soon_ms = int((datetime.now(UTC) + timedelta(hours=1)).timestamp() * 1000)
    assert cluster.nodes.set_drained("box-1", True, soon_ms)
    tasks = [
        cluster.submit(who, {"command": "true", "gpus": 0, "workdir": str(tmp_path)})[0].id for _ in range(4)
    ]

    Dispatcher(cluster).run_pass()

    assert {cluster.queue.assignments()[task_id][0] for task_id in tasks} == {"box-2"}


def test_a_maintenance_with_requeue_sends_the_tasks_still_running_then_back_to_the_queue(
    cluster, make_identity, start_worker, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    who, _ = make_identity("alice", "vision")
    start_worker(node="box-1")
    long, _ = cluster.submit(
        who, {"command": "sleep 60", "gpus": 1, "estimated_minutes": 180, "workdir": str(tmp_path)}
    )
    short, _ = cluster.submit(
        who, {"command": "sleep 60", "gpus": 1, "estimated_minutes": 10, "workdir": str(tmp_path)}
    )
    wait_until(lambda: {cluster.tasks.get_any(t.id).status for t in (long, short)} == {"running"})
    soon = datetime.now(UTC) + timedelta(hours=1)

    with TestClient(create_app(cluster)) as client:
        answer = client.post(
            "/api/v1/nodes/box-1/drain",
            params={"at": soon.isoformat(), "requeue": "true"},
            headers={"Authorization": f"Bearer {admin_token}"},
        )

    # Then the 3-hour task is named as running past it, and nothing is stopped yet
    assert answer.status_code == 200, answer.text
    assert (answer.json()["running_past"], answer.json()["requeued"]) == ([long.id], [])
    Dispatcher(cluster).run_pass()
    assert cluster.tasks.get_any(long.id).attempts_count == 1
    # When the time comes (moved to now here), the next pass requeues what still runs there, once
    node = cluster.nodes.all()[0]
    cluster.nodes.set_drained("box-1", True, now_ms() - 1, node.drain_requeue_by)
    Dispatcher(cluster).run_pass()
    wait_until(lambda: cluster.tasks.get_any(long.id).status == "queued")
    wait_until(lambda: cluster.tasks.get_any(short.id).status == "queued")
    assert cluster.tasks.attempts(long.id)[0].reason == "requeued"
    assert cluster.nodes.all()[0].drain_requeue_by is None  # done once
    for task in (long, short):
        cluster.cancel(who, task.id)


def test_a_maintenance_with_an_end_keeps_tasks_off_its_node_until_then_and_the_node_comes_back_by_itself(
    cluster, make_identity, monkeypatch, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    who, token = make_identity("alice", "vision")
    worker = Worker(cluster, "box-1", SimulatedGpus("1x24", node="box-1"), base_env=dict(os.environ))
    admin = {"Authorization": f"Bearer {admin_token}"}
    start, end = datetime.now(UTC) + timedelta(hours=1), datetime.now(UTC) + timedelta(hours=3)
    worker.publish_node()
    with TestClient(create_app(cluster)) as client:
        # Refused: an end before the start, an end past
        backwards = client.post(
            "/api/v1/nodes/box-1/drain",
            params={"at": end.isoformat(), "until": start.isoformat()},
            headers=admin,
        )
        past = client.post(
            "/api/v1/nodes/box-1/drain", params={"until": "2020-01-01T00:00:00"}, headers=admin
        )
        # When an admin sets box-1 down from in an hour to in three
        answer = client.post(
            "/api/v1/nodes/box-1/drain",
            params={"at": start.isoformat(), "until": end.isoformat()},
            headers=admin,
        )
        task, _ = cluster.submit(who, {"command": "true", "estimated_minutes": 120, "workdir": str(tmp_path)})
        worker.publish_node()  # a heartbeat: the requests above may outlast the test's 5-s lease under load
        Dispatcher(cluster).run_pass()
        before = client.get(f"/api/v1/tasks/{task.id}/explain", headers={"Authorization": f"Bearer {token}"})
        # and when the maintenance has begun (its start moved to now here)
        cluster.nodes.set_drained("box-1", True, now_ms() - 1, until_ms=round(end.timestamp() * 1000))
        worker.publish_node()  # a heartbeat: the node is alive for these passes
        inside = Dispatcher(cluster).run_pass()
        explained = client.get(
            f"/api/v1/tasks/{task.id}/explain", headers={"Authorization": f"Bearer {token}"}
        )
        listed = client.get("/api/v1/nodes", headers=admin).json()

    assert backwards.status_code == 422 and "`until` must come after `at`" in backwards.json()["detail"]
    assert past.status_code == 422 and "has passed" in past.json()["detail"]
    assert answer.status_code == 200, answer.text
    assert abs(datetime.fromisoformat(answer.json()["drain_until"]) - end) < timedelta(seconds=1)
    assert before.json()["reason"].startswith("node box-1 goes down for maintenance at ")
    assert " until " in before.json()["reason"]
    # Then inside it the node is drained, the task waits saying until when, and is expected to start then
    assert inside.starts == () and listed[0]["drained"] is True and listed[0]["drain_until"] is not None
    assert explained.json()["reason"].startswith("node box-1 is down for maintenance until ")
    expected = datetime.fromisoformat(explained.json()["estimated_start"])
    assert abs(expected - end) < timedelta(seconds=5)
    # When its end has come (moved to now here), the node is back in service with no undrain
    cluster.nodes.set_drained("box-1", True, now_ms() - 2_000, until_ms=now_ms() - 1)
    worker.publish_node()
    assert [start.task_id for start in Dispatcher(cluster).run_pass().starts] == [task.id]
    assert cluster.nodes.all()[0].drained_at(now_ms()) is False


def test_drain_until_from_the_command_line_drains_now_and_says_when_the_node_comes_back(
    cluster, make_identity, monkeypatch, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    worker = Worker(cluster, "box-1", SimulatedGpus("1x24", node="box-1"), base_env=dict(os.environ))
    worker.publish_node()

    with cli_as(cluster, admin_token, monkeypatch, tmp_path / "home") as nightshift:
        drained = nightshift("node", "drain", "box-1", "--until", "+2h")
        worker.publish_node()  # a heartbeat: no worker loop runs here, and the test lease is 5 s
        shown = nightshift("nodes")

    assert drained.exit_code == 0, drained.output
    assert "node box-1 drained until " in drained.output and "back in service by itself" in drained.output
    assert "drained (maintenance until " in " ".join(shown.output.split())
    node = cluster.nodes.all()[0]
    assert node.drained_at(now_ms()) and not node.drained_at(now_ms() + 2 * 3600 * 1000 + 5_000)


def test_a_node_reserved_for_a_team_starts_only_its_tasks_until_called_off(cluster, make_identity, tmp_path):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    alice, alice_token = make_identity("alice", "vision")
    bob, bob_token = make_identity("bob", "nlp")
    worker = Worker(cluster, "box-1", SimulatedGpus("3x24", node="box-1"), base_env=dict(os.environ))
    admin = {"Authorization": f"Bearer {admin_token}"}
    end = datetime.now(UTC) + timedelta(hours=8)
    worker.publish_node()
    running, _ = cluster.submit(
        bob, {"command": "sleep 60", "estimated_minutes": 600, "workdir": str(tmp_path)}
    )
    try:
        Dispatcher(cluster).run_pass()
        worker.step()  # bob's 10-hour task is already running there (its start completes beside the step)
        wait_until(lambda: cluster.tasks.get_any(running.id).status == "running")
        with TestClient(create_app(cluster)) as client:
            reserve = "/api/v1/nodes/box-1/reserve"
            # Refused: a team nobody has, an end before now, no end, not an admin
            unknown = client.post(reserve, params={"team": "nobody", "until": end.isoformat()}, headers=admin)
            past = client.post(reserve, params={"team": "vision", "until": "2020-01-01T00:00"}, headers=admin)
            endless = client.post(reserve, params={"team": "vision"}, headers=admin)
            not_admin = client.post(
                reserve,
                params={"team": "vision", "until": end.isoformat()},
                headers={"Authorization": f"Bearer {alice_token}"},
            )
            # When an admin keeps box-1 for vision from now for eight hours, and for nlp after that
            answer = client.post(reserve, params={"team": "vision", "until": end.isoformat()}, headers=admin)
            later = {"team": "nlp", "at": end.isoformat(), "until": (end + timedelta(hours=8)).isoformat()}
            overlapping = {"team": "nlp", "until": (end + timedelta(hours=1)).isoformat()}
            after_it = client.post(reserve, params=later, headers=admin)
            overlaps = client.post(reserve, params=overlapping, headers=admin)
            theirs, _ = cluster.submit(
                bob, {"command": "true", "estimated_minutes": 5, "workdir": str(tmp_path)}
            )
            own, _ = cluster.submit(  # 5 hours: it ends before nlp's time
                alice, {"command": "true", "estimated_minutes": 300, "workdir": str(tmp_path)}
            )
            worker.publish_node()  # a heartbeat: the node is alive for these passes
            during = Dispatcher(cluster).run_pass()
            explained = client.get(
                f"/api/v1/tasks/{theirs.id}/explain", headers={"Authorization": f"Bearer {bob_token}"}
            )
            listed = client.get("/api/v1/nodes", headers={"Authorization": f"Bearer {bob_token}"}).json()
            called_off = client.post(
                "/api/v1/nodes/box-1/unreserve", params={"team": "vision"}, headers=admin
            )
            worker.publish_node()
            after = Dispatcher(cluster).run_pass()
    finally:
        cluster.cancel(bob, running.id)
        worker.shutdown()

    assert unknown.status_code == 422 and "no team named 'nobody'" in unknown.json()["detail"]
    assert past.status_code == 422 and "has passed" in past.json()["detail"]
    assert endless.status_code == 422 and not_admin.status_code == 403
    assert answer.status_code == 200, answer.text
    assert [held["team"] for held in answer.json()["reservations"]] == ["vision"]
    assert answer.json()["running_past"] == [running.id]
    assert after_it.status_code == 200, after_it.text
    assert overlaps.status_code == 409
    assert "node box-1 is already reserved for team vision from " in overlaps.json()["detail"]
    # Then only vision's task starts there; bob's waits, saying why and until when
    assert [start.task_id for start in during.starts] == [own.id]
    assert explained.json()["reason"].startswith("node box-1 is reserved for team vision until ")
    assert [held["team"] for held in listed[0]["reservations"]] == ["vision", "nlp"]
    assert abs(datetime.fromisoformat(listed[0]["reservations"][0]["end"]) - end) < timedelta(seconds=1)
    # and once it is called off, bob's task starts there
    assert called_off.status_code == 200
    assert [held["team"] for held in called_off.json()["reservations"]] == ["nlp"]  # nlp's later one stays
    assert [start.task_id for start in after.starts] == [theirs.id]


def test_node_reserve_from_the_command_line_says_for_whom_and_when_and_nodes_shows_it(
    cluster, make_identity, monkeypatch, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    make_identity("alice", "vision")
    Worker(cluster, "box-1", SimulatedGpus("1x24", node="box-1"), base_env=dict(os.environ)).publish_node()

    with cli_as(cluster, admin_token, monkeypatch, tmp_path / "home") as nightshift:
        reserved = nightshift("node", "reserve", "box-1", "--team", "vision", "--at", "+1h", "--until", "+9h")
        shown = nightshift("nodes")
        unreserved = nightshift("node", "unreserve", "box-1")

    assert reserved.exit_code == 0, reserved.output
    assert "node box-1 is reserved for team vision from " in " ".join(reserved.output.split())
    assert "reserved for vision " in " ".join(shown.output.split())
    assert unreserved.exit_code == 0
    assert "node box-1: all its reservations called off; it is everyone's again" in unreserved.output
    assert cluster.nodes.all()[0].reservations == ()


def test_two_admins_reserving_overlapping_times_at_once_cannot_both_succeed(cluster, monkeypatch):
    Worker(cluster, "box-1", SimulatedGpus("1x24", node="box-1"), base_env=dict(os.environ)).publish_node()
    hour_ms, now = 3600 * 1000, now_ms()
    theirs = TeamReservation("nlp", now + hour_ms, now + 3 * hour_ms)
    ours = TeamReservation("vision", now + 2 * hour_ms, now + 4 * hour_ms)
    read = nodes_module._reservations
    raced: list[TeamReservation | None] = []

    def read_then_the_other_admin_writes(raw):  # nlp's is written after ours read the node's reservations
        kept = read(raw)
        if not raced:
            raced.append(None)
            raced[0] = cluster.nodes.reserve("box-1", theirs, now)
        return kept

    monkeypatch.setattr(nodes_module, "_reservations", read_then_the_other_admin_writes)

    with pytest.raises(ConflictError, match="already reserved for team nlp"):
        cluster.nodes.reserve("box-1", ours, now)
    assert raced == [theirs] and cluster.nodes.all()[0].reservations == (theirs,)


def test_a_worker_stopped_cleanly_leaves_its_node_down_at_once_until_a_worker_runs_there_again(
    cluster, make_identity, monkeypatch, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    who, token = make_identity("alice", "vision")
    worker = Worker(cluster, "box-2", SimulatedGpus("2x24", node="box-2"), base_env=dict(os.environ))
    stop = threading.Event()
    serving = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    serving.start()
    wait_until(lambda: any(node.alive(now_ms()) for node in cluster.nodes.all()))

    stop.set()
    serving.join(timeout=30)
    pinned, _ = cluster.submit(who, {"command": "true", "node": "box-2", "workdir": str(tmp_path)})
    with TestClient(create_app(cluster)) as client:
        why = client.get(f"/api/v1/tasks/{pinned.id}/explain", headers={"Authorization": f"Bearer {token}"})
    with cli_as(cluster, admin_token, monkeypatch, tmp_path / "home") as nightshift:
        shown = " ".join(nightshift("nodes").output.split())
    [node] = cluster.nodes.all()

    # a lease TTL (here 5 s) has not passed, yet the node is down: nothing waits for it as if it were up
    assert not serving.is_alive() and node.stopped_ms is not None and not node.alive(now_ms())
    assert re.fullmatch(
        r"waiting for GPUs out of service \(2 of 2: node box-2 is down \(its worker was stopped \d+ s ago\); "
        r"`nightshift nodes` shows which\)",
        why.json()["reason"],
    )
    assert "box-2 │ stopped (its worker, at " in shown
    # and a worker serving it again brings it back
    Worker(cluster, "box-2", SimulatedGpus("2x24", node="box-2"), base_env=dict(os.environ)).publish_node()
    assert cluster.nodes.all()[0].alive(now_ms()) and cluster.nodes.all()[0].stopped_ms is None
