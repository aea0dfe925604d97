"""A node reserved for a team at the same time every day or week: the policy keeps other teams off it each
time, the API and the command line show it once with how it repeats, and the reports count each time."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from functools import partial

from fastapi.testclient import TestClient
from sqlalchemy import select

from api.main import create_app
from scheduler.clock import now_ms
from scheduler.dispatcher import Dispatcher
from scheduler.gpus import SimulatedGpus
from scheduler.nodes import TeamReservation
from scheduler.policy.config import PolicyConfig
from scheduler.reports import utilization_report
from scheduler.store.tables import NodeReservation
from scheduler.worker import Worker
from tests.cli.conftest import cli_as
from tests.conftest import wait_until

H = 3600.0
DAY_MS = 86_400_000


def test_a_daily_reservation_made_yesterday_keeps_other_teams_off_the_node_today(
    cluster, make_identity, tmp_path
):
    alice, _ = make_identity("alice", "vision")
    bob, bob_token = make_identity("bob", "nlp")
    worker = Worker(cluster, "box-1", SimulatedGpus("2x24", node="box-1"), base_env=dict(os.environ))
    worker.publish_node()
    now = now_ms()
    # yesterday from an hour before this time to an hour after, every day: today's time holds the node now
    daily = TeamReservation("vision", now - DAY_MS - 3_600_000, now - DAY_MS + 3_600_000, "daily", "UTC")
    assert cluster.nodes.reserve("box-1", daily, now)
    theirs, _ = cluster.submit(bob, {"command": "true", "estimated_minutes": 5, "workdir": str(tmp_path)})
    own, _ = cluster.submit(alice, {"command": "true", "estimated_minutes": 5, "workdir": str(tmp_path)})
    try:
        worker.publish_node()
        started = Dispatcher(cluster).run_pass()
        with TestClient(create_app(cluster)) as client:
            headers = {"Authorization": f"Bearer {bob_token}"}
            why = client.get(f"/api/v1/tasks/{theirs.id}/explain", headers=headers).json()
            listed = client.get("/api/v1/nodes", headers=headers).json()
    finally:
        worker.shutdown()

    assert [start.task_id for start in started.starts] == [own.id]
    assert why["reason"].startswith("node box-1 is reserved for team vision until ")
    [shown] = listed[0]["reservations"]
    assert shown["repeat"] == "daily"
    # today's time, not the first one
    assert abs(datetime.fromisoformat(shown["start"]).timestamp() * 1000 - (now - 3_600_000)) < 1000
    # bob's task is expected once today's time is over, before tomorrow's
    expected = datetime.fromisoformat(why["estimated_start"]).timestamp() * 1000
    assert now + 3_600_000 - 1000 <= expected < now + DAY_MS - 3_600_000


def test_an_admin_reserves_a_node_every_week_and_overlaps_with_any_of_its_times_are_refused(
    cluster, make_identity
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    make_identity("alice", "vision")
    make_identity("bob", "nlp")
    Worker(cluster, "box-1", SimulatedGpus("1x24", node="box-1"), base_env=dict(os.environ)).publish_node()
    start = datetime.now(UTC) + timedelta(hours=1)
    headers = {"Authorization": f"Bearer {admin_token}"}

    def reserve(team: str, at: datetime, hours: float, repeat: str | None = None):
        params = {"team": team, "at": at.isoformat(), "until": (at + timedelta(hours=hours)).isoformat()}
        return client.post("/api/v1/nodes/box-1/reserve", params=params | ({"repeat": repeat} if repeat else {}),
                           headers=headers)  # fmt: skip

    with TestClient(create_app(cluster)) as client:
        weekly = reserve("vision", start, 3, "weekly")
        next_week = reserve("nlp", start + timedelta(days=7, hours=1), 1)  # inside its second time
        between = reserve("nlp", start + timedelta(days=3), 1)
        too_long = reserve("nlp", start + timedelta(days=1), 30, "daily")
        unknown = reserve("nlp", start + timedelta(days=1), 1, "monthly")
        called_off = client.post("/api/v1/nodes/box-1/unreserve", params={"team": "vision"}, headers=headers)
        after = reserve("nlp", start + timedelta(days=7, hours=1), 1)

    assert weekly.status_code == 200, weekly.text
    assert [(held["team"], held["repeat"]) for held in weekly.json()["reservations"]] == [
        ("vision", "weekly")
    ]
    assert next_week.status_code == 409
    assert "already reserved for team vision from " in next_week.json()["detail"]
    assert "(repeating weekly), which overlaps" in next_week.json()["detail"]
    assert between.status_code == 200, between.text  # on a day it does not hold the node
    assert too_long.status_code == 422 and "a daily reservation must last less than a day" in too_long.text
    assert unknown.status_code == 422 and "repeat" in unknown.text
    assert called_off.status_code == 200 and after.status_code == 200, after.text
    with cluster.factory() as session:  # recorded as it repeats, and called off (before its first time)
        [record] = session.scalars(select(NodeReservation).where(NodeReservation.team == "vision")).all()
    assert (record.repeat, record.zone, record.created_by) == ("weekly", "UTC", "root")
    assert record.cancelled_at is not None


def test_the_command_line_reserves_a_node_every_week_and_says_when_it_comes_round(
    cluster, make_identity, monkeypatch, tmp_path
):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    make_identity("alice", "vision")
    Worker(cluster, "box-1", SimulatedGpus("1x24", node="box-1"), base_env=dict(os.environ)).publish_node()
    monkeypatch.setenv("NIGHTSHIFT_TIMEZONE", "UTC")
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    at, until = start.strftime("%Y-%m-%d %H:%M"), (start + timedelta(hours=2)).strftime("%Y-%m-%d %H:%M")

    with cli_as(cluster, admin_token, monkeypatch, tmp_path / "home") as nightshift:
        reserved = nightshift("node", "reserve", "box-1", "--team", "vision", "--at", at, "--until", until,
                              "--repeat", "weekly")  # fmt: skip
        drained = nightshift("node", "drain", "box-1", "--at", "+24h", "--until", "+26h", "--repeat", "daily")
        shown = nightshift("nodes")
        refused = nightshift("node", "reserve", "box-1", "--team", "vision", "--at", "+2d", "--until", "+4d",
                             "--repeat", "daily")  # fmt: skip

    words = f"every {start:%A} {start:%H:%M}-{start + timedelta(hours=2):%H:%M}"
    assert reserved.exit_code == 0, reserved.output
    assert f"node box-1 is reserved for team vision {words} (next from " in " ".join(reserved.output.split())
    assert f"reserved for vision {words}" in " ".join(shown.output.split())
    assert drained.exit_code == 0, drained.output
    assert "(repeating daily): until then only tasks" in " ".join(drained.output.split())
    assert ", repeating daily, reserved for vision" in " ".join(shown.output.split())
    assert refused.exit_code != 0 and "must last less than a day" in " ".join(refused.output.split())


def test_the_report_counts_each_time_a_repeating_reservation_held_the_node(cluster, make_identity, tmp_path):
    admin, _ = make_identity("root", "ops", admin=True)
    history = cluster.reservations
    monday = datetime(2026, 3, 2, 0, 0, tzinfo=UTC).timestamp()
    # box (2 GPUs) kept for vision 09:00-11:00 every working day from Monday; called off on Wednesday at 10:00
    history.add("box", "vision", monday + 9 * H, monday + 11 * H, admin.user, "weekdays", "UTC")
    history.call_off("box", None, monday + 2 * 24 * H + 10 * H)
    report = partial(
        utilization_report, cluster.factory, monday + 7 * 24 * H, 7, "team", PolicyConfig(), {}, 2
    )

    rows = report(node_gpus={"box": 2})["reservations"]

    assert [
        (row["start"][:16], row["end"][:16], row["reserved_gpu_hours"], row["called_off"]) for row in rows
    ] == [
        ("2026-03-02T09:00", "2026-03-02T11:00", 4.0, False),
        ("2026-03-03T09:00", "2026-03-03T11:00", 4.0, False),
        ("2026-03-04T09:00", "2026-03-04T10:00", 2.0, True),  # cut where it was called off
    ]
    assert {row["repeat"] for row in rows} == {"weekdays"}


def test_a_weekly_maintenance_is_set_shown_and_refused_without_an_end(cluster, make_identity):
    _admin, admin_token = make_identity("root", "ops", admin=True)
    Worker(cluster, "box-1", SimulatedGpus("1x24", node="box-1"), base_env=dict(os.environ)).publish_node()
    start = datetime.now(UTC) + timedelta(hours=1)
    drain = partial(TestClient(create_app(cluster)).post, "/api/v1/nodes/box-1/drain",
                    headers={"Authorization": f"Bearer {admin_token}"})  # fmt: skip

    endless = drain(params={"at": start.isoformat(), "repeat": "weekly"})
    now_endless = drain(params={"repeat": "weekly"})
    too_long = drain(params={"at": start.isoformat(), "until": (start + timedelta(days=8)).isoformat(),
                             "repeat": "weekly"})  # fmt: skip
    weekly = drain(params={"at": start.isoformat(), "until": (start + timedelta(hours=2)).isoformat(),
                           "repeat": "weekly"})  # fmt: skip

    for refused in (endless, now_endless):
        assert refused.status_code == 422 and "a repeating maintenance needs an end (`until`)" in refused.text
    assert too_long.status_code == 422 and "must last less than a week" in too_long.text
    assert weekly.status_code == 200, weekly.text
    assert weekly.json()["drain_repeat"] == "weekly" and not weekly.json()["drained"]
    node = cluster.nodes.all()[0]
    in_a_week = round((start + timedelta(days=7, minutes=1)).timestamp() * 1000)
    assert node.drained_at(in_a_week) and not node.drained_at(in_a_week + 3 * 3600 * 1000)
    assert not cluster.nodes.all()[0].drained_at(now_ms()) and cluster.nodes.set_drained("box-1", False)
    assert cluster.nodes.all()[0].drain_repeat is None  # undrained: it repeats no more


def test_a_repeating_maintenance_with_requeue_requeues_what_runs_there_each_time_once(
    cluster, make_identity, start_worker, tmp_path
):
    admin, _ = make_identity("root", "ops", admin=True)
    who, _ = make_identity("alice", "vision")
    start_worker(node="box-1")
    task, _ = cluster.submit(who, {"command": "sleep 60", "estimated_minutes": 5, "workdir": str(tmp_path)})
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "running")
    now = now_ms()
    # every day from a second ago to an hour on (set as of yesterday): today's time has just begun
    by = json.dumps(
        {"user_id": admin.user_id, "user": admin.user, "team_id": admin.team_id, "team": admin.team}
    )
    cluster.nodes.set_drained("box-1", True, now - DAY_MS - 1000, by, now - DAY_MS + 3_600_000, "daily")

    Dispatcher(cluster).run_pass()
    wait_until(lambda: cluster.tasks.get_any(task.id).status == "queued")
    Dispatcher(cluster).run_pass()  # again in the same time: nothing more to do

    today = now - 1000
    assert cluster.tasks.attempts(task.id)[0].reason == "requeued"
    assert cluster.nodes.all()[0].drain_requeued_ms == today
    assert cluster.nodes.take_due_requeue("box-1", today) is None  # done this time
    assert cluster.nodes.take_due_requeue("box-1", today + DAY_MS) == by  # and due again tomorrow, once
    assert cluster.nodes.take_due_requeue("box-1", today + DAY_MS) is None
    cluster.cancel(who, task.id)
